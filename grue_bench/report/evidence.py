"""What the leaderboard may claim: per-sample matrices of rows, their intervals, paired verdicts,
floors and collapse flags, and the fixed per-task anchors of the overall score.

A row is a task × algorithm (one profile's runs) or a floor/ceiling (``ReferenceRow``). Its matrix
for a metric is seeds × test samples of per-sample values (the store's ``sample_scores`` at each
run's final test iteration), on the samples all its seeds share. Where any seed lacks them (a store
written before they were kept, a metric without per-sample values), the row's interval is over seed
means only and says so (``method``). Intervals and paired differences are
``grue_bench.report.intervals``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from grue_bench.report.aggregate import MIN_SEEDS, Headline, probability_of_improvement
from grue_bench.report.collapse import OutputStats
from grue_bench.report.intervals import (
    Interval,
    difference_interval,
    improvement_interval,
    mean_interval,
    seed_difference_interval,
    seed_mean_interval,
    t_bounds,
    verdict,
)

SUMMARY_COLUMNS = [
    "profile", "task", "alg", "metric", "mean", "ci_low", "ci_high", "std", "n_seeds", "n_samples", "method",
]  # fmt: skip
FLOOR_PREFIX, CEILING_PREFIX = "floor:", "ceiling:"


@dataclass
class ReferenceRow:
    """A floor or the ceiling of a task: per metric key, its per-sample values and corpus score."""

    name: str
    note: str
    corpus: dict[str, float] = field(default_factory=dict)
    samples: dict[str, dict[str, float]] = field(default_factory=dict)
    """Metric key -> sample id -> value (keys with per-sample values only)."""
    sample_count: dict[str, int] = field(default_factory=dict)
    """Metric key -> how many test samples the value rests on."""

    @property
    def is_floor(self) -> bool:
        return self.name.startswith(FLOOR_PREFIX)

    def add(
        self, corpus: Mapping[str, float], samples: Mapping[str, Sequence[float]], ids: Sequence[str]
    ) -> None:
        """Take the ``corpus`` scores and per-sample values (in the order of ``ids``)."""
        for key, value in corpus.items():
            self.corpus[key] = value
            self.sample_count[key] = len(ids)
            if key in samples:
                self.samples[key] = dict(zip(ids, samples[key], strict=True))


def is_reference(alg: str) -> bool:
    """Whether a row name is a floor or the ceiling rather than an algorithm."""
    return alg.startswith((FLOOR_PREFIX, CEILING_PREFIX))


@dataclass(frozen=True)
class Row:
    """One row's values of one metric: a seeds × samples matrix, or only its seed values."""

    seed_values: np.ndarray
    matrix: pd.DataFrame | None
    """Seeds (lines) × sample ids (columns); None when some seed has no per-sample values."""
    deterministic: bool = False

    def interval(self) -> Interval:
        if self.matrix is not None:
            return mean_interval(self.matrix.to_numpy(), deterministic=self.deterministic)
        return seed_mean_interval(self.seed_values)


def final_sample_values(samples: pd.DataFrame, final: pd.DataFrame) -> dict[tuple[int, str], pd.Series]:
    """(run id, metric) -> its per-sample values (by sample id) at the run's final iteration."""
    if samples.empty or final.empty:
        return {}
    last = final[["run_id", "iteration"]].drop_duplicates()
    rows = samples.merge(last, on=["run_id", "iteration"])
    return {
        (int(run_id), name): group.set_index("sample_id")["value"].sort_index()
        for (run_id, name), group in rows.groupby(["run_id", "name"], sort=False)
    }


