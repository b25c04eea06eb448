"""Page data for the leaderboard: the overview and one page per task, as tables and images.

Computing the tables is separate from rendering them (``html.py`` only renders what is built here).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from grue_bench.report.aggregate import MIN_SEEDS, Headline
from grue_bench.report.schema import Leaderboard
from grue_bench.report.table import MISSING, Cell, Column, Table, fmt, interval_note, safe_link, sort_key
from grue_bench.store import Generation, RunRecord


@dataclass
class Image:
    """A plot on a page."""

    src: str
    alt: str


@dataclass
class Section:
    """A titled part of a page."""

    id: str
    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    images: list[Image] = field(default_factory=list)


@dataclass
class Page:
    """One HTML file."""

    filename: str
    title: str
    subtitle: str = ""
    notices: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)


@dataclass(frozen=True)
class TaskInfo:
    """A task as the pages show it."""

    id: str
    name: str
    filename: str
    headline: Headline | None


def arrow(higher_is_better: bool | None) -> str:
    """'↑' for higher is better, '↓' for lower, '' for neither."""
    if higher_is_better is None:
        return ""
    return " ↑" if higher_is_better else " ↓"


def submission_badge(runs: Sequence[RunRecord]) -> tuple[str, str]:
    """('submission', link) when any of the runs was submitted, else ('', '')."""
    for run in runs:
        if run.source == "submission":
            info = run.submission or {}
            return "submission", safe_link(info.get("link"))
    return "", ""


def alg_cell(alg: str, runs: Sequence[RunRecord]) -> Cell:
    """The algorithm's name, with a submission marker and link when it was submitted."""
    badge, link = submission_badge([run for run in runs if run.alg == alg])
    name = next(
        ((run.submission or {}).get("name") for run in runs if run.alg == alg and run.submission), None
    )
    title = f"submission: {name}" if isinstance(name, str) and name else ""
    return Cell(text=alg, sort=alg, badge=badge, badge_href=link, title=title)


def score_cell(row: pd.Series | None, decimals: int, rank: int | None = None) -> Cell:
    """Mean over seeds with its interval (or why there is none) and the rank when given."""
    if row is None:
        return Cell(text=MISSING)
    note = interval_note(row["ci_low"], row["ci_high"], int(row["n_seeds"]), decimals)
    if rank is not None:
        note += f" · rank {rank}"
    return Cell(text=fmt(row["mean"], decimals), sort=sort_key(row["mean"]), note=note)


def one_seed_notice(summary: pd.DataFrame) -> list[str]:
    """Names what has fewer than two seeds, whose intervals, ranks and P(improvement) are not shown."""
    few = summary[summary["n_seeds"] < MIN_SEEDS][["task", "alg"]].drop_duplicates()
    if few.empty:
        return []
    names = ", ".join(f"{row.alg} on {row.task}" for row in few.itertuples(index=False))
    return [
        f"Intervals are not available for {names}: with one seed there is no spread to estimate, "
        "so no interval, rank or probability of improvement is shown. Run at least 2 seeds "
        "(grue run --seeds 3)."
    ]


# --- overview -----------------------------------------------------------------------------------


def leaderboard_table(
    tasks: Sequence[TaskInfo],
    summary: pd.DataFrame,
    rank_table: pd.DataFrame,
    overall: pd.DataFrame,
    runs: Sequence[RunRecord],
    schema: Leaderboard,
) -> Table:
    """Algorithms × tasks: overall IQM, mean rank, then each task's headline mean with interval and rank."""
    ranked = [task for task in tasks if task.headline is not None]
    columns = [
        Column("Algorithm"),
        Column("Overall IQM ↑", "IQM of per-task normalized headline scores (0 = worst run, 1 = best)", True),
        Column("Mean rank ↓", "mean of the per-task ranks (tasks where the algorithm has 2+ seeds)", True),
    ]
    for task in ranked:
        spec = schema.metric(task.headline.metric)
        columns.append(Column(f"{task.name}: {spec.display}{arrow(spec.higher_is_better)}", task.id, True))
    rows = []
    for alg in _by_overall(overall, {run.alg for run in runs}):
        row = [alg_cell(alg, runs), _overall_cell(overall, alg), _mean_rank_cell(rank_table, alg)]
        for task in ranked:
            row.append(_headline_cell(summary, rank_table, task, alg, schema))
        rows.append(row)
    return Table("leaderboard", "Headline metric per task: mean over seeds", columns, rows)


def _by_overall(overall: pd.DataFrame, algs: set[str]) -> list[str]:
    """Best overall IQM first among algorithms with 2+ seeds on every task (never order on one
    seed); the others after them, by name."""
    ranked = overall[overall["min_seeds"] >= MIN_SEEDS]
    iqms = dict(zip(ranked["alg"], ranked["iqm"], strict=True))
    return sorted(algs, key=lambda alg: (alg not in iqms, -iqms.get(alg, 0.0), alg))


