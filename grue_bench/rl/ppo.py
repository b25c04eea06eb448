"""Proximal Policy Optimization (Schulman et al. 2017) for language models.

The loss, in plain sight (masked means over response tokens):
    ratio     = exp(log pi(a|s) - log pi_old(a|s))
    pg_loss   = mean(max(-A * ratio, -A * clip(ratio, 1 - eps, 1 + eps)))
    v_loss    = 0.5 * mean(max((V - R)^2, (V_old + clip(V - V_old, -eps_v, eps_v) - R)^2))
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
class PPOLoss:
    policy: torch.Tensor
    value: torch.Tensor
    approx_kl: torch.Tensor
    clipfrac: torch.Tensor


def ppo_loss(
    logprobs: torch.Tensor,
    values: torch.Tensor,
    batch: Rollout,
    clip_range: float,
    clip_range_vf: float | None,
) -> PPOLoss:
    """PPO's clipped policy loss and (optionally clipped) value loss on a minibatch."""
    mask = batch.response_mask
    log_ratio = (logprobs - batch.logprobs) * mask
    ratio = log_ratio.exp()
    pg_losses = -batch.advantages * ratio
    pg_clipped = -batch.advantages * ratio.clamp(1 - clip_range, 1 + clip_range)
    policy_loss = masked_mean(torch.max(pg_losses, pg_clipped), mask)

    v_losses = (values - batch.returns) ** 2
    if clip_range_vf is not None:
        v_clipped = batch.values + (values - batch.values).clamp(-clip_range_vf, clip_range_vf)
        v_losses = torch.max(v_losses, (v_clipped - batch.returns) ** 2)
    value_loss = 0.5 * masked_mean(v_losses, mask)

    with torch.no_grad():
        approx_kl = masked_mean((ratio - 1) - log_ratio, mask)
        clipfrac = masked_mean(((ratio - 1).abs() > clip_range).float(), mask)
    return PPOLoss(policy_loss, value_loss, approx_kl, clipfrac)


class PPO(OnPolicyAlgorithm):
    Args = PPOArgs
    args: PPOArgs

    def update(self, rollout: Rollout) -> dict[str, float]:
        args = self.args
        generator = torch.Generator().manual_seed(self.iteration)
        totals: dict[str, list[float]] = {k: [] for k in ("pg", "v", "ent", "kl", "clip")}
        for _ in range(args.n_epochs):
            epoch_start = len(totals["kl"])
            for index in self.minibatches(len(rollout), generator):
                mb = rollout.select(index)
                out = self.policy(mb, action_mask=mb.action_mask)
                losses = ppo_loss(out.logprobs, out.values, mb, args.clip_range, args.clip_range_vf)
                entropy = masked_mean(out.entropy, mb.response_mask)
                loss = losses.policy + args.vf_coef * losses.value - args.ent_coef * entropy
                self.optimizer.zero_grad()
                self.accelerator.backward(loss)
                self.accelerator.clip_grad_norm_(self.policy.parameters(), args.max_grad_norm)
                self.optimizer.step()
                stats = (losses.policy, losses.value, entropy, losses.approx_kl, losses.clipfrac)
                for key, value in zip(totals, stats, strict=True):
                    totals[key].append(float(value.detach()))
            epoch_kl = self.mean_across_ranks(_mean(totals["kl"][epoch_start:]))
            if args.target_kl is not None and epoch_kl > 1.5 * args.target_kl:
                break  # the policy moved too far from the rollout policy: stop this phase early
        return {
            "train/policy_loss": _mean(totals["pg"]),
            "train/value_loss": _mean(totals["v"]),
            "train/entropy": _mean(totals["ent"]),
            "train/approx_kl": _mean(totals["kl"]),
            "train/clipfrac": _mean(totals["clip"]),
        }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
