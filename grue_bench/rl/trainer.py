"""The one training loop: ``Trainer(algorithm, pool, rng, callbacks).fit(n_iters)``.

The loop steps the algorithm (an RL algorithm's iteration is one rollout and its update; the
supervised stage's step, optimizer steps up to the next multiple of ``logging_steps`` or
``save_steps``) and stops on non-finite statistics for
every caller. What a caller does around it, recording, evaluating, checkpointing,
resuming, timing, it does in callbacks, called in list order at four points::

    on_train_start(trainer)
    on_iteration_start(trainer)
    on_iteration_end(trainer, stats)  # a true return stops training after this iteration
    on_train_end(trainer)

The runner (``grue_bench/runner/callbacks.py``), the Python API (``runner.assemble.train``) and
``benchmarks/bench_rl.py`` drive this same loop.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any, Protocol

from grue_bench.data import Sample


class Algorithm(Protocol):
    """What ``Trainer`` steps: the RL algorithms (``rl.algorithm.OnPolicyAlgorithm``) and the
    supervised stage (``rl.supervised.Supervised``)."""

    iteration: int
    """Iterations done, those before a resume included."""
    accelerator: Any
    """The ``accelerate.Accelerator`` it trains under (its process index and count)."""

    @property
    def model(self) -> Any:
        """The language model being trained, unwrapped from any distributed wrapper."""

    def step(self, pool: Sequence[Sample], rng: random.Random) -> dict[str, float]:
        """One iteration on ``pool`` (prompts drawn with ``rng``); returns its statistics."""


class Diverged(Exception):
    """Non-finite statistics (reward, loss, KL): training cannot go on."""


def check_finite(stats: dict[str, float], iteration: int) -> None:
    """Raise ``Diverged`` naming every non-finite statistic of ``iteration``."""
    bad = {key: value for key, value in stats.items() if not math.isfinite(value)}
    if bad:
        raise Diverged(f"non-finite values at iteration {iteration}: {bad}")


class Callback:
    """A hook into ``Trainer.fit``; override the points you need."""

    def on_train_start(self, trainer: Trainer) -> None:
        """Before the first iteration (after a resume, before the first new one)."""

    def on_iteration_start(self, trainer: Trainer) -> None:
        """Before ``algorithm.step``."""

    def on_iteration_end(self, trainer: Trainer, stats: dict[str, float]) -> bool | None:
        """After ``algorithm.step`` (``trainer.iteration`` counts it); return True to stop."""
        return None

    def on_train_end(self, trainer: Trainer) -> None:
        """After the last iteration, or the one a callback stopped at."""


class Trainer:
    """Steps ``algorithm`` on prompts drawn from ``pool`` with ``rng`` until ``n_iters``."""

    def __init__(
        self,
        algorithm: Algorithm,
        pool: Sequence[Sample],
        rng: random.Random,
        callbacks: Sequence[Callback] = (),
    ) -> None:
        self.algorithm = algorithm
        self.pool = pool
        self.rng = rng
        self.callbacks = list(callbacks)
        self.n_iters = 0
        self.history: list[dict[str, float]] = []
        """The statistics of every iteration this ``fit`` ran."""

    @property
    def iteration(self) -> int:
        """Iterations done so far, those before a resume included."""
        return self.algorithm.iteration

    def fit(self, n_iters: int) -> Any:
        """Train up to iteration ``n_iters``; returns the trained language model."""
        self.n_iters = n_iters
        for callback in self.callbacks:
            callback.on_train_start(self)
        while self.iteration < n_iters:
            for callback in self.callbacks:
                callback.on_iteration_start(self)
            stats = self.algorithm.step(self.pool, self.rng)
            check_finite(stats, self.iteration)
            self.history.append(stats)
            stops = [callback.on_iteration_end(self, stats) for callback in self.callbacks]
            if any(stops):
                break
        for callback in self.callbacks:
            callback.on_train_end(self)
        return self.algorithm.model