def run_row(group: pd.DataFrame, per_sample: Mapping[tuple[int, str], pd.Series], metric: str) -> Row:
    """The row of one algorithm's final runs (``group``: its final rows of ``metric``, by seed)."""
    group = group.sort_values("seed")
    series = [per_sample.get((int(run_id), metric)) for run_id in group["run_id"]]
    values = group["value"].to_numpy(dtype=float)
    if not series or any(s is None for s in series):
        return Row(values, None)
    shared = sorted(set.intersection(*(set(s.index) for s in series)))
    if len(shared) < 2:
        return Row(values, None)
    matrix = pd.DataFrame([s.loc[shared].to_numpy() for s in series], columns=shared)
    return Row(values, matrix)


def reference_row(row: ReferenceRow, metric: str) -> Row | None:
    """A floor's or ceiling's row of ``metric`` (deterministic), or None when it has no value."""
    if metric not in row.corpus:
        return None
    values = row.samples.get(metric)
    if not values or len(values) < 2:
        return Row(np.array([row.corpus[metric]]), None, deterministic=True)
    ids = sorted(values)
    return Row(np.array([row.corpus[metric]]), pd.DataFrame([[values[i] for i in ids]], columns=ids), True)


def summarize(
    final: pd.DataFrame,
    per_sample: Mapping[tuple[int, str], pd.Series],
    references: Mapping[str, Sequence[ReferenceRow]] | None = None,
) -> pd.DataFrame:
    """Per profile × task × row × metric: the mean, its 95% interval (seeds × samples where every
    seed has per-sample values, else seeds only), seeds and samples; a task's floors and ceiling
    as rows of every profile that has the task."""
    records = []
    for (profile, task, alg, metric), group in final.groupby(["profile", "task", "alg", "metric"], sort=True):
        row = run_row(group, per_sample, metric)
        records.append(_record(profile, task, alg, metric, row))
    for profile, task in final[["profile", "task"]].drop_duplicates().itertuples(index=False):
        for reference in (references or {}).get(task, []):
            for metric in sorted(reference.corpus):
                row = reference_row(reference, metric)
                if row is not None:
                    records.append(_record(profile, task, reference.name, metric, row))
    return pd.DataFrame.from_records(records, columns=SUMMARY_COLUMNS)


def _record(profile: str, task: str, alg: str, metric: str, row: Row) -> tuple:
    interval = row.interval()
    mean = float(row.seed_values.mean())
    shift = mean - interval.estimate  # 0 up to rounding: a row's samples are its runs' samples
    std = float(row.seed_values.std(ddof=1)) if row.seed_values.size >= 2 else np.nan
    samples = 0 if row.matrix is None else row.matrix.shape[1]
    return (
        profile, task, alg, metric, mean, interval.low + shift, interval.high + shift, std,
        int(row.seed_values.size), samples, interval.method,
    )  # fmt: skip


def difference(a: Row, b: Row) -> Interval:
    """A − B, paired by test sample over the samples both have; seeds only when either lacks them."""
    if a.matrix is not None and b.matrix is not None:
        shared = sorted(set(a.matrix.columns) & set(b.matrix.columns))
        if len(shared) >= 2:
            return difference_interval(
                a.matrix[shared].to_numpy(),
                b.matrix[shared].to_numpy(),
                a_deterministic=a.deterministic,
                b_deterministic=b.deterministic,
            )
    return seed_difference_interval(a.seed_values, b.seed_values)


SMOKE_PROFILES = ("tiny",)
"""Profiles that check the machinery runs, not what a method does: shown, never evidence."""
SMOKE_NOTE = (
    "A smoke profile: tiny models built from config check that every task, algorithm and metric runs "
    "end to end. Its numbers are no evidence about any method or about the paper's claims."
)

INTERNAL_COLUMNS = ["se", "df"]
"""Columns of ``improvement_table`` that only ``average_improvement`` reads (not exported)."""
IMPROVEMENT_COLUMNS = [
    "task", "metric", "alg_x", "alg_y", "probability", "ci_low", "ci_high", "se", "df", "n_x", "n_y",
    "method",
]  # fmt: skip