def _overall_cell(overall: pd.DataFrame, alg: str) -> Cell:
    match = overall[overall["alg"] == alg]
    if match.empty:
        return Cell(text=MISSING)
    row = match.iloc[0]
    note = interval_note(row["ci_low"], row["ci_high"], int(row["min_seeds"]), 3)
    note = note.replace("n=", "min seeds per task=") + f" · {int(row['n_tasks'])} task(s)"
    return Cell(text=fmt(row["iqm"]), sort=sort_key(row["iqm"]), note=note)


def _mean_rank_cell(rank_table: pd.DataFrame, alg: str) -> Cell:
    ranks = rank_table[rank_table["alg"] == alg]["rank"]
    if ranks.empty:
        return Cell(text=MISSING, note="not ranked (needs 2+ seeds)")
    mean = float(ranks.mean())
    return Cell(text=fmt(mean, 2), sort=mean, note=f"over {len(ranks)} task(s)")


def _headline_cell(
    summary: pd.DataFrame, rank_table: pd.DataFrame, task: TaskInfo, alg: str, schema: Leaderboard
) -> Cell:
    assert task.headline is not None
    metric = task.headline.metric
    row = _summary_row(summary, task.id, alg, metric)
    rank = rank_table[(rank_table["task"] == task.id) & (rank_table["alg"] == alg)]["rank"]
    cell = score_cell(row, schema.metric(metric).decimals, int(rank.iloc[0]) if not rank.empty else None)
    if row is not None:
        cell.href = task.filename
    return cell


def _summary_row(summary: pd.DataFrame, task: str, alg: str, metric: str) -> pd.Series | None:
    match = summary[(summary["task"] == task) & (summary["alg"] == alg) & (summary["metric"] == metric)]
    return None if match.empty else match.iloc[0]


def overall_improvement_table(average: pd.DataFrame) -> Table:
    """P(X > Y) averaged over tasks, per ordered pair of algorithms."""
    columns = [Column("Algorithm X"), Column("Algorithm Y"), Column("P(X > Y)", numeric=True)]
    columns.append(Column("Tasks", "tasks where both have 2+ seeds", True))
    rows = [
        [
            Cell(text=row.alg_x, sort=row.alg_x),
            Cell(text=row.alg_y, sort=row.alg_y),
            Cell(text=fmt(row.probability, 2), sort=sort_key(row.probability)),
            Cell(text=str(int(row.n_tasks)), sort=int(row.n_tasks)),
        ]
        for row in average.itertuples(index=False)
    ]
    table = Table("improvement-overall", "Probability of improvement, averaged over tasks", columns, rows)
    if not rows:
        table.notes.append("Not available: it needs two algorithms with 2+ seeds on a common task.")
    return table


def tasks_table(tasks: Sequence[TaskInfo], runs: Sequence[RunRecord], schema: Leaderboard) -> Table:
    """The tasks with their headline metric and how many algorithms and runs they have."""
    columns = [Column("Task"), Column("Id"), Column("Headline metric")]
    columns += [Column("Algorithms", numeric=True), Column("Runs", numeric=True)]
    rows = []
    for task in tasks:
        task_runs = [run for run in runs if run.task == task.id]
        headline = (
            schema.metric(task.headline.metric).display + arrow(task.headline.higher_is_better)
            if task.headline
            else "not declared in the leaderboard schema"
        )
        n_algs = len({run.alg for run in task_runs})
        rows.append(
            [
                Cell(text=task.name, sort=task.name, href=task.filename),
                Cell(text=task.id, sort=task.id),
                Cell(text=headline, sort=headline),
                Cell(text=str(n_algs), sort=n_algs),
                Cell(text=str(len(task_runs)), sort=len(task_runs)),
            ]
        )
    return Table("tasks", "Tasks", columns, rows)


# --- task page ----------------------------------------------------------------------------------


def metrics_table(
    task: TaskInfo,
    metrics: Sequence[str],
    summary: pd.DataFrame,
    rank_table: pd.DataFrame,
    runs: Sequence[RunRecord],
    schema: Leaderboard,
    *,
    table_id: str,
    caption: str,
) -> Table:
    """Algorithms × metrics of one task: mean over seeds with its interval; seeds, models, rank."""
    columns = [Column("Algorithm"), Column("Models"), Column("Seeds", numeric=True)]
    columns.append(Column("Rank", "rank on the headline metric among algorithms with 2+ seeds", True))
    for metric in metrics:
        spec = schema.metric(metric)
        columns.append(Column(spec.display + arrow(spec.higher_is_better), spec.description or metric, True))
    rows = []
    for alg in sorted({run.alg for run in runs}):
        alg_runs = [run for run in runs if run.alg == alg]
        models = ", ".join(sorted({run.model or "unknown" for run in alg_runs}))
        rank = rank_table[(rank_table["task"] == task.id) & (rank_table["alg"] == alg)]["rank"]
        rank_cell = (
            Cell(text=str(int(rank.iloc[0])), sort=int(rank.iloc[0])) if not rank.empty else Cell(MISSING)
        )
        row = [alg_cell(alg, runs), Cell(text=models, sort=models)]
        row += [Cell(text=str(len(alg_runs)), sort=len(alg_runs)), rank_cell]
        row += [
            score_cell(_summary_row(summary, task.id, alg, m), schema.metric(m).decimals) for m in metrics
        ]
        rows.append(row)
    return Table(table_id, caption, columns, rows)


