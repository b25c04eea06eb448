"""Trust Region Policy Optimization (Schulman et al. 2015) for language models.

Policy step: maximise the surrogate L(theta) = mean(A * pi_theta(a|s) / pi_old(a|s)) subject to
mean KL(pi_old || pi_theta) <= delta. The natural gradient x = F^-1 g is found by conjugate
gradient on Fisher-vector products (Hessian-vector products of the KL); the step
x * sqrt(2 delta / x'Fx) is shrunk by backtracking until the KL limit holds and L improves.
The critic is trained separately, by regression of V on the returns.

Every forward pass runs over micro-batches of at most ``micro_batch_size`` rows: gradients,
Fisher-vector products, surrogates and KLs are their sums weighted by the micro-batches' shares
of the response tokens, so the step is the whole-batch one. With several processes each of these
is averaged over the processes before it is used, so every process takes the same step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.nn.utils import parameters_to_vector

from grue_bench.rl.advantages import masked_mean
from grue_bench.rl.algorithm import OnPolicyAlgorithm, adamw
from grue_bench.rl.batch import Rollout
from grue_bench.rl.hparams import TRPOArgs
from grue_bench.rl.policy import response_logits_and_hidden

MicroBatches = list[tuple[Rollout, float]]
"""A batch as ``OnPolicyAlgorithm.micro_batches`` cuts it: slices and their token shares."""


def surrogate(batch: Rollout, logp_all: torch.Tensor) -> torch.Tensor:
    """L = mean(A * pi(a|s) / pi_old(a|s)) over the response tokens, from log pi(.|s) [B, T, V]."""
    logp = logp_all.gather(-1, batch.response_ids.unsqueeze(-1)).squeeze(-1)
    return masked_mean(batch.advantages * torch.exp(logp - batch.logprobs), batch.loss_mask)


def kl_divergence(old_logp_all: torch.Tensor, logp_all: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """mean KL(pi_old(.|s) || pi(.|s)) over the response tokens."""
    return masked_mean((old_logp_all.exp() * (old_logp_all - logp_all)).sum(-1), mask)


def copy_into(params: list[torch.Tensor], vector: torch.Tensor) -> None:
    """Write ``vector`` into ``params``, each in its own storage (``vector_to_parameters`` would
    make them views of the vector: other memory, and matrix products that round differently from
    those of a run resumed with the same values, which would not then repeat it bit for bit)."""
    with torch.no_grad():
        for param, values in zip(params, vector.split([p.numel() for p in params]), strict=True):
            param.copy_(values.view_as(param))


def flat_grad(output: torch.Tensor, params: list[torch.Tensor], **kwargs) -> torch.Tensor:
    """d output / d params as one vector."""
    return parameters_to_vector(torch.autograd.grad(output, params, **kwargs))


def conjugate_gradient(
    fvp: Callable[[torch.Tensor], torch.Tensor], b: torch.Tensor, steps: int
) -> torch.Tensor:
    """Approximately solve F x = b."""
    x = torch.zeros_like(b)
    r = b.clone()
    p = b.clone()
    rr = r @ r
    for _ in range(steps):
        fp = fvp(p)
        alpha = rr / (p @ fp + 1e-10)
        x += alpha * p
        r -= alpha * fp
        new_rr = r @ r
        if new_rr < 1e-10:
            break
        p = r + (new_rr / rr) * p
        rr = new_rr
    return x


@dataclass(frozen=True)
class PolicyGradient:
    """The surrogate at theta_old: its gradient g and value (means over processes), each
    micro-batch's log pi_old(.|s) (the line search measures its KL from them) and the entropy."""

    gradient: torch.Tensor
    surrogate: float
    old_logp_all: list[torch.Tensor]
    entropy: float


