"""RL4LMs's synthetic metrics: its sanity-check rewards scored on evaluation texts."""

from __future__ import annotations

from typing import Any

from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.rewards.synthetic import DATE_PATTERN, increasing_numbers_fraction


def _with_mean(key: str, scores: list[float]) -> MetricScores:
    return {key: (scores, sum(scores) / len(scores) if scores else 0.0)}


class IncreasingNumbersInText(Metric):
    """RL4LMs ``increasing_numbers``: the ``increasing_numbers`` reward of each text, and its mean."""

    def __init__(self, min_tokens: int) -> None:
        self.min_tokens = min_tokens

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        scores = [increasing_numbers_fraction(text, self.min_tokens) for text in generated_texts]
        return _with_mean("synthetic/increasing_numbers_in_text", scores)


class DatesInText(Metric):
    """RL4LMs ``dates``: 1 for a text holding an ISO date (the ``sentences_with_dates`` reward)."""

    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        scores = [1.0 if DATE_PATTERN.search(text) else 0.0 for text in generated_texts]
        return _with_mean("synthetic/dates_in_text", scores)
