"""Proximal Policy Optimization (Schulman et al. 2017) for language models.

The loss, in plain sight (masked means over response tokens):
    ratio     = exp(log pi(a|s) - log pi_old(a|s))
    pg_loss   = mean(max(-A * ratio, -A * clip(ratio, 1 - eps, 1 + eps)))
    v_loss    = 0.5 * mean(max((V - R)^2, (V_old + clip(V - V_old, -eps_v, eps_v) - R)^2))
    loss      = pg_loss + vf_coef * v_loss - ent_coef * entropy
"""

from __future__ import annotations

import torch

from grue_bench.rl.advantages import masked_mean
from grue_bench.rl.algorithm import OnPolicyAlgorithm
from grue_bench.rl.batch import Rollout
from grue_bench.rl.hparams import PPOArgs


class PPO(OnPolicyAlgorithm):
    Args = PPOArgs
    args: PPOArgs

    def update(self, rollout: Rollout) -> dict[str, float]:
        args = self.args
        generator = torch.Generator().manual_seed(self.iteration)
        totals: dict[str, list[float]] = {k: [] for k in ("pg", "v", "ent", "kl", "clip")}
        for _ in range(args.n_epochs):
            for index in self.minibatches(len(rollout), generator):
                mb = rollout.select(index)
                mask = mb.response_mask
                out = self.policy(mb, action_mask=mb.action_mask)
                log_ratio = (out.logprobs - mb.logprobs) * mask
                ratio = log_ratio.exp()
                pg_losses = -mb.advantages * ratio
                pg_clipped = -mb.advantages * ratio.clamp(1 - args.clip_range, 1 + args.clip_range)
                pg_loss = masked_mean(torch.max(pg_losses, pg_clipped), mask)

                v_loss_raw = (out.values - mb.returns) ** 2
                if args.clip_range_vf is not None:
                    v_clipped = mb.values + (out.values - mb.values).clamp(
                        -args.clip_range_vf, args.clip_range_vf
                    )
                    v_loss_raw = torch.max(v_loss_raw, (v_clipped - mb.returns) ** 2)
                v_loss = 0.5 * masked_mean(v_loss_raw, mask)
                entropy = masked_mean(out.entropy, mask)

                loss = pg_loss + args.vf_coef * v_loss - args.ent_coef * entropy
                self.optimizer.zero_grad()
                self.accelerator.backward(loss)
                self.accelerator.clip_grad_norm_(self.policy.parameters(), args.max_grad_norm)
                self.optimizer.step()

                with torch.no_grad():
                    approx_kl = masked_mean((ratio - 1) - log_ratio, mask)
                    clipfrac = masked_mean(((ratio - 1).abs() > args.clip_range).float(), mask)
                for key, value in zip(totals, (pg_loss, v_loss, entropy, approx_kl, clipfrac), strict=True):
                    totals[key].append(float(value))
            epoch_kl = self.mean_across_ranks(sum(totals["kl"]) / len(totals["kl"]))
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
