"""Trust Region Policy Optimization (Schulman et al. 2015) for language models.

Policy step: maximise the surrogate L(theta) = mean(A * pi_theta(a|s) / pi_old(a|s)) subject to
mean KL(pi_old || pi_theta) <= delta. The natural gradient x = F^-1 g is found by conjugate
gradient on Fisher-vector products (Hessian-vector products of the KL); the step
x * sqrt(2 delta / x'Fx) is shrunk by backtracking until the KL limit holds and L improves.
The critic is trained separately, by regression of V on the returns.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from grue_bench.rl.advantages import masked_mean
from grue_bench.rl.algorithm import OnPolicyAlgorithm, adamw
from grue_bench.rl.batch import Rollout
from grue_bench.rl.hparams import TRPOArgs
from grue_bench.rl.policy import response_logits_and_hidden


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


class TRPO(OnPolicyAlgorithm):
    Args = TRPOArgs
    args: TRPOArgs

    def make_optimizer(self, policy):
        # Only the critic is trained by gradient descent; the actor moves by the natural-gradient step.
        return adamw(policy.critic_parameters(), self.args.learning_rate)

    def _log_probs(self, rollout: Rollout) -> torch.Tensor:
        """log pi(.|s_t) over the vocabulary at every response step [B, T, V]."""
        policy = self.unwrapped
        logits, _ = response_logits_and_hidden(policy.lm, rollout, policy.model_type, want_hidden=False)
        logits = logits.float()
        if rollout.action_mask is not None:
            logits = logits.masked_fill(~rollout.action_mask, torch.finfo(logits.dtype).min)
        return torch.log_softmax(logits, dim=-1)

    def _surrogate_and_kl(
        self, rollout: Rollout, old_logp_all: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        mask = rollout.response_mask
        logp_all = self._log_probs(rollout)
        logp = logp_all.gather(-1, rollout.response_ids.unsqueeze(-1)).squeeze(-1)
        surrogate = masked_mean(rollout.advantages * torch.exp(logp - rollout.logprobs), mask)
        kl = masked_mean((old_logp_all.exp() * (old_logp_all - logp_all)).sum(-1), mask)
        return surrogate, kl

    def _mean_over_ranks(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor if self.accelerator.num_processes == 1 else self.accelerator.reduce(tensor, "mean")

    def update(self, rollout: Rollout) -> dict[str, float]:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        # Fisher-vector products differentiate twice; fused attention kernels cannot, the math one can.
        with sdpa_kernel(SDPBackend.MATH):
            return self._update(rollout)

    def _update(self, rollout: Rollout) -> dict[str, float]:
        args = self.args
        params = [p for p in self.unwrapped.policy_parameters() if p.requires_grad]
        sub = rollout.select(torch.arange(0, len(rollout), args.sub_sampling_factor))

        # Policy gradient of the surrogate, and the Fisher-vector product from the KL's Hessian.
        logp_all = self._log_probs(rollout)
        old_logp_all = logp_all.detach()
        mask = rollout.response_mask
        logp = logp_all.gather(-1, rollout.response_ids.unsqueeze(-1)).squeeze(-1)
        surrogate = masked_mean(rollout.advantages * torch.exp(logp - rollout.logprobs), mask)
        g = self._mean_over_ranks(parameters_to_vector(torch.autograd.grad(surrogate, params)))

        sub_logp_all = self._log_probs(sub)
        sub_old = sub_logp_all.detach()
        kl = masked_mean((sub_old.exp() * (sub_old - sub_logp_all)).sum(-1), sub.response_mask)
        kl_grad = parameters_to_vector(torch.autograd.grad(kl, params, create_graph=True))

        def fvp(vector: torch.Tensor) -> torch.Tensor:
            hvp = torch.autograd.grad(kl_grad @ vector, params, retain_graph=True)
            return self._mean_over_ranks(parameters_to_vector(hvp)) + args.cg_damping * vector

        direction = conjugate_gradient(fvp, g, args.cg_max_steps)
        shs = 0.5 * direction @ fvp(direction)
        full_step = direction * torch.sqrt(args.target_kl / shs.clamp(min=1e-10))

        old_params = parameters_to_vector(params).detach()
        old_surrogate = float(surrogate)
        step_kl, accepted = 0.0, False
        with torch.no_grad():
            for attempt in range(args.line_search_max_iter):
                vector_to_parameters(
                    old_params + args.line_search_shrinking_factor**attempt * full_step, params
                )
                new_surrogate, new_kl = self._surrogate_and_kl(rollout, old_logp_all)
                new_surrogate = float(self._mean_over_ranks(new_surrogate))
                step_kl = float(self._mean_over_ranks(new_kl))
                if step_kl <= args.target_kl and new_surrogate > old_surrogate:
                    accepted = True
                    break
            if not accepted:
                vector_to_parameters(old_params, params)
                step_kl = 0.0

        value_losses = []
        for _ in range(args.n_critic_updates):
            for index in self.minibatches(len(rollout)):
                mb = rollout.select(index)
                out = self.policy(mb, action_mask=mb.action_mask, detach_value_trunk=True)
                v_loss = 0.5 * masked_mean((out.values - mb.returns) ** 2, mb.response_mask)
                self.optimizer.zero_grad()
                self.accelerator.backward(v_loss)
                self.optimizer.step()
                value_losses.append(float(v_loss))
        with torch.no_grad():
            entropy = -(old_logp_all.exp() * old_logp_all).sum(-1)
        return {
            "train/policy_loss": -old_surrogate,
            "train/value_loss": sum(value_losses) / len(value_losses),
            "train/entropy": float(masked_mean(entropy, mask)),
            "train/approx_kl": step_kl,
            "train/clipfrac": 0.0,
            "train/line_search_accepted": float(accepted),
        }
