"""Attention checks: an unrelated, scrambled output that an attentive worker rates low (Likert) or
loses to the reference (pairwise); and whether a worker's answers pass."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from grue_bench.crowd.templates import Axis

DISTRACTOR = "distractor"
"""The system name of an attention check's scrambled output."""
REFERENCE = "reference"
"""The system name of a sample's (first) reference text."""
MIN_WORDS = 12
FILLER = ("of", "the", "and", "a", "to", "in", "it", "is", "was", "on", "with", "as")
"""Words of a distractor when no other sample has a reference."""


def distractor(unrelated: Sequence[str], rng: random.Random, min_words: int = MIN_WORDS) -> str:
    """Words of other samples' references, shuffled: unrelated to the prompt and not fluent."""
    pool = list(unrelated)
    rng.shuffle(pool)
    words: list[str] = []
    for text in pool:
        words += text.split()
        if len(words) >= min_words:
            break
    words = words[: 2 * min_words] or list(FILLER)
    original = list(words)
    for _ in range(10):  # a shuffle that keeps the original order would not be scrambled
        rng.shuffle(words)
        if words != original:
            break
    return " ".join(words)


def likert_expected(axes: Sequence[Axis]) -> dict[str, list[str]]:
    """Per checked axis, the answers that pass a Likert attention check."""
    return {axis.name: axis.low_answers() for axis in axes if axis.check_max is not None}


def passes(expected: Mapping[str, Sequence[str]], answers: Mapping[str, str]) -> bool:
    """Whether every checked answer is one of the expected ones."""
    return all(answers.get(axis) in allowed for axis, allowed in expected.items())