def headline_rows(
    final: pd.DataFrame, per_sample: Mapping[tuple[int, str], pd.Series], headlines: Mapping[str, Headline]
) -> dict[str, dict[str, Row]]:
    """Task -> algorithm -> its row of the task's headline (tasks whose runs logged it)."""
    found: dict[str, dict[str, Row]] = {}
    for task, head in sorted(headlines.items()):
        rows = final[(final["task"] == task) & (final["metric"] == head.metric)]
        if not rows.empty:
            found[task] = {alg: run_row(group, per_sample, head.metric) for alg, group in rows.groupby("alg")}
    return found


def improvement_table(
    rows: Mapping[str, Mapping[str, Row]], headlines: Mapping[str, Headline]
) -> pd.DataFrame:
    """Per task, P(X > Y) on the headline for every ordered pair of algorithms (``rows``:
    ``headline_rows``): per test sample with its interval (``intervals.improvement_interval``) where
    both rows have per-sample values, else rliable's over pairs of runs without one ('seeds only');
    nan under ``MIN_SEEDS`` seeds."""
    records = []
    for task, algs in sorted(rows.items()):
        head = headlines[task]
        for x, row_x in sorted(algs.items()):
            for y, row_y in sorted(algs.items()):
                if x == y:
                    continue
                found = _improvement(row_x, row_y, head.higher_is_better)
                sizes = (row_x.seed_values.size, row_y.seed_values.size)
                records.append(
                    (task, head.metric, x, y, found.estimate, found.low, found.high, found.se, found.df,
                     *sizes, found.method)
                )  # fmt: skip
    return pd.DataFrame.from_records(records, columns=IMPROVEMENT_COLUMNS)


def _improvement(x: Row, y: Row, higher_is_better: bool) -> Interval:
    """P(X > Y) per test sample with its interval, else over pairs of runs (no interval); nan
    under ``MIN_SEEDS`` seeds."""
    seeds = int(min(x.seed_values.size, y.seed_values.size))
    if seeds < MIN_SEEDS:
        return Interval(np.nan, np.nan, np.nan, np.nan, np.nan, seeds, 0, "seeds only")
    if x.matrix is not None and y.matrix is not None:
        shared = sorted(set(x.matrix.columns) & set(y.matrix.columns))
        if len(shared) >= 2:
            return improvement_interval(
                x.matrix[shared].to_numpy(), y.matrix[shared].to_numpy(), higher_is_better=higher_is_better
            )
    seeds = int(min(x.seed_values.size, y.seed_values.size))
    estimate = (
        probability_of_improvement(x.seed_values, y.seed_values, higher_is_better)
        if seeds >= MIN_SEEDS
        else np.nan
    )
    return Interval(estimate, np.nan, np.nan, np.nan, np.nan, seeds, 0, "seeds only")


def average_improvement(improvement: pd.DataFrame) -> pd.DataFrame:
    """P(X > Y) averaged over the tasks where both have one (rliable's overall probability of
    improvement), with the interval of that average when every task's has one: the tasks are
    independent, so its variance is the mean of their variances over T (Satterthwaite's df)."""
    columns = ["alg_x", "alg_y", "probability", "ci_low", "ci_high", "n_tasks"]
    records = []
    valid = improvement.dropna(subset=["probability"])
    for (x, y), group in valid.groupby(["alg_x", "alg_y"], sort=True):
        count = len(group)
        mean = float(group["probability"].mean())
        low = high = np.nan
        if group["se"].notna().all():
            terms = [
                (1 / count**2, np.asarray(se**2), df) for se, df in zip(group["se"], group["df"], strict=True)
            ]
            bounds = t_bounds(np.asarray(mean), terms, terms)
            low, high = max(0.0, float(bounds[0])), min(1.0, float(bounds[1]))
        records.append((x, y, mean, low, high, count))
    return pd.DataFrame.from_records(records, columns=columns)


# --- collapse -----------------------------------------------------------------------------------


