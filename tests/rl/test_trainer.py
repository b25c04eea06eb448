"""The one RL loop: callback order, stopping, divergence, resume position."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import pytest

from grue_bench.rl.trainer import Callback, Diverged, Trainer


class FakeAlgorithm:
    """Counts iterations; its reward is the iteration, or NaN at ``nan_at``."""

    def __init__(self, start: int = 0, nan_at: int | None = None) -> None:
        self.iteration = start
        self.nan_at = nan_at
        self.model = "the model"
        self.accelerator = SimpleNamespace(num_processes=1)
        self.prompts: list[str] = []

    def step(self, pool, rng) -> dict[str, float]:
        self.prompts.append(rng.choice(pool))
        self.iteration += 1
        return {"rollout/reward": math.nan if self.iteration == self.nan_at else float(self.iteration)}


class Log(Callback):
    def __init__(self, events: list, stop_at: int | None = None) -> None:
        self.events, self.stop_at = events, stop_at

    def on_train_start(self, trainer):
        self.events.append(("start", trainer.iteration, trainer.n_iters))

    def on_iteration_start(self, trainer):
        self.events.append(("begin", trainer.iteration))

    def on_iteration_end(self, trainer, stats):
        self.events.append(("end", trainer.iteration, stats["rollout/reward"]))
        return trainer.iteration == self.stop_at

    def on_train_end(self, trainer):
        self.events.append(("train_end", trainer.iteration))


def test_fit_calls_the_hooks_in_order_and_returns_the_model():
    events: list = []
    trainer = Trainer(FakeAlgorithm(), ["a", "b"], random.Random(0), [Log(events)])
    assert trainer.fit(2) == "the model"
    assert events == [
        ("start", 0, 2),
        ("begin", 0),
        ("end", 1, 1.0),
        ("begin", 1),
        ("end", 2, 2.0),
        ("train_end", 2),
    ]
    assert [stats["rollout/reward"] for stats in trainer.history] == [1.0, 2.0]


def test_a_callback_stops_training_after_every_callback_saw_the_iteration():
    first, second = [], []
    trainer = Trainer(FakeAlgorithm(), ["a"], random.Random(0), [Log(first, stop_at=2), Log(second)])
    trainer.fit(5)
    assert first == second
    assert first[-2:] == [("end", 2, 2.0), ("train_end", 2)]


def test_a_resumed_algorithm_continues_from_its_iteration():
    events: list = []
    Trainer(FakeAlgorithm(start=3), ["a"], random.Random(0), [Log(events)]).fit(4)
    assert events == [("start", 3, 4), ("begin", 3), ("end", 4, 4.0), ("train_end", 4)]
    events.clear()
    Trainer(FakeAlgorithm(start=4), ["a"], random.Random(0), [Log(events)]).fit(4)
    assert events == [("start", 4, 4), ("train_end", 4)]


def test_non_finite_statistics_stop_every_caller_with_the_iteration_named():
    events: list = []
    trainer = Trainer(FakeAlgorithm(nan_at=2), ["a"], random.Random(0), [Log(events)])
    with pytest.raises(Diverged, match=r"non-finite values at iteration 2: \{'rollout/reward': nan\}"):
        trainer.fit(5)
    assert ("end", 2, math.nan) not in events and events[-1] == ("begin", 1)


def test_prompts_are_drawn_with_the_trainers_rng():
    algorithm = FakeAlgorithm()
    Trainer(algorithm, list("abcdef"), random.Random(7)).fit(3)
    rng = random.Random(7)
    assert algorithm.prompts == [rng.choice("abcdef") for _ in range(3)]
