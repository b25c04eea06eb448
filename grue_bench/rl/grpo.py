"""Group Relative Policy Optimization (Shao et al. 2024, DeepSeekMath), critic-free.

Advantage of episode i among the G answers to its prompt (the same for all its tokens):
    A_i = (r_i - mean(r_group)) / (std(r_group) + 1e-4)     (or without the division)
The KL to the reference is a loss term, not a reward, with the unbiased k3 estimator:
    kl_t = exp(log pi_ref - log pi) - (log pi_ref - log pi) - 1
    loss = clipped surrogate (see ``group``) + beta * mean_t(kl_t) - ent_coef * entropy
"""

from __future__ import annotations

import torch

from grue_bench.rl.advantages import masked_mean
from grue_bench.rl.batch import Rollout
from grue_bench.rl.episodes import Episodes
from grue_bench.rl.group import GroupSampled
from grue_bench.rl.hparams import GRPOArgs


class GRPO(GroupSampled):
    Args = GRPOArgs
    args: GRPOArgs

    def credit(self, episodes: Episodes) -> Rollout:
        groups = self.by_group(episodes.task_rewards)
        centred = groups - groups.mean(1, keepdim=True)
        if self.args.scale_rewards:
            centred = centred / (groups.std(1, keepdim=True) + 1e-4)
        mask = episodes.tokens.response_mask
        return episodes.to_rollout(centred.reshape(-1, 1) * mask)

    def penalty(self, logprobs: torch.Tensor, mb: Rollout) -> torch.Tensor:
        log_ratio_ref = mb.ref_logprobs - logprobs
        kl = log_ratio_ref.exp() - log_ratio_ref - 1
        return self.kl.value * masked_mean(kl, mb.loss_mask)
