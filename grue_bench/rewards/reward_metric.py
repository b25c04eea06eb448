"""A registered reward function reported as a metric (used by the synthetic tasks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grue_bench import plugins
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.plugins.components import RewardId, build, check_nested
from grue_bench.schema import Output


class RewardMetric(Metric):
    """Per-sample rewards and their mean, under ``reward/<id>``."""

    @classmethod
    def outputs_with(cls, args: Mapping[str, Any]) -> Mapping[str, Output]:
        """``reward/<id>`` for the reward ``id`` (every registered reward's key without one)."""
        ids = [args["id"]] if "id" in args else plugins.REWARDS.ids()
        return {f"reward/{id}": Output(display=f"Reward: {id}") for id in ids}

    def __init__(self, id: RewardId, args: dict[str, Any] | None = None) -> None:
        self.id = id
        self.reward = build("rewards", id, args, "args")

    @staticmethod
    def check_args(args: Any) -> None:
        """``args`` are the arguments of the reward ``id``."""
        check_nested("rewards", args.id, args.args, "args")

    def compute(
        self, prompt_texts, generated_texts, reference_texts, meta_infos=None, model=None, split_name=None
    ) -> MetricScores:
        metas = meta_infos or [{} for _ in generated_texts]
        scores = self.reward.batch(prompt_texts, generated_texts, reference_texts, metas)
        return {f"reward/{self.id}": (scores, sum(scores) / len(scores) if scores else 0.0)}
