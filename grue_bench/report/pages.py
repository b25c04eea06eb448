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
from grue_bench.report.collapse import OutputStats
from grue_bench.report.evidence import CEILING_PREFIX, Anchors, is_reference
from grue_bench.report.results import ProfileResults
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
    metric_order: tuple[str, ...] = ()
    """The keys of the task's own suite, in its order (empty: a task not registered here)."""


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


def score_cell(
    row: pd.Series | None, decimals: int, rank: int | None = None, *, collapse: str = "", mark: str = ""
) -> Cell:
    """Mean over seeds with its interval (or why there is none), what it accounts for, the rank
    when given, a collapse flag (shown, never ranked) and a floor mark."""
    if row is None:
        return Cell(text=MISSING)
    if is_reference(str(row["alg"])):
        note = interval_note(row["ci_low"], row["ci_high"], int(row["n_samples"]), decimals)
        note = note.replace("n=", "samples=") if int(row["n_samples"]) else "no per-sample values"
    else:
        note = interval_note(row["ci_low"], row["ci_high"], int(row["n_seeds"]), decimals)
        if row["method"] == "seeds only":
            note += " · seeds only"
        elif int(row["n_samples"]):
            note += f" × {int(row['n_samples'])} samples"
    if rank is not None:
        note += f" · rank {rank}"
    if mark:
        note += f" · {mark}"
    cell = Cell(text=fmt(row["mean"], decimals), sort=sort_key(row["mean"]), note=note)
    if collapse:
        cell.flag = "collapsed"
        cell.title = f"collapsed, not ranked: {collapse}"
    return cell


def one_seed_notice(summary: pd.DataFrame, profile: str = "") -> list[str]:
    """Names what has fewer than two seeds, whose intervals, ranks and P(improvement) are not shown."""
    few = summary[summary["n_seeds"] < MIN_SEEDS][["task", "alg"]].drop_duplicates()
    if few.empty:
        return []
    names = ", ".join(f"{row.alg} on {row.task}" for row in few.itertuples(index=False))
    where = f"Profile {profile}: i" if profile else "I"
    return [
        f"{where}ntervals are not available for {names}: with one seed there is no spread to estimate, "
        "so no interval, rank or probability of improvement is shown. Run at least 2 seeds "
        "(grue run --seeds 3)."
    ]


# --- overview -----------------------------------------------------------------------------------


def leaderboard_table(
    tasks: Sequence[TaskInfo],
    found: ProfileResults,
    runs: Sequence[RunRecord],
    schema: Leaderboard,
    *,
    table_id: str,
) -> Table:
    """One profile's algorithms (then the floors and the ceiling) × tasks: overall IQM, mean rank,
    then each task's headline mean with interval, rank, collapse flag and floor mark."""
    ranked = [task for task in tasks if task.headline is not None]
    columns = [
        Column("Algorithm"),
        Column(
            "Overall IQM ↑",
            "IQM of per-task headline scores on fixed anchors (best floor 0, human ceiling 1)",
            True,
        ),
        Column(
            "Mean rank ↓", "mean of the per-task ranks (tasks where the row has 2+ seeds and no flag)", True
        ),
    ]
    for task in ranked:
        spec = schema.metric(task.headline.metric)
        columns.append(Column(f"{task.name}: {spec.display}{arrow(spec.higher_is_better)}", task.id, True))
    rows = []
    references = reference_names(found.summary)
    for alg in [*_by_overall(found.overall, {run.alg for run in runs}), *references]:
        row = [alg_cell(alg, runs), _overall_cell(found.overall, alg), _mean_rank_cell(found.ranks, alg)]
        for task in ranked:
            row.append(_headline_cell(found, task, alg, schema))
        rows.append(row)
    return Table(table_id, "Headline metric per task: mean over seeds", columns, rows)


def reference_names(summary: pd.DataFrame) -> list[str]:
    """The floor and ceiling rows of a summary: floors first (by name), then the ceiling."""
    return sorted(
        {a for a in summary["alg"] if is_reference(a)}, key=lambda a: (a.startswith(CEILING_PREFIX), a)
    )


