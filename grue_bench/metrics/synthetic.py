"""RL4LMs's synthetic metrics: its sanity-check rewards scored on evaluation texts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import pairwise
from typing import ClassVar

from pydantic import NonNegativeInt

from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.schema import Output


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def increasing_numbers_fraction(text: str, min_tokens: int) -> float:
    """RL4LMs's score: how many of the text's numbers, from the first, strictly increase,
    over max(number of tokens, min_tokens / 2); 0 for a text without numbers.

    Words between numbers are skipped when counting the run but lengthen the text, so the
    score is highest for a text of nothing but increasing numbers, at least min_tokens / 2 long.
    """
    tokens = text.split()
    numbers = [value for value in map(_number, tokens) if value is not None]
    if not numbers:
        return 0.0
    run = 1
    for previous, value in pairwise(numbers):
        if not value > previous:
            break
        run += 1
    return run / max(len(tokens), min_tokens / 2)


DATE_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}")
"""RL4LMs's date: an ISO date such as 2021-05-12, anywhere in the text."""


class _TextScore(Metric):
    """A score of each generated text alone, and its mean, under ``key``."""

    def score(self, text: str) -> float:
        raise NotImplementedError

    def compute(
        self, prompt_texts, generated_texts, reference_texts, meta_infos=None, model=None, split_name=None
    ) -> MetricScores:
        scores = [self.score(text) for text in generated_texts]
        return {self.key: (scores, sum(scores) / len(scores) if scores else 0.0)}


class IncreasingNumbersInText(_TextScore):
    """RL4LMs ``increasing_numbers``: the ``increasing_numbers`` reward of each text."""

    outputs: ClassVar[Mapping[str, Output]] = {
        "synthetic/increasing_numbers_in_text": Output(display="Increasing numbers in text")
    }

    def __init__(self, min_tokens: NonNegativeInt) -> None:
        self.min_tokens = min_tokens

    def score(self, text: str) -> float:
        return increasing_numbers_fraction(text, self.min_tokens)


class DatesInText(_TextScore):
    """RL4LMs ``dates``: 1 for a text holding an ISO date (the ``sentences_with_dates`` reward)."""

    outputs: ClassVar[Mapping[str, Output]] = {"synthetic/dates_in_text": Output(display="Dates in text")}

    def score(self, text: str) -> float:
        return 1.0 if DATE_PATTERN.search(text) else 0.0
