"""The metric interface (RL4LMs's ``BaseMetric.compute`` shape)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from grue_bench.schema import Output

if TYPE_CHECKING:
    from grue_bench.errors import MissingAssetError

MetricScores = dict[str, tuple[list[float] | None, float]]
"""Metric key (e.g. ``lexical/rouge_rougeL``) -> (per-sample scores or None, corpus score)."""


class Metric(ABC):
    """Scores generations against references; constructor kwargs are the YAML ``args``."""

    outputs: ClassVar[Mapping[str, Output]] = {}
    """The keys ``compute`` reports, each with how the leaderboard shows it."""

    reference_free: ClassVar[bool] = False
    """True when a sample's score does not compare the output with the references (a judge of the
    output alone, or of it against the sample's own label; diversity): the human ceiling of such a
    metric is its score on the references themselves."""

    @property
    def key(self) -> str:
        """The key of a metric that reports one."""
        (key,) = self.outputs
        return key

    @classmethod
    def outputs_with(cls, args: Mapping[str, Any]) -> Mapping[str, Output]:
        """The outputs of this metric built with ``args`` (a metric whose keys depend on its
        arguments overrides it; with ``args`` empty it gives every key it can report)."""
        return cls.outputs

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
