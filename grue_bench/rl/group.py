"""What the critic-free, group-sampled algorithms (GRPO, RLOO) share.

Each prompt of an iteration is answered ``group_size`` times; the other answers to the same
prompt are the baseline, so no value model is trained or run. Every token of an episode gets
the episode's advantage, and the update is PPO's clipped surrogate (one pass by default):

    loss = mean_t(max(-A * ratio_t, -A * clip(ratio_t, 1 - eps, 1 + eps))) + penalty - ent_coef * entropy

where ``penalty`` is the algorithm's own (GRPO: the KL to the reference; RLOO: none, its KL
is in the reward).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from grue_bench.data import Sample
from grue_bench.rl.advantages import masked_mean
from grue_bench.rl.batch import Rollout
from grue_bench.rl.episodes import Episodes
from grue_bench.rl.hparams import GroupArgs
from grue_bench.rl.ppo import PPO, clipped_policy_loss


class GroupSampled(PPO):
    uses_critic = False
    args: GroupArgs

    def draw(self, pool: Sequence[Sample], rng: random.Random) -> list[Sample]:
        """``n_steps / group_size`` prompts, each repeated ``group_size`` times in a row."""
        group = self.args.group_size
        prompts = [pool[rng.randrange(len(pool))] for _ in range(self.args.n_steps // group)]
        return [sample for sample in prompts for _ in range(group)]

    def collect(self, pool: Sequence[Sample], rng: random.Random) -> Episodes:
        """``n_steps`` episodes (``draw``): the rollout is counted in episodes, as in TRL."""
        return self.collector.collect(self.draw(pool, rng), with_values=False)

    def rollout_episodes(self, episodes: Episodes) -> Episodes:
        return episodes  # whole groups, never cut

    def normalized(self, batch: Rollout) -> Rollout:
        return batch  # the credit is already scaled within groups (GRPO) or over the rollout (RLOO)

    def minibatches(self, rollout: Rollout) -> list[Rollout]:
        """Shuffled minibatches of ``batch_size`` whole episodes."""
        order = torch.randperm(len(rollout), generator=self.shuffle_rng)
        size = self.args.batch_size
        return [rollout.select(order[i : i + size]) for i in range(0, len(rollout), size)]

    def by_group(self, per_episode: torch.Tensor) -> torch.Tensor:
        """[N] -> [N / group_size, group_size]: one row per prompt (episodes come grouped)."""
        return per_episode.view(-1, self.args.group_size)

    def penalty(self, logprobs: torch.Tensor, mb: Rollout) -> torch.Tensor:
        """An extra loss term of the algorithm (none by default)."""
        return logprobs.new_zeros(())

    def loss(self, mb: Rollout) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        args = self.args
        out = self.policy(mb, action_mask=mb.action_mask, with_values=False, entropy_grad=args.ent_coef > 0)
        pg = clipped_policy_loss(out.logprobs, mb.logprobs, mb.advantages, mb.loss_mask, args.clip_range)
        entropy = masked_mean(out.entropy, mb.loss_mask)
        loss = pg.loss + self.penalty(out.logprobs, mb) - args.ent_coef * entropy
        return loss, {
            "train/policy_loss": pg.loss,
            "train/value_loss": torch.zeros(()),  # no value model: nothing is regressed
            "train/entropy": entropy,
            "train/approx_kl": pg.approx_kl,
            "train/clipfrac": pg.clipfrac,
        }
