"""Read what the leaderboard needs from a results store: counted runs, metrics, generations, ratings."""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from grue_bench.report.collapse import OutputStats, final_test_stats
from grue_bench.store import DONE, Generation, RunRecord, Store

log = logging.getLogger(__name__)

RATING_COLUMNS = ["task", "sample_id", "system", "worker_id", "assignment_id", "axis", "rating", "run_id"]


@dataclass
class StoreData:
    """The finished and submitted runs of a store, with their metric rows and human ratings."""

    runs: list[RunRecord]
    metrics: pd.DataFrame
    """Every metric row of the counted runs (``Store.metrics_table`` columns)."""
    ratings: pd.DataFrame
    samples: pd.DataFrame
    """The per-sample test scores of the counted runs (``Store.sample_scores_table`` columns)."""
    collapse: dict[int, OutputStats] = field(default_factory=dict)
    """Run id -> the collapse statistics of its final test generations (runs that stored some)."""
    not_counted: dict[str, int] = field(default_factory=dict)
    """Runs left out, by status (queued, running, failed)."""

    @property
    def profiles(self) -> list[str]:
        """The profiles of the counted runs, sorted: each has a leaderboard of its own."""
        return sorted({run.profile for run in self.runs})

    @property
    def tasks(self) -> list[str]:
        """Task ids with counted runs, sorted."""
        return sorted({run.task for run in self.runs})

    def task_runs(self, task: str) -> list[RunRecord]:
        """The counted runs of one task, by algorithm and seed."""
        return [run for run in self.runs if run.task == task]


def read_store(store: Store) -> StoreData:
    """Counted runs (status finished or submitted) and their rows."""
    every = store.runs()
    runs = [run for run in every if run.status in DONE]
    not_counted = dict(Counter(run.status for run in every if run.status not in DONE))
    if not_counted:
        log.info("not counted on the leaderboard: %s", not_counted)
    metrics = store.metrics_table()
    metrics = metrics[metrics["status"].isin(DONE)].reset_index(drop=True)
    ratings = pd.read_sql_query(f"SELECT {', '.join(RATING_COLUMNS)} FROM human_ratings", store.db.conn)
    counted = {run.id for run in runs}
    samples = store.sample_scores_table("test")
    samples = samples[samples["run_id"].isin(counted)].reset_index(drop=True)
    collapse = {run.id: stats for run in runs if (stats := final_test_stats(store, run.id)) is not None}
    return StoreData(runs, metrics, ratings, samples, collapse, not_counted)


def sample_generations(
    store: Store, runs: list[RunRecord], split: str = "test", limit: int = 5
) -> tuple[list[str], dict[str, tuple[RunRecord, dict[str, Generation]]]]:
    """The same prompts across algorithms: up to ``limit`` sample ids shared by every algorithm's
    lowest-seed run (final iteration), and per algorithm that run and its samples by id."""
    chosen: dict[str, tuple[RunRecord, dict[str, Generation]]] = {}
    for run in sorted(runs, key=lambda r: (r.alg, r.seed, r.id)):
        if run.alg in chosen:
            continue
        samples = {row["sample_id"]: row for row in store.generations(run.id, split)}
        if samples:
            chosen[run.alg] = (run, samples)
    if not chosen:
        return [], {}
    shared = set.intersection(*(set(samples) for _, samples in chosen.values()))
    ids = sorted(shared or set.union(*(set(samples) for _, samples in chosen.values())), key=natural_key)
    return ids[:limit], chosen


def natural_key(text: str) -> list[tuple[int, int | str]]:
    """Sort key that orders the numbers inside ids by value: 'test-2' before 'test-10'."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part]
