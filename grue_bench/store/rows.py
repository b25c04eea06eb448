"""A run's metric, generation and per-sample score rows: writing them, curves, the metrics table,
generated samples.

Iterations: ``BEFORE_TRAINING`` (-1) is the evaluation of the initial model, 0..n-1 are training
iterations, and the evaluation after training is logged at iteration n (the iterations completed),
so a run's final score on a split is its value at the largest iteration.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict

from sqlite_utils import Database

from grue_bench.errors import GrueError
from grue_bench.store.schema import transaction

if TYPE_CHECKING:
    import pandas as pd

BEFORE_TRAINING = -1
"""The iteration at which the initial model is evaluated."""
SPLITS = ("train", "validation", "test", "rollout")

_METRIC_PK = ("run_id", "split", "name", "iteration")
_GENERATION_PK = ("run_id", "split", "iteration", "sample_id")
_SAMPLE_SCORE_PK = ("run_id", "split", "iteration", "name", "sample_id")


class _GenerationText(TypedDict):
    sample_id: str
    prompt: str
    text: str
    references: list[str]


class Generation(_GenerationText, total=False):
    """One generated sample, as given to ``add_generations``; ``scores`` (metric key -> the sample's
    value, see ``sample_scores``) go to the ``sample_scores`` table."""

    scores: dict[str, float]


class RowTables:
    """The ``metrics``, ``generations`` and ``sample_scores`` tables of a store (a mixin of ``Store``)."""

    db: Database

    def log_metrics(self, run_id: int, iteration: int, split: str, values: Mapping[str, float]) -> None:
        """Write scalars for one (iteration, split); rewriting a point replaces it."""
        checked = checked_metrics(run_id, iteration, split, values)
        with transaction(self.db):
            write_metrics(self.db, run_id, iteration, split, checked)

    def add_generations(self, run_id: int, iteration: int, split: str, rows: Sequence[Generation]) -> None:
        """Write generated samples for one (iteration, split); rewriting a sample replaces it."""
        with transaction(self.db):
            write_generations(self.db, run_id, iteration, split, rows)

    def add_sample_scores(
        self, run_id: int, iteration: int, split: str, values: Mapping[str, Mapping[str, float]]
    ) -> None:
        """Write per-sample values (metric key -> sample id -> value) of one (iteration, split)."""
        with transaction(self.db):
            write_sample_scores(self.db, run_id, iteration, split, values)

    def sample_scores(self, run_id: int, split: str, iteration: int) -> dict[str, dict[str, float]]:
        """Metric key -> sample id -> value, of one evaluation of a run."""
        result: dict[str, dict[str, float]] = {}
        rows = self.db.execute(
            "SELECT name, sample_id, value FROM sample_scores "
            "WHERE run_id = ? AND split = ? AND iteration = ?",
            [run_id, split, iteration],
        )
        for name, sample_id, value in rows:
            result.setdefault(name, {})[sample_id] = value
        return result

    def sample_scores_table(self, split: str = "test") -> pd.DataFrame:
        """Every per-sample value of ``split`` (run_id, iteration, name, sample_id, value)."""
        import pandas as pd

        return pd.read_sql_query(
            "SELECT run_id, iteration, name, sample_id, value FROM sample_scores WHERE split = ?",
            self.db.conn,
            params=[split],
        )

    def curves(self, run_id: int, split: str) -> dict[str, list[tuple[int, float]]]:
        """Each metric of a run's split as (iteration, value) pairs, by iteration."""
        result: dict[str, list[tuple[int, float]]] = {}
        rows = self.db.execute(
            "SELECT name, iteration, value FROM metrics WHERE run_id = ? AND split = ? "
            "ORDER BY name, iteration",
            [run_id, split],
        )
        for name, iteration, value in rows:
            result.setdefault(name, []).append((iteration, value))
        return result

    def metrics_table(self) -> pd.DataFrame:
        """Every metric row joined with its run's identity, as a pandas DataFrame."""
        import pandas as pd

        return pd.read_sql_query(
            """SELECT m.run_id, r.key, r.task, r.task_version, r.alg, r.seed, r.profile, r.model,
                      r.config_hash, r.status, r.source, m.split, m.name, m.iteration, m.value
               FROM metrics AS m JOIN runs AS r ON r.id = m.run_id
               ORDER BY r.task, r.alg, r.seed, m.run_id, m.split, m.name, m.iteration""",
            self.db.conn,
        )

    def generations(self, run_id: int, split: str, iteration: int | None = None) -> list[Generation]:
        """A run's generated samples on a split at ``iteration`` (default: its last), by sample id."""
        if iteration is None:
            found = self.db.execute(
                "SELECT max(iteration) FROM generations WHERE run_id = ? AND split = ?", [run_id, split]
            ).fetchone()[0]
            if found is None:
                return []
            iteration = int(found)
        rows = self.db.execute(
            'SELECT sample_id, prompt, text, "references" FROM generations '
            "WHERE run_id = ? AND split = ? AND iteration = ? ORDER BY sample_id",
            [run_id, split, iteration],
        )
        return [
            Generation(sample_id=sample_id, prompt=prompt, text=text, references=json.loads(references))
            for sample_id, prompt, text, references in rows
        ]


