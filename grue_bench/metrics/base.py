"""The metric interface (RL4LMs's ``BaseMetric.compute`` shape)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from grue_bench.errors import MissingAssetError

MetricScores = dict[str, tuple[list[float] | None, float]]
"""Metric key (e.g. ``lexical/rouge_rougeL``) -> (per-sample scores or None, corpus score)."""


class Metric(ABC):
    """Scores generations against references; constructor kwargs are the YAML ``args``."""

    reference_free: ClassVar[bool] = False
    """True when a sample's score does not compare the output with the references (a judge of the
    output alone, or of it against the sample's own label; diversity): the human ceiling of such a
    metric is its score on the references themselves."""

    @classmethod
    def missing_asset(cls, **args: Any) -> MissingAssetError | None:
        """What this metric, built with ``args``, lacks on this machine (None: nothing), found
        without building it. The offline profiles leave such a metric out of a config's suite."""
        return None

    def needs_policy_model(self) -> bool:
        """True when ``compute`` must be given the policy's model (e.g. perplexity under it)."""
        return False

    def leave_one_out(
        self, generated_texts: list[str], reference_texts: list[list[str]]
    ) -> dict[str, list[float]] | None:
        """For a corpus-level score that is not the mean of its per-sample scores (BLEU, chrF,
        TER): per key, the corpus score without sample i, for every i, computed from per-sample
        sufficient statistics. None (the default): the metric has none, and its intervals are over
        seeds only."""
        return None

    @abstractmethod
    def compute(
        self,
        prompt_texts: list[str],
        generated_texts: list[str],
        reference_texts: list[list[str]],
        meta_infos: list[dict[str, Any]] | None = None,
        model: Any = None,
        split_name: str | None = None,
    ) -> MetricScores:
        """Per-sample and corpus scores for each key this metric produces."""
