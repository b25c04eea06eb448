"""Leaderboard statistics from final scores: means with bootstrap intervals, probability of
improvement, and an overall interquartile mean over normalized scores (after rliable).

Everything here is pure pandas/numpy. Each interval draws from a fresh ``default_rng(RANDOM_STATE)``,
so a cell's interval depends only on its own values: the same store gives the same report, and a
test can recompute any interval on its own.

Overall score: an algorithm's interquartile mean (IQM) of its runs' normalized headline scores
pooled over tasks (``evidence.anchored_scores``: fixed per-task anchors, so adding a run moves no
other row), with a 95% stratified bootstrap interval (runs resampled within each task). The means'
intervals and paired verdicts are ``grue_bench.report.intervals``'s (over seeds and test samples).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

RANDOM_STATE = 0
N_RESAMPLES = 10_000
CONFIDENCE = 0.95
MIN_SEEDS = 2
"""Fewer seeds than this: no interval, no rank, no probability of improvement."""

FINAL_COLUMNS = [
    "run_id",
    "profile",
    "task",
    "alg",
    "seed",
    "model",
    "source",
    "iteration",
    "metric",
    "value",
]


@dataclass(frozen=True)
class Headline:
    """A task's headline metric and its direction."""

    metric: str
    higher_is_better: bool


def final_scores(metrics: pd.DataFrame, split: str = "test") -> pd.DataFrame:
    """Each run's metrics on ``split`` at its final (highest) iteration, one row per run × metric."""
    rows = metrics[metrics["split"] == split]
    if rows.empty:
        return pd.DataFrame(columns=FINAL_COLUMNS)
    last = rows.groupby("run_id")["iteration"].transform("max")
    final = rows[rows["iteration"] == last].rename(columns={"name": "metric"})
    return final[FINAL_COLUMNS].sort_values(["task", "alg", "seed", "metric"]).reset_index(drop=True)


def bootstrap_mean_ci(
    values: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = CONFIDENCE,
    random_state: int = RANDOM_STATE,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean; (nan, nan) with fewer than ``MIN_SEEDS`` values."""
    data = np.asarray(values, dtype=float)
    if data.size < MIN_SEEDS:
        return (np.nan, np.nan)
    rng = np.random.default_rng(random_state)
    means = data[rng.integers(0, data.size, size=(n_resamples, data.size))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return (float(low), float(high))


def probability_of_improvement(
    x: Sequence[float], y: Sequence[float], higher_is_better: bool = True
) -> float:
    """P(X > Y): the mean over all pairs of runs of 1[x better than y] + 0.5 · 1[x = y]."""
    a = np.asarray(x, dtype=float)[:, None]
    b = np.asarray(y, dtype=float)[None, :]
    better = a > b if higher_is_better else a < b
    return float((better + 0.5 * (a == b)).mean())


def ranks(summary: pd.DataFrame, headlines: Mapping[str, Headline]) -> pd.DataFrame:
    """Per task, algorithms ranked by headline mean (1 = best, ties share the best rank);
    algorithms with fewer than ``MIN_SEEDS`` seeds are not ranked."""
    frames = []
    for task, headline in sorted(headlines.items()):
        rows = summary[
            (summary["task"] == task)
            & (summary["metric"] == headline.metric)
            & (summary["n_seeds"] >= MIN_SEEDS)
        ]
        ranked = rows["mean"].rank(method="min", ascending=not headline.higher_is_better)
        frames.append(pd.DataFrame({"task": task, "alg": rows["alg"], "rank": ranked.astype(int)}))
    if not frames:
        return pd.DataFrame(columns=["task", "alg", "rank"])
    return pd.concat(frames, ignore_index=True)


def iqm(values: Sequence[float] | np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """Interquartile mean: the mean of the middle 50% after cutting floor(n/4) from each end."""
    data = np.asarray(values, dtype=float)
    if axis is None:
        data, axis = data.ravel(), 0
    data = np.sort(data, axis=axis)
    n = data.shape[axis]
    cut = int(0.25 * n)
    middle = np.take(data, np.arange(cut, n - cut), axis=axis)
    result = middle.mean(axis=axis)
    return float(result) if np.ndim(result) == 0 else result


def stratified_iqm_ci(
    strata: Sequence[Sequence[float] | np.ndarray],
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = CONFIDENCE,
    random_state: int = RANDOM_STATE,
) -> tuple[float, float]:
    """Percentile interval of the IQM, resampling runs with replacement within each stratum (task);
    (nan, nan) when a stratum has fewer than ``MIN_SEEDS`` runs."""
    arrays = [np.asarray(stratum, dtype=float) for stratum in strata]
    if not arrays or min(array.size for array in arrays) < MIN_SEEDS:
        return (np.nan, np.nan)
    rng = np.random.default_rng(random_state)
    samples = [array[rng.integers(0, array.size, size=(n_resamples, array.size))] for array in arrays]
    estimates = iqm(np.concatenate(samples, axis=1), axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(estimates, [tail, 100 - tail])
    return (float(low), float(high))


def overall_table(normalized: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm: IQM of normalized scores over (runs × tasks) with its stratified interval."""
    columns = ["alg", "iqm", "ci_low", "ci_high", "n_tasks", "n_runs", "min_seeds"]
    records = []
    for alg, rows in normalized.groupby("alg", sort=True):
        strata = [group["normalized"].to_numpy(dtype=float) for _, group in rows.groupby("task", sort=True)]
        low, high = stratified_iqm_ci(strata)
        sizes = [stratum.size for stratum in strata]
        records.append((alg, iqm(np.concatenate(strata)), low, high, len(strata), sum(sizes), min(sizes)))
    return pd.DataFrame.from_records(records, columns=columns)


def ratings_table(ratings: pd.DataFrame) -> pd.DataFrame:
    """Human ratings per task × system × axis: mean, bootstrap interval over ratings, counts."""
    columns = ["task", "system", "axis", "mean", "ci_low", "ci_high", "n_ratings", "n_workers"]
    records = []
    for (task, system, axis), group in ratings.groupby(["task", "system", "axis"], sort=True):
        values = group["rating"].to_numpy(dtype=float)
        low, high = bootstrap_mean_ci(values)
        n_workers = int(group["worker_id"].nunique())
        records.append((task, system, axis, float(values.mean()), low, high, int(values.size), n_workers))
    return pd.DataFrame.from_records(records, columns=columns)
