"""Rewards for ``bench_rl.py --reward``, in the plain form other libraries take: texts -> floats."""

from __future__ import annotations

from grue_bench.rewards.synthetic import IncreasingNumbers

_INCREASING = IncreasingNumbers(min_tokens=10)


def increasing_numbers(texts: list[str]) -> list[float]:
    """The synthetic task's reward: the increasing run among each text's numbers (RL4LMs's)."""
    return _INCREASING.batch([""] * len(texts), list(texts), [[]] * len(texts), [{}] * len(texts))
