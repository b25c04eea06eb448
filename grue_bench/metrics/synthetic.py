"""RL4LMs's synthetic metrics: its sanity-check rewards scored on evaluation texts."""

from __future__ import annotations

from typing import ClassVar

from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.rewards.synthetic import DATE_PATTERN, increasing_numbers_fraction


class _TextScore(Metric):
    """A score of each generated text alone, and its mean, under ``key``."""

    key: ClassVar[str]

    def score(self, text: str) -> float:
        raise NotImplementedError

    def compute(
        self, prompt_texts, generated_texts, reference_texts, meta_infos=None, model=None, split_name=None
    ) -> MetricScores:
        scores = [self.score(text) for text in generated_texts]
        return {self.key: (scores, sum(scores) / len(scores) if scores else 0.0)}


class IncreasingNumbersInText(_TextScore):
    """RL4LMs ``increasing_numbers``: the ``increasing_numbers`` reward of each text."""

    key = "synthetic/increasing_numbers_in_text"

    def __init__(self, min_tokens: int) -> None:
        self.min_tokens = min_tokens

    def score(self, text: str) -> float:
        return increasing_numbers_fraction(text, self.min_tokens)


class DatesInText(_TextScore):
    """RL4LMs ``dates``: 1 for a text holding an ISO date (the ``sentences_with_dates`` reward)."""

    key = "synthetic/dates_in_text"

    def score(self, text: str) -> float:
        return 1.0 if DATE_PATTERN.search(text) else 0.0
