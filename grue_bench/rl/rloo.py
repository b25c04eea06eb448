"""REINFORCE Leave-One-Out (Kool et al. 2019; Ahmadian et al. 2024), critic-free.

The KL to the reference is part of each episode's reward, and the baseline of episode i is the
mean reward of the other G - 1 answers to its prompt:
    R_i = r_i - beta * sum_t (log pi - log pi_ref)_t
    A_i = R_i - mean_{j != i} R_j          (whitened over the rollout if normalize_advantage)
    loss = clipped surrogate (see ``group``) - ent_coef * entropy
With one pass over the rollout the surrogate's gradient is REINFORCE's, -A_i * grad log pi.
"""

from __future__ import annotations

from grue_bench.rl.batch import Rollout
from grue_bench.rl.episodes import Episodes
from grue_bench.rl.group import GroupSampled
from grue_bench.rl.hparams import RLOOArgs


class RLOO(GroupSampled):
    Args = RLOOArgs
    args: RLOOArgs

    def credit(self, episodes: Episodes) -> Rollout:
        returns = self.by_group(episodes.task_rewards - self.kl.value * episodes.kl.sum(1))
        others = (returns.sum(1, keepdim=True) - returns) / (self.args.group_size - 1)
        advantages = (returns - others).reshape(-1)
        if self.args.normalize_advantage:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        return episodes.to_rollout(advantages.unsqueeze(1) * episodes.tokens.response_mask)