def checked_metrics(run_id: int, iteration: int, split: str, values: Mapping[str, float]) -> dict[str, float]:
    """The values as floats; a non-finite or non-numeric one is a GrueError naming the metric."""
    _check_split(split)
    checked = {}
    for name, value in values.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number):
            raise GrueError(
                f"metric '{name}' is {value!r} (run {run_id}, iteration {iteration}, split {split}); "
                "the store keeps finite numbers only",
                key=name,
                fix="drop or repair this metric before logging it",
            )
        checked[name] = number
    return checked


def write_metrics(db: Database, run_id: int, iteration: int, split: str, values: Mapping[str, float]) -> None:
    """Upsert checked metric values (inside the caller's transaction)."""
    rows = [
        {"run_id": run_id, "split": split, "name": name, "iteration": iteration, "value": value}
        for name, value in values.items()
    ]
    if rows:
        db["metrics"].upsert_all(rows, pk=_METRIC_PK)


def write_generations(
    db: Database, run_id: int, iteration: int, split: str, rows: Sequence[Generation]
) -> None:
    """Upsert generated samples (inside the caller's transaction)."""
    _check_split(split)
    records = [
        {
            "run_id": run_id,
            "split": split,
            "iteration": iteration,
            "sample_id": str(row["sample_id"]),
            "prompt": row["prompt"],
            "text": row["text"],
            "references": json.dumps(list(row["references"])),
        }
        for row in rows
    ]
    if records:
        db["generations"].upsert_all(records, pk=_GENERATION_PK)
    scores: dict[str, dict[str, float]] = {}
    for row in rows:
        for name, value in row.get("scores", {}).items():
            scores.setdefault(name, {})[str(row["sample_id"])] = value
    write_sample_scores(db, run_id, iteration, split, scores)


def write_sample_scores(
    db: Database, run_id: int, iteration: int, split: str, values: Mapping[str, Mapping[str, float]]
) -> None:
    """Upsert per-sample values, metric key -> sample id -> value (inside the caller's transaction);
    a non-finite value is a GrueError naming the metric and the sample."""
    _check_split(split)
    records = []
    for name, by_sample in values.items():
        for sample_id, value in by_sample.items():
            number = float(value)
            if not math.isfinite(number):
                raise GrueError(
                    f"metric '{name}' is {value!r} on sample {sample_id} (run {run_id}, iteration "
                    f"{iteration}, split {split}); the store keeps finite numbers only",
                    key=name,
                    fix="drop or repair this metric's per-sample values before logging them",
                )
            records.append(
                {
                    "run_id": run_id,
                    "split": split,
                    "iteration": iteration,
                    "name": name,
                    "sample_id": str(sample_id),
                    "value": number,
                }
            )
    if records:
        db["sample_scores"].upsert_all(records, pk=_SAMPLE_SCORE_PK)


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {', '.join(SPLITS)}")
