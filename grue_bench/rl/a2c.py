"""Advantage Actor-Critic (Mnih et al. 2016): one unclipped gradient step per rollout.

    pg_loss = -mean(A * log pi(a|s));  v_loss = mean((V - R)^2)   (vf_coef as in SB3: no 1/2)
    loss    = pg_loss + vf_coef * v_loss - ent_coef * entropy

The rollout's gradient is accumulated over micro-batches (``gradient_step``), so memory stays
bounded and the single step equals the full-batch one.
"""

from __future__ import annotations

import torch

from grue_bench.rl.advantages import masked_mean
from grue_bench.rl.algorithm import OnPolicyAlgorithm
from grue_bench.rl.batch import Rollout
from grue_bench.rl.hparams import A2CArgs


class A2C(OnPolicyAlgorithm):
    Args = A2CArgs
    args: A2CArgs

    def make_optimizer(self, policy):
        if self.args.use_rms_prop:
            return torch.optim.RMSprop(policy.parameters(), lr=self.args.learning_rate, alpha=0.99, eps=1e-5)
        return super().make_optimizer(policy)

    def loss(self, mb: Rollout) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        args = self.args
        out = self.policy(mb, action_mask=mb.action_mask, entropy_grad=args.ent_coef > 0)
        pg_loss = -masked_mean(mb.advantages * out.logprobs, mb.loss_mask)
        v_loss = masked_mean((out.values - mb.returns) ** 2, mb.loss_mask)
        entropy = masked_mean(out.entropy, mb.loss_mask)
        loss = pg_loss + args.vf_coef * v_loss - args.ent_coef * entropy
        return loss, {"train/policy_loss": pg_loss, "train/value_loss": v_loss, "train/entropy": entropy}

    def update(self, rollout: Rollout) -> dict[str, float]:
        return {
            **self.gradient_step(self.normalized(rollout)),
            "train/approx_kl": 0.0,  # one step from the rollout policy: no inner-loop drift to measure
            "train/clipfrac": 0.0,
        }
