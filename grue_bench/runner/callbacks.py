"""What the runner does around the RL loop, as ``Trainer`` callbacks, in this order: resume from
``checkpoint/``, give each of a launch's processes its own random streams, record each iteration's
statistics, evaluate, save a checkpoint (last, so that the writer promotes it after the
iteration's rows)."""

from __future__ import annotations

import contextlib
import hashlib
import logging
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from grue_bench.random_states import random_states_kept
from grue_bench.rl.checkpoint import (
    discard_staged,
    load_checkpoint,
    save_checkpoint,
    staged_dir,
)
from grue_bench.rl.trainer import Callback, Trainer
from grue_bench.runner.evaluator import Evaluator, append_jsonl
from grue_bench.runner.recorder import Recorder
from grue_bench.runner.shared_test import shared_test

log = logging.getLogger(__name__)


class Resume(Callback):
    """Restores the algorithm and the prompt-drawing RNG from a run's checkpoint folder."""

    def __init__(self, checkpoint: Path, label: str) -> None:
        self.checkpoint = checkpoint
        self.label = label

    def on_train_start(self, trainer: Trainer) -> None:
        saved_rng = load_checkpoint(self.checkpoint, trainer.algorithm)
        if saved_rng is not None:
            trainer.rng.setstate(saved_rng)
            log.info("%s: resuming after iteration %d", self.label, trainer.iteration)


class AcrossProcesses(Callback):
    """One run trained by several processes (``grue_bench/runner/processes.py``): each process
    but the first draws its own prompts and samples, its prompt RNG and torch's seeded by the run's
    seed, its index and the iteration it starts at (a resume restores the first process's); at the
    end each process logs (DEBUG) a digest of its parameters, the same everywhere when the
    processes' gradients were averaged."""

    def __init__(self, seed: int, label: str) -> None:
        self.seed = seed
        self.label = label

    def on_train_start(self, trainer: Trainer) -> None:
        rank = trainer.algorithm.accelerator.process_index
        if rank > 0:
            seed = self.seed + 1000 * rank + trainer.iteration
            trainer.rng.seed(seed)
            torch.manual_seed(seed)

    def on_train_end(self, trainer: Trainer) -> None:
        digest = hashlib.sha256()
        for parameter in trainer.algorithm.model.parameters():
            digest.update(parameter.detach().float().cpu().numpy().tobytes())
        log.debug(
            "%s: process %d ends with parameters %s",
            self.label,
            trainer.algorithm.accelerator.process_index,
            digest.hexdigest()[:16],
        )


class RecordStats(Callback):
    """Each iteration's statistics: ``rollout`` and ``train`` rows in the store, a line of
    ``rollout_info.jsonl`` (all of them, when there was a rollout) and of ``training_info.jsonl``
    (the update's, ``train/*``, as RL4LMs writes it), and the progress bar. A supervised stage's
    iterations are its logging periods: a ``train/loss`` row and line each."""

    def __init__(self, recorder: Recorder, out: Path, label: str, position: int = 0) -> None:
        self.recorder = recorder
        self.out = out
        self.label = label
        self.position = position
        self.bar: Any = None

    def on_train_start(self, trainer: Trainer) -> None:
        self.bar = tqdm(
            total=trainer.n_iters,
            initial=trainer.iteration,
            desc=self.label,
            unit="iter",
            position=self.position,
            leave=False,
        )

    def on_iteration_end(self, trainer: Trainer, stats: dict[str, float]) -> None:
        iteration = trainer.iteration
        train = {key: value for key, value in stats.items() if key.startswith("train/")}
        rollout = {key: value for key, value in stats.items() if key not in train}
        if rollout:
            self.recorder.metrics(iteration, "rollout", rollout)
            append_jsonl(self.out / "rollout_info.jsonl", {"iteration": iteration, **stats})
        if train:
            self.recorder.metrics(iteration, "train", train)
            append_jsonl(self.out / "training_info.jsonl", {"iteration": iteration, **train})
        self.bar.update(iteration - self.bar.n)
        if "rollout/reward" in stats:
            kl = stats.get("train/kl_to_ref_per_token")
            kl = "n/a (beta 0)" if kl is None else f"{kl:.4f}/token"
            self.bar.set_postfix(reward=f"{stats['rollout/reward']:.3f}", kl=kl)
        elif "train/loss" in stats:
            self.bar.set_postfix(loss=f"{stats['train/loss']:.3f}")

    def on_train_end(self, trainer: Trainer) -> None:
        self.bar.close()


