"""Proximal Policy Optimization (Schulman et al. 2017) for language models.

The loss, in plain sight (masked means over response tokens):
    ratio     = exp(log pi(a|s) - log pi_old(a|s))
    pg_loss   = mean(max(-A * ratio, -A * clip(ratio, 1 - eps, 1 + eps)))
    v_loss    = mean(max((V - R)^2, (V_old + clip(V - V_old, -eps_v, eps_v) - R)^2))
    loss      = pg_loss + vf_coef * v_loss - ent_coef * entropy
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from grue_bench.rl.advantages import masked_mean
from grue_bench.rl.algorithm import OnPolicyAlgorithm
from grue_bench.rl.batch import Rollout
from grue_bench.rl.hparams import PPOArgs


@dataclass(frozen=True)
class ClippedPolicyLoss:
    loss: torch.Tensor
    approx_kl: torch.Tensor
    clipfrac: torch.Tensor


def clipped_policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_range: float,
) -> ClippedPolicyLoss:
    """mean(max(-A * ratio, -A * clip(ratio, 1 - eps, 1 + eps))) over response tokens, with the
    approximate KL to the rollout policy and the share of clipped ratios."""
    log_ratio = (logprobs - old_logprobs) * mask
    ratio = log_ratio.exp()
    pg_losses = -advantages * ratio
    pg_clipped = -advantages * ratio.clamp(1 - clip_range, 1 + clip_range)
    loss = masked_mean(torch.max(pg_losses, pg_clipped), mask)
    with torch.no_grad():
        approx_kl = masked_mean((ratio - 1) - log_ratio, mask)
        clipfrac = masked_mean(((ratio - 1).abs() > clip_range).float(), mask)
    return ClippedPolicyLoss(loss, approx_kl, clipfrac)


def clipped_value_loss(values: torch.Tensor, batch: Rollout, clip_range_vf: float | None) -> torch.Tensor:
    """mean(max((V - R)^2, (V_old + clip(V - V_old, -eps_v, eps_v) - R)^2)): the mean squared
    error with no factor 1/2, so that ``vf_coef`` weighs it as in stable-baselines3 and RL4LMs."""
    v_losses = (values - batch.returns) ** 2
    if clip_range_vf is not None:
        v_clipped = batch.values + (values - batch.values).clamp(-clip_range_vf, clip_range_vf)
        v_losses = torch.max(v_losses, (v_clipped - batch.returns) ** 2)
    return masked_mean(v_losses, batch.loss_mask)


class PPO(OnPolicyAlgorithm):
    """PPO's loss on top of the shared epochs x minibatches loop; GRPO and RLOO reuse the loop
    with their own ``loss``."""

    Args = PPOArgs
    args: PPOArgs

    def loss(self, mb: Rollout) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The minibatch loss and its parts, keyed as in ``STAT_KEYS``."""
        args = self.args
        out = self.policy(mb, action_mask=mb.action_mask, entropy_grad=args.ent_coef > 0)
        pg = clipped_policy_loss(out.logprobs, mb.logprobs, mb.advantages, mb.loss_mask, args.clip_range)
        value_loss = clipped_value_loss(out.values, mb, args.clip_range_vf)
        entropy = masked_mean(out.entropy, mb.loss_mask)
        loss = pg.loss + args.vf_coef * value_loss - args.ent_coef * entropy
        return loss, {
            "train/policy_loss": pg.loss,
            "train/value_loss": value_loss,
            "train/entropy": entropy,
            "train/approx_kl": pg.approx_kl,
            "train/clipfrac": pg.clipfrac,
        }

    def update(self, rollout: Rollout) -> dict[str, float]:
        """``n_epochs`` passes of minibatch steps. As in stable-baselines3 (and RL4LMs), the phase
        stops at the first minibatch whose approximate KL to the rollout policy exceeds
        1.5 x ``target_kl``, before its step is taken."""
        totals: dict[str, list[float]] = {}
        for _ in range(self.args.n_epochs):
            for minibatch in self.minibatches(rollout):
                sums = self.accumulate_gradient(self.normalized(minibatch))
                for key, value in sums.items():
                    totals.setdefault(key, []).append(value)
                if self.too_far(sums["train/approx_kl"]):
                    return {key: _mean(values) for key, values in totals.items()}
                self.apply_gradient()
        return {key: _mean(values) for key, values in totals.items()}

    def too_far(self, approx_kl: float) -> bool:
        """Whether the policy has moved past 1.5 x ``target_kl`` from the rollout policy (the
        mean over processes, so that every process stops at the same minibatch)."""
        target = self.args.target_kl
        return target is not None and self.mean_across_ranks(approx_kl) > 1.5 * target


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