class TRPO(OnPolicyAlgorithm):
    Args = TRPOArgs
    args: TRPOArgs

    def make_optimizer(self, policy):
        # Only the critic is trained by gradient descent; the actor moves by the natural-gradient step.
        return adamw(policy.critic_parameters(), self.args.learning_rate)

    def _log_probs(self, batch: Rollout) -> torch.Tensor:
        """log pi(.|s_t) over the vocabulary at every response step [B, T, V]."""
        policy = self.unwrapped
        with self.precision.autocast():
            logits, _ = response_logits_and_hidden(policy.lm, batch, policy.model_type, want_hidden=False)
        logits = logits.float()
        if batch.action_mask is not None:
            logits = logits.masked_fill(~batch.action_mask, torch.finfo(logits.dtype).min)
        return torch.log_softmax(logits, dim=-1)

    def _mean_over_ranks(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor if self.accelerator.num_processes == 1 else self.accelerator.reduce(tensor, "mean")

    def update(self, rollout: Rollout) -> dict[str, float]:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        # Fisher-vector products differentiate twice; fused attention kernels cannot, the math one can.
        with sdpa_kernel(SDPBackend.MATH):
            return self._update(self.normalized(rollout))  # whitened over the whole rollout

    def _update(self, rollout: Rollout) -> dict[str, float]:
        args = self.args
        # the actor moves outside DDP (which never sees its forward passes), by plain assignments
        params = [p for p in self.unwrapped.policy_parameters() if p.requires_grad]
        parts = self.micro_batches(rollout)
        pg = self._policy_gradient(parts, params)
        sub = rollout.select(torch.arange(0, len(rollout), args.sub_sampling_factor))
        fvp = self._fisher_vector_product(self.micro_batches(sub), params)

        direction = conjugate_gradient(fvp, pg.gradient, args.cg_max_steps)
        shs = 0.5 * direction @ fvp(direction)
        full_step = direction * torch.sqrt(args.target_kl / shs.clamp(min=1e-10))
        step_kl = self._line_search(parts, pg, params, full_step)

        return {
            "train/policy_loss": -pg.surrogate,
            "train/value_loss": self._train_critic(rollout),
            "train/entropy": pg.entropy,
            "train/approx_kl": step_kl or 0.0,
            "train/clipfrac": 0.0,
            "train/line_search_accepted": float(step_kl is not None),
        }

    def _policy_gradient(self, parts: MicroBatches, params: list[torch.Tensor]) -> PolicyGradient:
        """g = dL/dtheta at theta_old, one micro-batch's forward and backward pass at a time."""
        gradient = torch.zeros_like(parameters_to_vector(params))
        value = entropy = 0.0
        old_logp_all = []
        for part, weight in parts:
            logp_all = self._log_probs(part)
            part_surrogate = surrogate(part, logp_all)
            gradient += flat_grad(weight * part_surrogate, params)
            old = logp_all.detach()
            old_logp_all.append(old)
            value += weight * float(part_surrogate.detach())
            entropy += weight * float(masked_mean(-(old.exp() * old).sum(-1), part.loss_mask))
        gradient, value = self._mean_over_ranks(gradient), self.mean_across_ranks(value)
        return PolicyGradient(gradient, value, old_logp_all, entropy)

    def _kl_gradient(self, part: Rollout, weight: float, params: list[torch.Tensor]) -> torch.Tensor:
        """weight * dKL(pi_old || pi_theta)/dtheta at theta_old on ``part``, differentiable again:
        it is zero, but its derivative along v is the Fisher-vector product F v."""
        logp_all = self._log_probs(part)
        kl = kl_divergence(logp_all.detach(), logp_all, part.loss_mask)
        return flat_grad(weight * kl, params, create_graph=True)

    def _fisher_vector_product(
        self, parts: MicroBatches, params: list[torch.Tensor]
    ) -> Callable[[torch.Tensor], torch.Tensor]:
        """v -> F v + damping * v, F v summed over micro-batches and averaged over processes.

        Each product builds each micro-batch's twice-differentiable KL gradient anew, as keeping
        them all would hold the whole batch's activations; a batch of one micro-batch keeps its
        one graph for all the conjugate-gradient steps instead."""
        kept = [self._kl_gradient(*parts[0], params)] if len(parts) == 1 else None

        def fvp(vector: torch.Tensor) -> torch.Tensor:
            kl_grads = kept or (self._kl_gradient(part, weight, params) for part, weight in parts)
            hvp = sum(flat_grad(kl_grad @ vector, params, retain_graph=bool(kept)) for kl_grad in kl_grads)
            return self._mean_over_ranks(hvp) + self.args.cg_damping * vector

        return fvp

    def _surrogate_and_kl(self, parts: MicroBatches, old_logp_all: list[torch.Tensor]) -> tuple[float, float]:
        """L and mean KL(pi_old || pi_theta) at the current parameters, averaged over processes."""
        totals = torch.zeros(2, device=self.device)
        for (part, weight), old in zip(parts, old_logp_all, strict=True):
            logp_all = self._log_probs(part)
            totals += weight * torch.stack(
                [surrogate(part, logp_all), kl_divergence(old, logp_all, part.loss_mask)]
            )
        value, kl = self._mean_over_ranks(totals).tolist()
        return value, kl

    @torch.no_grad()
    def _line_search(
        self, parts: MicroBatches, pg: PolicyGradient, params: list[torch.Tensor], full_step: torch.Tensor
    ) -> float | None:
        """Backtrack from theta_old + full_step until the KL limit holds and L improves; returns
        the accepted step's KL, or None after restoring theta_old when no try is accepted."""
        args = self.args
        old_params = parameters_to_vector(params)
        for attempt in range(args.line_search_max_iter):
            copy_into(params, old_params + args.line_search_shrinking_factor**attempt * full_step)
            value, kl = self._surrogate_and_kl(parts, pg.old_logp_all)
            if kl <= args.target_kl and value > pg.surrogate:
                return kl
        copy_into(params, old_params)
        return None

    def _train_critic(self, rollout: Rollout) -> float:
        """``n_critic_updates`` passes of value-regression steps over shuffled minibatches; returns
        the mean loss."""
        losses = [
            self._critic_step(minibatch)
            for _ in range(self.args.n_critic_updates)
            for minibatch in self.minibatches(rollout)
        ]
        return sum(losses) / len(losses)

    def _critic_step(self, batch: Rollout) -> float:
        """One optimizer step on mean((V - R)^2) (plain MSE, as sb3-contrib's TRPO), the value
        head's gradient accumulated over micro-batches and averaged over processes here rather
        than by DDP, whose reducer would wait for gradients of the actor too. Returns the loss."""
        self.optimizer.zero_grad()
        loss = 0.0
        for part, weight in self.micro_batches(batch):
            with self.precision.autocast():
                out = self.unwrapped(part, action_mask=part.action_mask, detach_value_trunk=True)
            part_loss = masked_mean((out.values - part.returns) ** 2, part.loss_mask)
            self.accelerator.backward(weight * part_loss)
            loss += weight * float(part_loss.detach())
        self._average_gradients_over_ranks()
        self.optimizer.step()
        return loss

    def _average_gradients_over_ranks(self) -> None:
        """The critic's gradients, replaced by their means over processes (one all-reduce)."""
        if self.accelerator.num_processes == 1:
            return
        grads = [p.grad for p in self.unwrapped.critic_parameters() if p.grad is not None]
        mean = self._mean_over_ranks(torch.cat([grad.flatten() for grad in grads]))
        for grad, averaged in zip(grads, mean.split([grad.numel() for grad in grads]), strict=True):
            grad.copy_(averaged.view_as(grad))