def final_evaluation(evaluator: Evaluator, lm, iteration: int, shared: bool = False) -> tuple[dict, dict]:
    """Validation and test of the trained ``lm``: per split, its scores and its generations; with
    ``shared`` the test goes through ``shared_test`` (a supervised run's fit is its chains' too)."""
    final, generations = {}, {}
    final["validation"], generations["validation"] = evaluator(lm, "validation", iteration)
    test = shared_test(evaluator, lm, iteration) if shared else evaluator(lm, "test", iteration)
    final["test"], generations["test"] = test
    return final, generations


class Evaluations(Callback):
    """Validation every ``every`` iterations (not at the last: the final evaluation covers it),
    then validation and test after the last iteration, kept as ``final`` and ``generations``.
    With ``draws_kept`` the validations between iterations leave the random states as they found
    them: the training draws what it would draw without them (a supervised run's fit is then the
    fit a chain's warm start makes from the same state, and is shared with it); with ``shared``
    the final test goes through ``shared_test``."""

    def __init__(
        self,
        evaluator: Evaluator,
        recorder: Recorder,
        every: int,
        every_key: str = "train_evaluation.eval_every",
        draws_kept: bool = False,
        shared: bool = False,
    ) -> None:
        self.evaluator = evaluator
        self.recorder = recorder
        self.every = every
        self.every_key = every_key
        """The config key ``every`` comes from, for the log (a supervised run's is its logging_steps)."""
        self.draws_kept = draws_kept
        self.shared = shared
        self.final: dict[str, dict[str, float]] = {}
        self.generations: dict[str, list[dict[str, Any]]] = {}

    def on_train_start(self, trainer: Trainer) -> None:
        if self.every >= trainer.n_iters:
            log.info(
                "%s (%d) is not below the run's %d iterations: validation runs after the last one only",
                self.every_key,
                self.every,
                trainer.n_iters,
            )

    def on_iteration_end(self, trainer: Trainer, stats: dict[str, float]) -> None:
        iteration = trainer.iteration
        if iteration % self.every == 0 and iteration < trainer.n_iters:
            with random_states_kept() if self.draws_kept else contextlib.nullcontext():
                table, rows = self.evaluator(trainer.algorithm.model, "validation", iteration)
            self.recorder.metrics(iteration, "validation", table)
            self.recorder.generations(iteration, "validation", rows)

    def on_train_end(self, trainer: Trainer) -> None:
        lm = trainer.algorithm.model
        self.final, self.generations = final_evaluation(self.evaluator, lm, trainer.iteration, self.shared)


def checkpoint_due(trainer: Trainer, every: int) -> bool:
    """Whether a checkpoint is due after this iteration: every ``every`` iterations, not at the
    last (the run is finished then)."""
    return trainer.iteration % every == 0 and trainer.iteration < trainer.n_iters


class CheckpointEvery(Callback):
    """A staged checkpoint every ``every`` iterations (not at the last: the run is finished then),
    promoted by the writer once it has stored the rows sent before it."""

    def __init__(self, recorder: Recorder, out: Path, every: int) -> None:
        self.recorder = recorder
        self.out = out
        self.every = every

    def on_iteration_end(self, trainer: Trainer, stats: dict[str, float]) -> None:
        iteration = trainer.iteration
        if checkpoint_due(trainer, self.every):
            save_checkpoint(staged_dir(self.out, iteration), trainer.algorithm, trainer.rng.getstate())
            if not self.recorder.live:  # nothing is promoted before the run ends: keep only the newest
                discard_staged(self.out, keep=iteration)
            self.recorder.checkpoint(iteration, str(self.out))


class SaveEvery(Callback):
    """A checkpoint in ``folder`` every ``every`` iterations but the last, replacing the one
    before: a fit that records nothing until it ends (a chain's warm start) goes on from it."""

    def __init__(self, folder: Path, every: int) -> None:
        self.folder = folder
        self.every = every

    def on_iteration_end(self, trainer: Trainer, stats: dict[str, float]) -> None:
        if checkpoint_due(trainer, self.every):
            save_checkpoint(self.folder, trainer.algorithm, trainer.rng.getstate())
