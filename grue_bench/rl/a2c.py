"""Advantage Actor-Critic (Mnih et al. 2016): one unclipped gradient step per rollout.

    pg_loss = -mean(A * log pi(a|s));  v_loss = 0.5 * mean((V - R)^2)
    loss    = pg_loss + vf_coef * v_loss - ent_coef * entropy

The rollout's gradient is accumulated over minibatches (each weighted by its share of the
tokens), so memory stays bounded and the single step equals the full-batch one.
"""

from __future__ import annotations

import torch

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

    def update(self, rollout: Rollout) -> dict[str, float]:
        args = self.args
        tokens = rollout.response_mask.sum()
        sums = {"pg": 0.0, "v": 0.0, "ent": 0.0}
        self.optimizer.zero_grad()
        for index in self.minibatches(len(rollout), torch.Generator().manual_seed(self.iteration)):
            mb = rollout.select(index)
            mask = mb.response_mask
            out = self.policy(mb, action_mask=mb.action_mask, entropy_grad=args.ent_coef > 0)
            pg_loss = -(mb.advantages * out.logprobs * mask).sum() / tokens
            v_loss = 0.5 * (((out.values - mb.returns) ** 2) * mask).sum() / tokens
            entropy = (out.entropy * mask).sum() / tokens
            loss = pg_loss + args.vf_coef * v_loss - args.ent_coef * entropy
            self.accelerator.backward(loss)
            for key, value in zip(sums, (pg_loss, v_loss, entropy), strict=True):
                sums[key] += float(value.detach())
        self.accelerator.clip_grad_norm_(self.policy.parameters(), args.max_grad_norm)
        self.optimizer.step()
        return {
            "train/policy_loss": sums["pg"],
            "train/value_loss": sums["v"],
            "train/entropy": sums["ent"],
            "train/approx_kl": 0.0,  # one step from the rollout policy: no inner-loop drift to measure
            "train/clipfrac": 0.0,
        }
