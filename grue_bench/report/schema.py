"""The leaderboard schema: how metrics are shown and which one heads each task.

A YAML file with ``metrics`` (display name, higher-is-better, naturalness, decimals) and ``tasks``
(each task's headline metric). Loading collects every problem before failing once; errors name the
file and the key. The default ships inside the package (``grue_bench/report/leaderboard.yaml``).
"""

from __future__ import annotations

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


class TaskBoard(Strict):
    """A task's place on the leaderboard."""

    headline: str = Field(min_length=1)
    """The metric key that ranks algorithms on this task."""


class Leaderboard(Strict):
    """The whole schema file."""

    version: Literal[1]
    metrics: dict[str, MetricSpec]
    tasks: dict[str, TaskBoard]

    def metric(self, key: str) -> MetricSpec:
        """The spec of ``key``; a metric missing from the schema shows its key and has no direction."""
        return self.metrics.get(key) or MetricSpec(display=key, higher_is_better=None)

    def headlines(self, tasks: list[str] | None = None) -> dict[str, Headline]:
        """Headline metric and direction per task (only ``tasks`` when given)."""
        chosen = self.tasks if tasks is None else {t: self.tasks[t] for t in tasks if t in self.tasks}
        return {
            task: Headline(board.headline, bool(self.metric(board.headline).higher_is_better))
            for task, board in chosen.items()
        }


def load_schema(path: str | Path | None = None) -> Leaderboard:
    """Read and validate a leaderboard schema (the packaged default when ``path`` is None)."""
    source = Path(path) if path is not None else DEFAULT_SCHEMA
    data = read_yaml_mapping(source)
    try:
        board = Leaderboard.model_validate(data)
    except ValidationError as error:
        raise GrueError.many(problems_from(error), source=str(source)) from error
    problems = _cross_check(board)
    if problems:
        raise GrueError.many(problems, source=str(source))
    return board


def _cross_check(board: Leaderboard) -> list[Problem]:
    """Every headline is a declared metric with a direction."""
    problems = []
    for task, entry in board.tasks.items():
        key = f"tasks.{task}.headline"
        spec = board.metrics.get(entry.headline)
        if spec is None:
            problems.append(
                Problem(
                    f"metric '{entry.headline}' is not declared under 'metrics'",
                    key,
                    f"add '{entry.headline}' to 'metrics' or pick a declared metric",
                )
            )
        elif spec.higher_is_better is None:
            problems.append(
                Problem(
                    f"metric '{entry.headline}' has no direction (higher_is_better: null)",
                    key,
                    "a headline ranks algorithms: set higher_is_better or pick another metric",
                )
            )
    return problems
