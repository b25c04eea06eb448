"""The leaderboard schema: how metrics are shown.

A YAML file with ``metrics`` (display name, higher-is-better, naturalness, decimals). Which metric
heads a task is the task's (``headline`` in its ``task.yaml``); the schema gives it its direction.
Loading collects every problem before failing once; errors name the file and the key. The default
ships inside the package (``grue_bench/report/leaderboard.yaml``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from grue_bench.errors import GrueError, Problem
from grue_bench.report.aggregate import Headline
from grue_bench.schema import Strict, problems_from
from grue_bench.yamlio import read_yaml_mapping

DEFAULT_SCHEMA = Path(__file__).resolve().parent / "leaderboard.yaml"


class MetricSpec(Strict):
    """How one metric key is shown."""

    display: str = Field(min_length=1)
    """Column title, e.g. 'ROUGE-L'."""
    higher_is_better: bool | None = True
    """Direction; null for a metric with no better side (e.g. mean length): never ranked."""
    naturalness: bool = False
    """Shown with the naturalness metrics (fluency, diversity) rather than the task's own."""
    decimals: int = Field(default=3, ge=0, le=6)
    """Digits after the decimal point."""
    description: str = ""
    """Tooltip text."""


class Leaderboard(Strict):
    """The whole schema file."""

    version: Literal[1]
    metrics: dict[str, MetricSpec]
    source: Path = Field(default=DEFAULT_SCHEMA, exclude=True)

    def metric(self, key: str) -> MetricSpec:
        """The spec of ``key``; a metric missing from the schema shows its key and has no direction."""
        return self.metrics.get(key) or MetricSpec(display=key, higher_is_better=None)

    def headlines(self, metrics: Mapping[str, str]) -> dict[str, Headline]:
        """Headline and direction per task from each task's headline metric key; a metric not
        declared here, or declared without a direction, is an error (every one listed)."""
        problems = [
            problem for task, metric in metrics.items() if (problem := self._headline_problem(task, metric))
        ]
        if problems:
            raise GrueError.many(problems, source=str(self.source))
        return {
            task: Headline(metric, bool(self.metric(metric).higher_is_better))
            for task, metric in metrics.items()
        }

    def _headline_problem(self, task: str, metric: str) -> Problem | None:
        """Why ``metric`` cannot head ``task``, if it cannot."""
        spec = self.metrics.get(metric)
        if spec is None:
            return Problem(
                f"metric '{metric}', the headline of task '{task}', is not declared",
                "metrics",
                f"add '{metric}' to 'metrics', or give the task's headline a declared metric",
            )
        if spec.higher_is_better is None:
            return Problem(
                f"metric '{metric}', the headline of task '{task}', has no direction",
                f"metrics.{metric}",
                "a headline ranks algorithms: set its higher_is_better, or give the task another headline",
            )
        return None


def load_schema(path: str | Path | None = None) -> Leaderboard:
    """Read and validate a leaderboard schema (the packaged default when ``path`` is None)."""
    source = Path(path) if path is not None else DEFAULT_SCHEMA
    data = read_yaml_mapping(source)
    try:
        return Leaderboard.model_validate({**data, "source": source})
    except ValidationError as error:
        raise GrueError.many(problems_from(error), source=str(source)) from error