def anchors_table(
    tasks: Sequence[TaskInfo], anchors: Mapping[str, Anchors], schema: Leaderboard, table_id: str
) -> Table:
    """Each task's fixed anchors of the overall score, or why it is left out."""
    columns = [Column("Task"), Column("Headline"), Column("Best floor"), Column("Floor (= 0)", numeric=True)]
    columns += [Column("Human ceiling (= 1)", numeric=True), Column("In the overall score")]
    rows = []
    for task in tasks:
        anchor = anchors.get(task.id)
        if task.headline is None or anchor is None:
            continue
        decimals = schema.metric(task.headline.metric).decimals
        rows.append(
            [
                Cell(text=task.name, sort=task.name, href=task.filename),
                Cell(text=schema.metric(task.headline.metric).display),
                Cell(text=anchor.floor_name or MISSING),
                Cell(text=fmt(anchor.floor, decimals), sort=sort_key(anchor.floor)),
                Cell(text=fmt(anchor.ceiling, decimals), sort=sort_key(anchor.ceiling)),
                Cell(text=f"no: {anchor.excluded}" if anchor.excluded else "yes"),
            ]
        )
    table = Table(table_id, "Overall-score anchors", columns, rows)
    table.notes.append(
        "A task's headline scores are normalized so that its best floor is 0 and its human ceiling 1; "
        "a task whose best floor reaches its ceiling cannot be normalized and is left out. The anchors "
        "are fixed: adding a run or a submission moves no other row's score."
    )
    return table


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
        return Cell(
            text=MISSING, note="not ranked" if is_reference(alg) else "not ranked (2+ seeds, no flag)"
        )
    mean = float(ranks.mean())
    return Cell(text=fmt(mean, 2), sort=mean, note=f"over {len(ranks)} task(s)")


def _headline_cell(found: ProfileResults, task: TaskInfo, alg: str, schema: Leaderboard) -> Cell:
    assert task.headline is not None
    metric = task.headline.metric
    row = _summary_row(found.summary, task.id, alg, metric)
    rank = found.ranks[(found.ranks["task"] == task.id) & (found.ranks["alg"] == alg)]["rank"]
    cell = score_cell(
        row,
        schema.metric(metric).decimals,
        int(rank.iloc[0]) if not rank.empty else None,
        collapse=found.flags.get((task.id, alg), ""),
        mark=found.marks.get((task.id, alg), ""),
    )
    if row is not None:
        cell.href = task.filename
    return cell


def _summary_row(summary: pd.DataFrame, task: str, alg: str, metric: str) -> pd.Series | None:
    match = summary[(summary["task"] == task) & (summary["alg"] == alg) & (summary["metric"] == metric)]
    return None if match.empty else match.iloc[0]


def overall_improvement_table(average: pd.DataFrame, table_id: str = "improvement-overall") -> Table:
    """P(X > Y) averaged over tasks, per ordered pair of algorithms."""
    columns = [Column("Algorithm X"), Column("Algorithm Y"), Column("P(X > Y)", numeric=True)]
    columns.append(Column("Tasks", "tasks where both have 2+ seeds", True))
    rows = [
        [
            Cell(text=row.alg_x, sort=row.alg_x),
            Cell(text=row.alg_y, sort=row.alg_y),
            _probability_cell(row.probability, row.ci_low, row.ci_high),
            Cell(text=str(int(row.n_tasks)), sort=int(row.n_tasks)),
        ]
        for row in average.itertuples(index=False)
    ]
    table = Table(table_id, "Probability of improvement, averaged over tasks", columns, rows)
    if not rows:
        table.notes.append(
            "Probability of improvement: not available (it needs two unflagged algorithms with 2+ seeds "
            "on a common task)."
        )
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
    summary: pd.DataFrame,
    found: ProfileResults,
    runs: Sequence[RunRecord],
    schema: Leaderboard,
    metrics: Sequence[str],
    *,
    table_id: str,
    caption: str,
) -> Table:
    """One profile's algorithms (then floors and ceiling) × metrics of one task: mean with its
    interval; seeds, models, rank, collapse flag."""
    columns = [Column("Algorithm"), Column("Models"), Column("Seeds", numeric=True)]
    columns.append(Column("Rank", "rank on the headline metric among unflagged rows with 2+ seeds", True))
    columns.append(Column("Collapse", "why the row is flagged: shown, never ranked"))
    for metric in metrics:
        spec = schema.metric(metric)
        columns.append(Column(spec.display + arrow(spec.higher_is_better), spec.description or metric, True))
    rows = []
    references = reference_names(summary)
    for alg in [*sorted({run.alg for run in runs}), *references]:
        alg_runs = [run for run in runs if run.alg == alg]
        models = ", ".join(sorted({run.model or "unknown" for run in alg_runs})) or MISSING
        rank = found.ranks[(found.ranks["task"] == task.id) & (found.ranks["alg"] == alg)]["rank"]
        rank_cell = (
            Cell(text=str(int(rank.iloc[0])), sort=int(rank.iloc[0])) if not rank.empty else Cell(MISSING)
        )
        flag = found.flags.get((task.id, alg), "")
        seeds = len(alg_runs) if alg_runs else MISSING
        row = [alg_cell(alg, runs), Cell(text=models, sort=models)]
        row += [Cell(text=str(seeds), sort=len(alg_runs)), rank_cell]
        row.append(Cell(text=flag or "", sort=flag, flag="collapsed" if flag else ""))
        mark = found.marks.get((task.id, alg), "")
        row += [
            score_cell(
                _summary_row(summary, task.id, alg, m),
                schema.metric(m).decimals,
                mark=mark if task.headline and m == task.headline.metric else "",
            )
            for m in metrics
        ]
        rows.append(row)
    return Table(table_id, caption, columns, rows)