def improvement_table(task: TaskInfo, improvement: pd.DataFrame) -> Table:
    """P(X > Y) on the task's headline metric for every ordered pair of algorithms."""
    columns = [Column("Algorithm X"), Column("Algorithm Y"), Column("P(X > Y)", numeric=True)]
    columns += [Column("Seeds X", numeric=True), Column("Seeds Y", numeric=True)]
    rows = []
    for row in improvement[improvement["task"] == task.id].itertuples(index=False):
        probability = (
            Cell(text=fmt(row.probability, 2), sort=sort_key(row.probability))
            if np.isfinite(row.probability)
            else Cell(text=MISSING, note="needs 2+ seeds each")
        )
        rows.append(
            [
                Cell(text=row.alg_x, sort=row.alg_x),
                Cell(text=row.alg_y, sort=row.alg_y),
                probability,
                Cell(text=str(row.n_x), sort=int(row.n_x)),
                Cell(text=str(row.n_y), sort=int(row.n_y)),
            ]
        )
    table = Table("improvement", "Probability of improvement on the headline metric", columns, rows)
    table.notes.append(
        "P(X > Y): over every pair of a run of X and a run of Y, the share where X scores better "
        "(ties count half)."
    )
    return table


def samples_table(
    sample_ids: Sequence[str], chosen: Mapping[str, tuple[RunRecord, Mapping[str, Generation]]]
) -> Table:
    """The same prompts side by side: prompt, references, then one column per algorithm."""
    algs = sorted(chosen)
    columns = [Column("Prompt"), Column("References")]
    for alg in algs:
        run = chosen[alg][0]
        columns.append(Column(f"{alg} (seed {run.seed})", run.model or ""))
    rows = []
    for sample_id in sample_ids:
        first = next(samples[sample_id] for _, samples in chosen.values() if sample_id in samples)
        references = "\n".join(f"• {reference}" for reference in first["references"])
        row = [
            Cell(text=first["prompt"], pre=True, note=f"sample {sample_id}"),
            Cell(text=references, pre=True),
        ]
        for alg in algs:
            sample = chosen[alg][1].get(sample_id)
            row.append(Cell(text=sample["text"], pre=True) if sample else Cell(text=MISSING))
        rows.append(row)
    return Table("samples", "Sample generations (test split, final iteration)", columns, rows, sortable=False)


def ratings_table(ratings: pd.DataFrame, table_id: str = "ratings", caption: str = "Human ratings") -> Table:
    """Human ratings per system and axis: mean with interval over ratings, counts."""
    columns = [Column("System"), Column("Axis"), Column("Mean rating", numeric=True)]
    columns += [Column("Ratings", numeric=True), Column("Workers", numeric=True)]
    rows = []
    for row in ratings.itertuples(index=False):
        mean = Cell(text=fmt(row.mean, 2), sort=sort_key(row.mean))
        mean.note = interval_note(row.ci_low, row.ci_high, int(row.n_ratings), 2).replace("n=", "ratings=")
        rows.append(
            [
                Cell(text=row.system, sort=row.system),
                Cell(text=row.axis, sort=row.axis),
                mean,
                Cell(text=str(row.n_ratings), sort=int(row.n_ratings)),
                Cell(text=str(row.n_workers), sort=int(row.n_workers)),
            ]
        )
    return Table(table_id, caption, columns, rows)


def runs_table(runs: Sequence[RunRecord]) -> Table:
    """Every counted run of the task with its provenance and resolved config."""
    names = ["Run", "Algorithm", "Seed", "Model", "Profile", "Source", "Status", "Commit", "Duration (s)"]
    columns = [Column(name, numeric=name in ("Seed", "Duration (s)")) for name in names] + [Column("Config")]
    rows = []
    for run in runs:
        badge, link = submission_badge([run])
        duration = run.duration_s
        rows.append(
            [
                Cell(text=run.key[:10], sort=run.key, title=run.key),
                Cell(text=run.alg, sort=run.alg, badge=badge, badge_href=link),
                Cell(text=str(run.seed), sort=run.seed),
                Cell(text=run.model or "unknown", sort=run.model or ""),
                Cell(text=run.profile, sort=run.profile),
                Cell(text=run.source, sort=run.source),
                Cell(text=run.status, sort=run.status),
                Cell(
                    text=(run.git_commit or MISSING)[:10],
                    sort=run.git_commit or "",
                    title=run.git_commit or "",
                ),
                Cell(text=fmt(duration, 1), sort=sort_key(duration)),
                Cell(text="config", details=json.dumps(run.config, indent=2, sort_keys=True)),
            ]
        )
    return Table("runs", "Runs", columns, rows)