def collapse_reasons(stats: Mapping[int, OutputStats | None]) -> str:
    """A row's collapse flag from its seeds' statistics (seed -> stats, None: no generations): the
    reasons of each flagged seed, '' when none is flagged."""
    parts = []
    for seed, found in sorted(stats.items()):
        reasons = found.reasons() if found else []
        if reasons:
            parts.append(f"seed {seed}: {', '.join(reasons)}")
    return "; ".join(parts)


# --- anchors and verdicts -------------------------------------------------------------------------


@dataclass(frozen=True)
class Anchors:
    """A task's fixed normalization: the best floor → 0, the human ceiling → 1 (None: left out)."""

    task: str
    floor_name: str | None
    floor: float | None
    ceiling: float | None
    excluded: str = ""
    """Why the task is left out of the overall score ('' when it is in)."""

    @property
    def usable(self) -> bool:
        return not self.excluded and self.floor is not None and self.ceiling is not None

    def normalize(self, values: np.ndarray) -> np.ndarray:
        """0 at the best floor, 1 at the ceiling, whichever the metric's direction."""
        assert self.floor is not None and self.ceiling is not None
        return (values - self.floor) / (self.ceiling - self.floor)


def anchored_scores(
    final: pd.DataFrame, metrics: Mapping[str, str], anchors: Mapping[str, Anchors]
) -> pd.DataFrame:
    """Each run's headline score (``metrics``: task -> headline key) on its task's fixed anchors;
    tasks without usable anchors have no rows."""
    columns = ["run_id", "task", "alg", "seed", "metric", "value", "normalized"]
    frames = []
    for task, metric in sorted(metrics.items()):
        anchor = anchors.get(task)
        rows = final[(final["task"] == task) & (final["metric"] == metric)]
        if anchor is None or not anchor.usable or rows.empty:
            continue
        frame = rows[columns[:-1]].copy()
        frame["normalized"] = anchor.normalize(frame["value"].to_numpy(dtype=float))
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def best_floor(
    references: Sequence[ReferenceRow], metric: str, higher_is_better: bool
) -> ReferenceRow | None:
    """The floor with the best value of ``metric`` (in its direction)."""
    floors = [r for r in references if r.is_floor and metric in r.corpus]
    if not floors:
        return None
    pick = max if higher_is_better else min
    return pick(floors, key=lambda r: r.corpus[metric])


def best_floor_row(
    references: Sequence[ReferenceRow], metric: str, higher_is_better: bool
) -> tuple[str, Row] | None:
    """The best floor's name and its row of ``metric``, or None when there is none."""
    floor = best_floor(references, metric, higher_is_better)
    row = reference_row(floor, metric) if floor else None
    return (floor.name, row) if floor and row else None


def anchors(task: str, references: Sequence[ReferenceRow], metric: str, higher_is_better: bool) -> Anchors:
    """The task's anchors on its headline ``metric``; why it is left out when it must be."""
    floor = best_floor(references, metric, higher_is_better)
    ceiling = next((r for r in references if not r.is_floor and metric in r.corpus), None)
    if floor is None or ceiling is None:
        missing = "floors" if floor is None else "human ceiling"
        return Anchors(task, None, None, None, f"no {missing} on its headline")
    low, high = floor.corpus[metric], ceiling.corpus[metric]
    reached = high <= low if higher_is_better else high >= low
    if reached:
        return Anchors(
            task,
            floor.name,
            low,
            high,
            f"its best floor ({floor.name}, {low:.3f}) reaches its human ceiling ({high:.3f})",
        )
    return Anchors(task, floor.name, low, high)


def floor_mark(row: Row, floor_row: Row | None, higher_is_better: bool) -> str:
    """'at floor' when the paired interval against the best floor holds 0, 'below floor' when the
    row is significantly worse than it, '' otherwise (or without an interval)."""
    if floor_row is None:
        return ""
    word = verdict(difference(row, floor_row), higher_is_better)
    return {"tie": "at floor", "worse": "below floor"}.get(word or "", "")