def verdicts_table(verdicts: pd.DataFrame, schema: Leaderboard, table_id: str) -> Table:
    """Paired differences on the headline: every pair of algorithms and each against the best floor."""
    columns = [Column("Row A"), Column("Row B"), Column("A − B", numeric=True), Column("95% interval")]
    columns += [Column("Verdict", "better / worse in the metric's direction; tie: the interval holds 0")]
    columns += [Column("Paired over")]
    rows = []
    for row in verdicts.itertuples(index=False):
        decimals = schema.metric(row.metric).decimals + 1
        over = f"seeds × {row.n_samples} samples" if row.method == "seeds×samples" else "seeds only"
        rows.append(
            [
                Cell(text=row.row_a, sort=row.row_a),
                Cell(text=row.row_b, sort=row.row_b),
                Cell(text=fmt(row.difference, decimals), sort=sort_key(row.difference)),
                Cell(text=f"[{fmt(row.ci_low, decimals)}, {fmt(row.ci_high, decimals)}]"),
                Cell(text=row.verdict or MISSING, sort=row.verdict),
                Cell(text=over),
            ]
        )
    table = Table(table_id, "Paired differences on the headline metric", columns, rows)
    table.notes.append(
        "A − B with its 95% interval over both rows' seeds and the test samples they share, paired by "
        "sample (README: how). 'better' and 'worse' only where the interval excludes 0."
    )
    return table


def improvement_table(task: TaskInfo, improvement: pd.DataFrame, table_id: str = "improvement") -> Table:
    """P(X > Y) on the task's headline metric for every ordered pair of algorithms."""
    columns = [Column("Algorithm X"), Column("Algorithm Y"), Column("P(X > Y)", numeric=True)]
    columns += [Column("Seeds X", numeric=True), Column("Seeds Y", numeric=True)]
    rows = []
    for row in improvement[improvement["task"] == task.id].itertuples(index=False):
        probability = (
            _probability_cell(row.probability, row.ci_low, row.ci_high)
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
    table = Table(table_id, "Probability of improvement on the headline metric", columns, rows)
    table.notes.append(
        "P(X > Y): for a random test sample and a random seed of each, the chance that X scores better "
        "(ties count half), with its 95% interval over seeds and test samples (README: how); over pairs "
        "of runs, without an interval, where per-sample scores are missing. Rows flagged as collapsed "
        "are left out."
    )
    return table


def _probability_cell(probability: float, low: float, high: float) -> Cell:
    """P(X > Y) with its interval, when it has one."""
    cell = Cell(text=fmt(probability, 2), sort=sort_key(probability))
    if np.isfinite(low) and np.isfinite(high):
        cell.note = f"95% CI [{fmt(low, 2)}, {fmt(high, 2)}]"
    return cell


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


def runs_table(runs: Sequence[RunRecord], collapse: Mapping[int, OutputStats]) -> Table:
    """Every counted run of the task with its provenance, its collapse statistics and resolved config."""
    names = ["Run", "Algorithm", "Seed", "Model", "Profile", "Source", "Status", "Commit", "Duration (s)"]
    names += ["Empty", "Distinct", "Length ratio", "Repeated 4-grams", "Collapse"]
    numeric = ("Seed", "Duration (s)", "Empty", "Distinct", "Length ratio", "Repeated 4-grams")
    columns = [Column(name, numeric=name in numeric) for name in names] + [Column("Config")]
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
                *_collapse_cells(collapse.get(run.id)),
                Cell(text="config", details=json.dumps(run.config, indent=2, sort_keys=True)),
            ]
        )
    return Table("runs", "Runs", columns, rows)


def _collapse_cells(stats: OutputStats | None) -> list[Cell]:
    """A run's collapse statistics and flag (dashes when it stored no test generations)."""
    if stats is None:
        return [Cell(text=MISSING) for _ in range(5)]
    reasons = "; ".join(stats.reasons())
    return [
        Cell(text=fmt(stats.empty, 2), sort=stats.empty),
        Cell(text=fmt(stats.distinct, 2), sort=stats.distinct),
        Cell(text=fmt(stats.length_ratio, 2), sort=sort_key(stats.length_ratio)),
        Cell(text=fmt(stats.repeated_4grams, 2), sort=stats.repeated_4grams),
        Cell(text=reasons, sort=reasons, flag="collapsed" if reasons else ""),
    ]
