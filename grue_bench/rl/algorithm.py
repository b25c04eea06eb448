"""What every on-policy algorithm shares: one iteration = sample and score episodes, assign
credit, update, adapt beta.

A rollout means what it means in RL4LMs: ``n_envs x n_steps`` token transitions, from episodes
sampled ``n_envs`` prompts at a time, the episode that crosses that size cut there (its return
bootstrapped from the value at the cut); the update's minibatches hold ``batch_size`` transitions
drawn at random from the whole rollout, with advantages whitened per minibatch (SB3's PPO).

An algorithm subclasses ``OnPolicyAlgorithm`` and writes its ``update``; critic-free ones also
write how episodes are collected (``collect``), how credit is assigned (``credit``; GAE by
default) and what a minibatch is (``minibatches``).
Metric keys are the same for every algorithm (see ``STAT_KEYS``); the ``train/kl_to_ref_*`` keys
are left out when the KL coefficient is 0, as there is no reference model to measure them against.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch

from grue_bench.data import Sample
from grue_bench.rl.advantages import gae, token_rewards, whiten
from grue_bench.rl.batch import Rollout
from grue_bench.rl.episodes import Episodes
from grue_bench.rl.hparams import AlgArgs
from grue_bench.rl.kl import make_kl_controller
from grue_bench.rl.masking import ActionMasker
from grue_bench.rl.policy import ActorCritic, frozen_names, load_trained_state, reference_model, trained_state
from grue_bench.rl.precision import Precision, optimizer_step, scaled
from grue_bench.rl.rollout import GenerationSettings, RolloutCollector

log = logging.getLogger(__name__)

STAT_KEYS = (
    "train/policy_loss",
    "train/value_loss",
    "train/entropy",
    "train/approx_kl",
    "train/clipfrac",
    "train/kl_to_ref_per_token",
    "train/kl_to_ref_per_sequence",
    "train/kl_coef",
    "rollout/reward",
    "rollout/length",
    "time/rollout_s",
    "time/generation_s",
    "time/update_s",
)


def adamw(params, learning_rate: float) -> torch.optim.AdamW:
    """AdamW without weight decay, fused: one kernel over all parameters (on CPU a step of the
    benchmark's GPT-2 takes 0.9 ms instead of 2.2 ms)."""
    return torch.optim.AdamW(params, lr=learning_rate, weight_decay=0.0, fused=True)


def with_moments_allocated(optimizer: torch.optim.AdamW) -> torch.optim.AdamW:
    """``optimizer`` with the state its first step would create (zero moments, step 0), made
    now, next to the weights, instead of at the first step, in the holes the first backward pass
    left in glibc's heap: that lowered the small profile's peak RSS on CPU (benchmarks/README).
    AdamW's ``state_dict`` format, loaded as a checkpoint would be. For CPU training only: the
    state lands where the parameters are now, and DeepSpeed or FSDP, which replace them, would
    keep it as a full copy."""
    params = [param for group in optimizer.param_groups for param in group["params"]]
    state = {
        index: {
            "step": torch.tensor(0.0),
            "exp_avg": torch.zeros_like(param),
            "exp_avg_sq": torch.zeros_like(param),
        }
        for index, param in enumerate(params)
    }
    optimizer.load_state_dict({"state": state, "param_groups": optimizer.state_dict()["param_groups"]})
    return optimizer


class OnPolicyAlgorithm:
    """Rollout collection, KL control and the iteration loop; subclasses implement ``update``."""

    Args: type[AlgArgs] = AlgArgs
    uses_critic: bool = True
    """Whether rollouts need the value head's estimates (critic-free algorithms skip them)."""

    def __init__(
        self,
        policy: ActorCritic,
        tokenizer: Any,
        reward_fn: Any,
        args: AlgArgs,
        generation: GenerationSettings,
        kl_coeff: float = 0.001,
        target_kl: float | None = None,
        kl_rate: float = 0.1,
        accelerator: Any = None,
        masker: ActionMasker | None = None,
        seed: int = 0,
        n_envs: int = 1,
    ) -> None:
        from accelerate import Accelerator, DistributedType

        self.args = args
        self.n_envs = n_envs
        self.shuffle_rng = torch.Generator().manual_seed(seed)
        """Orders the update's minibatches: seeded by the run, saved with a checkpoint."""
        self.accelerator = accelerator or Accelerator(cpu=not torch.cuda.is_available())
        self.device = self.accelerator.device
        self.precision = Precision.from_flags(args.bf16, args.fp16, self.device, "alg.args")
        self.scaler = self.precision.grad_scaler()
        # beta 0 stays 0 under either controller: then no reference model is kept or run (TRL's
        # GRPO default), and the KL to it, not measured, is not reported; with an adapter, the
        # reference is the policy's LM with the adapter disabled
        self.ref_lm = reference_model(policy.lm).to(self.device) if kl_coeff > 0 else None
        self.optimizer = self.make_optimizer(policy)
        self.policy, self.optimizer = self.accelerator.prepare(policy, self.optimizer)
        if self.device.type == "cpu" and self.accelerator.distributed_type in (
            DistributedType.NO,
            DistributedType.MULTI_CPU,
        ):
            with_moments_allocated(self.optimizer)
        self.kl = make_kl_controller(kl_coeff, target_kl, kl_rate)
        self.collector = RolloutCollector(
            policy=self.unwrapped,
            ref_lm=self.ref_lm,
            tokenizer=tokenizer,
            reward_fn=reward_fn,
            settings=generation,
            device=self.device,
            chunk_size=max(n_envs, 16),
            masker=masker,
            precision=self.precision,
        )
        self.iteration = 0

    @property
    def unwrapped(self) -> ActorCritic:
        """The policy without its distributed wrapper (for generation and saving)."""
        return self.accelerator.unwrap_model(self.policy)

    @property
    def model(self):
        """The policy's language model (unwrapped): what training returns and evaluation scores."""
        return self.unwrapped.lm

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps of it (``rl/checkpoint.py``, beside the iteration and the random
        states): the trained weights, the optimizer's state, the generator of the minibatches'
        order and the KL coefficient (adaptive, it moves); in float16, the loss scale."""
        policy = self.unwrapped
        return {
            "policy": trained_state(policy, frozen_names(policy)),
            "optimizer": self.optimizer.state_dict(),
            "shuffle_rng": self.shuffle_rng.get_state(),
            "kl_coef": self.kl.value,
            **({"grad_scaler": self.scaler.state_dict()} if self.scaler else {}),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""
        policy = self.unwrapped
        load_trained_state(policy, state["policy"], frozen_names(policy))
        self.optimizer.load_state_dict(state["optimizer"])
        self.shuffle_rng.set_state(state["shuffle_rng"])
        self.kl.value = state["kl_coef"]
        if self.scaler:
            self.scaler.load_state_dict(state["grad_scaler"])

    def make_optimizer(self, policy: ActorCritic) -> torch.optim.Optimizer:
        """AdamW over what trains (with an adapter: its weights and the value head)."""
        return adamw([p for p in policy.parameters() if p.requires_grad], self.args.learning_rate)

    def collect(self, pool: Sequence[Sample], rng: random.Random) -> Episodes:
        """Episodes enough for ``n_envs x n_steps`` transitions: prompts drawn with replacement,
        ``n_envs`` at a time (in as few sampling calls as the episodes' maximal length allows)."""
        budget, parts, collected = self.args.n_steps * self.n_envs, [], 0
        longest = self.collector.settings.max_new_tokens
        while collected < budget:
            rounds = math.ceil((budget - collected) / (self.n_envs * longest))
            samples = [pool[rng.randrange(len(pool))] for _ in range(rounds * self.n_envs)]
            log.debug(
                "iteration %d, process %d: prompts %s",
                self.iteration + 1,
                self.accelerator.process_index,
                " ".join(sample.id for sample in samples),
            )
            parts.append(self.collector.collect(samples, with_values=self.uses_critic))
            collected += int(parts[-1].tokens.response_mask.sum())
        causal = self.unwrapped.model_type == "causal"
        return Episodes.concat(parts, causal, self.collector.tokenizer.pad_token_id)

    def rollout_episodes(self, episodes: Episodes) -> Episodes:
        """What the update trains on: the first ``n_envs x n_steps`` transitions."""
        return episodes.first_transitions(self.args.n_steps * self.n_envs)

    def credit(self, episodes: Episodes) -> Rollout:
        """Per-token rewards (task reward at the end, -beta * KL at every token), GAE advantages
        and returns; an episode cut by the rollout's size has no task reward and bootstraps its
        return from the value at the cut."""
        mask = episodes.tokens.response_mask
        cut = episodes.cut if episodes.cut is not None else torch.zeros(len(episodes), dtype=torch.bool)
        cut = cut.to(mask.device)
        ended_rewards = torch.where(cut, 0.0, episodes.task_rewards)
        rewards = token_rewards(ended_rewards, episodes.kl, mask, self.kl.value)
        at_cut = mask.sum(1).long().clamp(max=mask.size(1) - 1)
        bootstrap = torch.where(cut, episodes.values.gather(1, at_cut[:, None]).squeeze(1), 0.0)
        advantages, returns = gae(
            rewards, episodes.values, mask, self.args.gamma, self.args.gae_lambda, bootstrap
        )
        return episodes.to_rollout(advantages, returns)

    def normalized(self, batch: Rollout) -> Rollout:
        """``batch`` with its advantages whitened over its transitions if ``normalize_advantage``
        (stable-baselines3 whitens each minibatch a step is taken on)."""
        if not self.args.normalize_advantage:
            return batch
        return replace(batch, advantages=whiten(batch.advantages, batch.loss_mask))

    def update(self, rollout: Rollout) -> dict[str, float]:
        """One optimisation phase on a rollout; returns ``train/*`` statistics."""
        raise NotImplementedError

    def before_rollout(self) -> None:
        """Hook run at the start of every iteration (NLPO refreshes its masking model here)."""

    def mean_across_ranks(self, value: float) -> float:
        """The mean of a scalar over processes, so every rank takes the same decisions."""
        if self.accelerator.num_processes == 1:
            return value
        tensor = torch.tensor([value], device=self.device)
        return float(self.accelerator.reduce(tensor, reduction="mean"))

    def step(self, pool: Sequence[Sample], rng: random.Random) -> dict[str, float]:
        """One iteration: rollout, update, KL-coefficient update. Returns the iteration's stats;
        the rollout's reward, length and KL are over every episode sampled, as RL4LMs logs them
        (with the one cut by the rollout's size and any after it)."""
        self.before_rollout()
        started = time.perf_counter()
        self.policy.eval()
        episodes = self.collect(pool, rng)
        rollout = self.credit(self.rollout_episodes(episodes))
        rollout_s = time.perf_counter() - started
        started = time.perf_counter()
        self.policy.train(not self.args.disable_dropout)
        train_stats = self.update(rollout)
        self.optimizer.zero_grad()  # the last gradient is not carried through the next rollout
        update_s = time.perf_counter() - started
        kl_coef = self.kl.value
        if self.ref_lm is not None:
            train_stats.update(self.kl_to_ref(episodes))
            self.kl.update(train_stats["train/kl_to_ref_per_token"])
        self.iteration += 1
        self.last_texts = episodes.texts
        stats = {
            **train_stats,
            "train/kl_coef": kl_coef,
            "rollout/reward": self.mean_across_ranks(float(episodes.task_rewards.mean())),
            "rollout/length": float(episodes.tokens.response_mask.sum(1).mean()),
            "time/rollout_s": rollout_s,
            "time/generation_s": self.collector.generation_s,
            "time/update_s": update_s,
        }
        log.log(
            logging.INFO if self.args.verbose else logging.DEBUG,
            "iteration %d: %s",
            self.iteration,
            ", ".join(f"{key} {value:.4g}" for key, value in sorted(stats.items())),
        )
        return stats

    def kl_to_ref(self, episodes: Episodes) -> dict[str, float]:
        """The KL to the reference: per token, averaged over all of the rollout's transitions
        (what the adaptive controller sees, as in RL4LMs), and summed per sequence."""
        kl, mask = episodes.kl, episodes.tokens.response_mask
        return {
            "train/kl_to_ref_per_token": self.mean_across_ranks(float(kl.sum() / mask.sum().clamp(min=1))),
            "train/kl_to_ref_per_sequence": self.mean_across_ranks(float(kl.sum(1).mean())),
        }

    def loss(self, mb: Rollout) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss of a (micro-)batch and its parts keyed as in ``STAT_KEYS`` (for ``gradient_step``)."""
        raise NotImplementedError

    def gradient_step(self, batch: Rollout) -> dict[str, float]:
        """One optimizer step on ``batch``'s ``loss`` (see ``accumulate_gradient``); returns the
        loss parts' batch means."""
        sums = self.accumulate_gradient(batch)
        self.apply_gradient()
        return sums

    def accumulate_gradient(self, batch: Rollout) -> dict[str, float]:
        """The gradient of ``batch``'s ``loss``, accumulated over micro-batches (the same as on
        the whole batch at once), left in the parameters' ``.grad``; returns the loss parts'
        batch means."""
        self.optimizer.zero_grad()
        sums: dict[str, float] = {}
        micro_batches = self.micro_batches(batch)
        for number, (part, weight) in enumerate(micro_batches):
            # processes average their gradients once, at the last micro-batch: their minibatches
            # hold the same number of transitions, but not of rows, nor of micro-batches
            last = number == len(micro_batches) - 1
            with contextlib.nullcontext() if last else self.accelerator.no_sync(self.policy):
                with self.precision.autocast():
                    loss, parts = self.loss(part)
                self.accelerator.backward(scaled(loss * weight, self.scaler))
            for key, value in parts.items():
                sums[key] = sums.get(key, 0.0) + weight * float(value.detach())
        return sums

    def apply_gradient(self) -> None:
        """Clip the accumulated gradient's norm and take the optimizer step (``optimizer_step``)."""
        optimizer_step(self.optimizer, self.scaler, self._clip)

    def _clip(self) -> None:
        self.accelerator.clip_grad_norm_(self.policy.parameters(), self.args.max_grad_norm)

    def micro_batches(self, batch: Rollout) -> list[tuple[Rollout, float]]:
        """``batch`` in slices of ``micro_batch_size`` rows, each with its share of the trained
        transitions: the weighted sum of the slices' masked means is the batch's masked mean."""
        step = self.args.micro_batch_size
        if len(batch) <= step:
            return [(batch, 1.0)]
        tokens = batch.loss_mask.sum().clamp(min=1)
        parts = [batch.select(torch.arange(i, min(i + step, len(batch)))) for i in range(0, len(batch), step)]
        return [(part, float(part.loss_mask.sum() / tokens)) for part in parts]

    def minibatches(self, rollout: Rollout) -> list[Rollout]:
        """The rollout's transitions in a random order, cut into minibatches of ``batch_size``
        (each holds the rows of its transitions, training on those tokens only); with
        ``minibatch_by: episodes``, whole rows in a random order, as many as make ``batch_size``
        transitions (the last minibatch may hold fewer)."""
        rows, steps = torch.nonzero(rollout.loss_mask, as_tuple=True)
        size = self.args.batch_size
        if self.args.minibatch_by == "episodes":
            picks = _whole_episodes(rows, len(rollout), size, self.shuffle_rng)
        else:
            order = torch.randperm(rows.numel(), generator=self.shuffle_rng)
            picks = list(order.split(size))
        return [
            rollout.transitions(rows[pick.to(rows.device)], steps[pick.to(rows.device)]) for pick in picks
        ]


def _whole_episodes(
    rows: torch.Tensor, n_rows: int, size: int, generator: torch.Generator
) -> list[torch.Tensor]:
    """Indices of the transitions (whose rows are ``rows``) in minibatches of whole rows: the rows
    in a random order, each minibatch closed once it holds ``size`` transitions or more."""
    members: list[list[int]] = [[] for _ in range(n_rows)]
    for index, row in enumerate(rows.tolist()):
        members[row].append(index)
    picks, current = [], []
    for row in torch.randperm(n_rows, generator=generator).tolist():
        current += members[row]
        if len(current) >= size:
            picks.append(torch.tensor(current))
            current = []
    if current:
        picks.append(torch.tensor(current))
    return picks
