"""The leaderboard schema: how metric keys are shown.

Each metric declares the keys it reports and how to show them (``Metric.outputs``: display name,
higher-is-better, naturalness, decimals); which key heads a task is the task's (``headline`` in
its ``task.yaml``). A schema file overrides what a metric declares, key by key (``grue report
--schema FILE``; the packaged ``grue_bench/report/leaderboard.yaml`` overrides nothing). Loading
collects every problem before failing once; errors name the file and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from grue_bench import plugins
from grue_bench.errors import GrueError, Problem
from grue_bench.report.aggregate import Headline
from grue_bench.schema import Output, Strict, problems_from
from grue_bench.tasks import TaskSpec, task_yaml
from grue_bench.yamlio import read_yaml_mapping

DEFAULT_SCHEMA = Path(__file__).resolve().parent / "leaderboard.yaml"


class Leaderboard(Strict):
    """The whole schema file: overrides of what the metrics declare, by key."""

    version: Literal[1]
    metrics: dict[str, Output] = Field(default_factory=dict)
    source: Path = Field(default=DEFAULT_SCHEMA, exclude=True)

    def metric(self, key: str) -> Output:
        """How ``key`` is shown: this file's entry, else its metric's declaration; a key neither
        declares shows as itself, with no direction."""
        if key in self.metrics:
            return self.metrics[key]
        return _declared().get(key) or Output(display=key, higher_is_better=None)

    def headlines(self, specs: Mapping[str, TaskSpec]) -> dict[str, Headline]:
        """Headline key and direction of each task that has a headline; one without a direction
        is an error (every one listed)."""
        keys = {task: plugins.headline_key(spec) for task, spec in specs.items() if spec.headline}
        problems = [
            (self._where(key, specs[task]), self._direction_problem(task, key))
            for task, key in keys.items()
            if self.metric(key).higher_is_better is None
        ]
        if problems:
            raise GrueError.many([problem for _, problem in problems], source=problems[0][0])
        return {task: Headline(key, bool(self.metric(key).higher_is_better)) for task, key in keys.items()}

    def _where(self, key: str, spec: TaskSpec) -> str:
        """The file that took the direction away: this schema, if it overrides ``key``, else the task."""
        return str(self.source) if key in self.metrics else str(task_yaml(spec.directory))

    def _direction_problem(self, task: str, key: str) -> Problem:
        overridden = key in self.metrics
        return Problem(
            f"metric '{key}', the headline of task '{task}', has no direction",
            f"metrics.{key}" if overridden else "headline",
            "a headline ranks algorithms: "
            + ("set its higher_is_better" if overridden else "give the task a headline with a direction"),
        )


@cache
def _declared() -> dict[str, Output]:
    """What the registered metrics declare, read once."""
    return plugins.declared_outputs()


def load_schema(path: str | Path | None = None) -> Leaderboard:
    """Read and validate a leaderboard schema (the packaged default when ``path`` is None)."""
    source = Path(path) if path is not None else DEFAULT_SCHEMA
    data = read_yaml_mapping(source)
    try:
        return Leaderboard.model_validate({**data, "source": source})
    except ValidationError as error:
        raise GrueError.many(problems_from(error), source=str(source)) from error
