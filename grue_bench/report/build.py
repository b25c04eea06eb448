"""``grue report``: read a store, compute the tables, draw the plots, write exports and HTML."""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from grue_bench import plugins
from grue_bench.errors import GrueError
from grue_bench.report import aggregate, pages, plots
from grue_bench.report.collect import StoreData, read_store, sample_generations
from grue_bench.report.exports import write_table
from grue_bench.report.html import render_pages
from grue_bench.report.pages import Image, Page, Section, TaskInfo
from grue_bench.report.schema import Leaderboard, load_schema
from grue_bench.report.table import Cell, Column, Table
from grue_bench.store import Store
from grue_bench.tasks import GRUE_TASKS, TaskSpec

log = logging.getLogger(__name__)

PLOTS_DIR = "plots"


@dataclass
class Results:
    """Every aggregate table of a report."""

    final: pd.DataFrame
    summary: pd.DataFrame
    ranks: pd.DataFrame
    improvement: pd.DataFrame
    average_improvement: pd.DataFrame
    normalized: pd.DataFrame
    overall: pd.DataFrame
    ratings: pd.DataFrame


def build_report(store_path: str | Path, out_dir: str | Path, schema_path: str | Path | None = None) -> Path:
    """Write the leaderboard (index.html, one page per task, plots, CSV/JSON) and return index.html."""
    schema = load_schema(schema_path)
    store_path, out = Path(store_path), Path(out_dir)
    if not store_path.is_file():
        raise GrueError(
            "results store not found", source=str(store_path), fix="give --store, or run `grue run` first"
        )
    with Store(store_path) as store:
        data = read_store(store)
        if not data.runs:
            raise GrueError(
                "has no finished or submitted runs to report",
                source=str(store_path),
                fix="finish some runs with `grue run` (see `grue runs --store ...` for their status)",
            )
        samples = {task: sample_generations(store, data.task_runs(task)) for task in data.tasks}
    tasks = task_infos(data.tasks, schema)
    results = compute(data, schema, tasks)
    (out / PLOTS_DIR).mkdir(parents=True, exist_ok=True)
    palette = plots.colors(sorted({run.alg for run in data.runs}))
    built = [overview_page(data, schema, tasks, results, out, palette, store_path.name)]
    for task in tasks:
        built.append(task_page(task, data, schema, results, samples[task.id], out, palette))
    nav = [(task.name, task.filename) for task in tasks]
    template_for = {"index.html": "overview.html.j2"}
    render_pages(built, out, template_for=template_for, nav=nav)
    log.info("report written to %s (%d task pages)", out, len(tasks))
    return out / "index.html"


def task_infos(task_ids: list[str], schema: Leaderboard) -> list[TaskInfo]:
    """GRUE's tasks in the paper's order, then the other registered ones, then the unknown ones, each by
    display name; with page files and headlines (each task's own, its direction from the schema)."""
    order = {task: i for i, task in enumerate(GRUE_TASKS)}
    specs = {task: registered_task(task) for task in task_ids}
    names = {task: _display_name(task, spec) for task, spec in specs.items()}
    rank = {task: (order.get(task, len(order)), specs[task] is None, names[task]) for task in task_ids}
    ordered = sorted(task_ids, key=rank.__getitem__)
    headlines = schema.headlines(
        {task: spec.headline.metric for task, spec in specs.items() if spec and spec.headline}
    )
    return [TaskInfo(task, names[task], f"task-{slug(task)}.html", headlines.get(task)) for task in ordered]


def registered_task(task: str) -> TaskSpec | None:
    """The task's plugin, or None when the task is not registered here (a store from elsewhere)."""

    try:
        return plugins.TASKS.get(task)
    except GrueError:
        return None


def _display_name(task: str, spec: TaskSpec | None) -> str:
    """The task's display name from its plugin, or its id."""
    return (spec.name if spec else "") or task


def slug(text: str) -> str:
    """A file-name-safe form of ``text``, with a short hash when characters had to be replaced."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "task"
    return safe if safe == text else f"{safe}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"


def compute(data: StoreData, schema: Leaderboard, tasks: list[TaskInfo]) -> Results:
    """The aggregate tables from the store's final test scores."""
    headlines = {task.id: task.headline for task in tasks if task.headline is not None}
    final = aggregate.final_scores(data.metrics)
    for task, headline in headlines.items():
        if final[(final["task"] == task) & (final["metric"] == headline.metric)].empty:
            log.warning("task %s: no run logged its headline metric %s on test", task, headline.metric)
    summary = aggregate.summarize(final)
    improvement = aggregate.improvement_table(final, headlines)
    normalized = aggregate.normalized_scores(final, headlines)
    return Results(
        final=final,
        summary=summary,
        ranks=aggregate.ranks(summary, headlines),
        improvement=improvement,
        average_improvement=aggregate.average_improvement(improvement),
        normalized=normalized,
        overall=aggregate.overall_table(normalized),
        ratings=aggregate.ratings_table(data.ratings),
    )


def with_display(frame: pd.DataFrame, schema: Leaderboard) -> pd.DataFrame:
    """``frame`` with a ``display`` column (the metric's display name) after ``metric``."""
    frame = frame.copy()
    frame.insert(
        frame.columns.get_loc("metric") + 1, "display", [schema.metric(m).display for m in frame["metric"]]
    )
    return frame


# --- overview -----------------------------------------------------------------------------------


def overview_page(
    data: StoreData,
    schema: Leaderboard,
    tasks: list[TaskInfo],
    results: Results,
    out: Path,
    palette: dict[str, str],
    store_name: str,
) -> Page:
    """The leaderboard people open first."""
    n_submitted = sum(run.source == "submission" for run in data.runs)
    algs = sorted({run.alg for run in data.runs})
    subtitle = (
        f"{len(data.runs)} runs ({n_submitted} submitted) of {len(algs)} algorithms on {len(tasks)} tasks, "
        f"from {store_name}; final test scores."
    )
    page = Page(
        "index.html", "GRUE Bench leaderboard", subtitle, notices=_overview_notices(data, tasks, results)
    )
    headline_rows = _headline_summary(tasks, results)
    board = pages.leaderboard_table(tasks, results.summary, results.ranks, results.overall, data.runs, schema)
    board.exports = write_table(headline_rows, out, "leaderboard") + [
        (f"overall {label}", href) for label, href in write_table(results.overall, out, "overall")
    ]
    board.notes.append(
        "Each cell: mean of the final test score over seeds, its 95% bootstrap interval, the number of "
        "seeds and the rank among algorithms with 2+ seeds. Overall: interquartile mean of per-task "
        "min-max normalized headline scores (0 = worst run on the task, 1 = best), with a 95% stratified "
        "bootstrap interval; it is relative to the runs in this store."
    )
    leaderboard = Section("leaderboard", "Leaderboard", tables=[board])
    if not results.overall.empty:
        path = plots.overall_iqm(results.overall, palette, out / PLOTS_DIR / "overall-iqm.png")
        leaderboard.images.append(Image(f"{PLOTS_DIR}/{path.name}", "Overall IQM of normalized scores"))
    average = pages.overall_improvement_table(results.average_improvement)
    average.exports = write_table(results.average_improvement, out, "improvement_overall")
    improvement = Section("improvement", "Probability of improvement")
    if average.rows:
        improvement.tables.append(average)
    else:
        improvement.paragraphs += average.notes
    task_table = pages.tasks_table(tasks, data.runs, schema)
    downloads = Section("data", "Data", paragraphs=["Every table of the report, as CSV and JSON:"])
    everything = Table("exports", "All tables", [Column("Table"), Column("CSV"), Column("JSON")], [])
    for stem, frame in _all_tables(results, schema).items():
        (_, csv), (_, json) = write_table(frame, out, stem)
        everything.rows.append([Cell(stem, sort=stem), Cell(csv, href=csv), Cell(json, href=json)])
    downloads.tables.append(everything)
    page.sections = [leaderboard, improvement, Section("tasks", "Tasks", tables=[task_table])]
    if not results.ratings.empty:
        page.sections.append(_ratings_overview(tasks, results.ratings))
    page.sections.append(downloads)
    return page


def _ratings_overview(tasks: list[TaskInfo], ratings: pd.DataFrame) -> Section:
    """Every task's human ratings, one table each, on the overview."""
    section = Section("ratings", "Human ratings")
    for task in tasks:
        rows = ratings[ratings["task"] == task.id]
        if not rows.empty:
            section.tables.append(pages.ratings_table(rows, f"ratings-{slug(task.id)}", task.name))
    return section


def _overview_notices(data: StoreData, tasks: list[TaskInfo], results: Results) -> list[str]:
    headline_rows = _headline_summary(tasks, results)
    notices = pages.one_seed_notice(headline_rows)
    if data.not_counted:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(data.not_counted.items()))
        notices.append(f"Runs not counted (only finished and submitted runs are): {counts}.")
    ranked = [task for task in tasks if task.headline is not None]
    partial = results.overall[results.overall["n_tasks"] < len(ranked)]["alg"].tolist()
    if partial:
        notices.append(
            f"Not every algorithm has results on every task ({', '.join(partial)}): overall scores over "
            "different sets of tasks are not directly comparable."
        )
    return notices


def _headline_summary(tasks: list[TaskInfo], results: Results) -> pd.DataFrame:
    """The summary rows of each task's headline metric, with task names and ranks."""
    frames = []
    for task in tasks:
        if task.headline is None:
            continue
        rows = results.summary[
            (results.summary["task"] == task.id) & (results.summary["metric"] == task.headline.metric)
        ]
        frames.append(rows.assign(task_name=task.name, higher_is_better=task.headline.higher_is_better))
    columns = [*aggregate.SUMMARY_COLUMNS, "task_name", "higher_is_better", "rank"]
    if not frames:
        return pd.DataFrame(columns=columns)
    merged = pd.concat(frames, ignore_index=True).merge(results.ranks, on=["task", "alg"], how="left")
    merged["rank"] = merged["rank"].astype("Int64")
    return merged[columns]


def _all_tables(results: Results, schema: Leaderboard) -> dict[str, pd.DataFrame]:
    return {
        "summary": with_display(results.summary, schema),
        "final_scores": with_display(results.final, schema),
        "improvement": results.improvement,
        "normalized_scores": results.normalized,
        "ranks": results.ranks,
        "human_ratings": results.ratings,
    }


# --- task pages ---------------------------------------------------------------------------------


def task_page(
    task: TaskInfo,
    data: StoreData,
    schema: Leaderboard,
    results: Results,
    samples: tuple[list[str], dict],
    out: Path,
    palette: dict[str, str],
) -> Page:
    """All metrics, P(improvement), plots, sample generations, human ratings and runs of one task."""
    runs = data.task_runs(task.id)
    summary = results.summary[results.summary["task"] == task.id]
    stem = f"task-{slug(task.id)}"
    page = Page(task.filename, task.name, f"Task '{task.id}': final test scores of {len(runs)} runs.")
    page.notices = pages.one_seed_notice(summary)
    if task.headline is None:
        page.notices.append(
            f"No headline metric is declared for '{task.id}' in the leaderboard schema: algorithms are "
            "not ranked and the task is not part of the overall score."
        )
    metric_keys = _ordered_metrics(summary["metric"].unique().tolist(), task, schema)
    own = [m for m in metric_keys if not schema.metric(m).naturalness]
    natural = [m for m in metric_keys if schema.metric(m).naturalness]
    scores = Section("scores", "Scores")
    if task.headline is not None:
        spec = schema.metric(task.headline.metric)
        scores.paragraphs.append(f"Headline metric: {spec.display}{pages.arrow(spec.higher_is_better)}.")
    metric_table = pages.metrics_table(
        task, own, summary, results.ranks, runs, schema, table_id="metrics", caption="Task metrics"
    )
    metric_table.exports = write_table(with_display(summary, schema), out, f"{stem}-summary")
    scores.tables.append(metric_table)
    if natural:
        scores.tables.append(
            pages.metrics_table(
                task,
                natural,
                summary,
                results.ranks,
                runs,
                schema,
                table_id="naturalness",
                caption="Naturalness: fluency and diversity",
            )
        )
    page.sections.append(scores)
    if task.headline is not None and summary["alg"].nunique() > 1:
        table = pages.improvement_table(task, results.improvement)
        table.exports = write_table(
            results.improvement[results.improvement["task"] == task.id], out, f"{stem}-improvement"
        )
        page.sections.append(Section("improvement", "Probability of improvement", tables=[table]))
    page.sections.append(_plots_section(task, data, schema, results, out, palette, stem))
    sample_ids, chosen = samples
    if sample_ids:
        page.sections.append(
            Section("samples", "Sample generations", tables=[pages.samples_table(sample_ids, chosen)])
        )
    ratings = results.ratings[results.ratings["task"] == task.id]
    if not ratings.empty:
        table = pages.ratings_table(ratings)
        table.exports = write_table(ratings, out, f"{stem}-ratings")
        page.sections.append(Section("ratings", "Human ratings", tables=[table]))
    runs_table = pages.runs_table(runs)
    final = results.final[results.final["task"] == task.id]
    runs_table.exports = write_table(with_display(final, schema), out, f"{stem}-final_scores")
    page.sections.append(Section("runs", "Runs", tables=[runs_table]))
    return page


def _ordered_metrics(keys: list[str], task: TaskInfo, schema: Leaderboard) -> list[str]:
    """The headline first, then the schema's order, then undeclared keys alphabetically."""
    order = {key: i for i, key in enumerate(schema.metrics)}
    headline = task.headline.metric if task.headline else None
    return sorted(keys, key=lambda key: (key != headline, order.get(key, len(order)), key))


def _plots_section(
    task: TaskInfo,
    data: StoreData,
    schema: Leaderboard,
    results: Results,
    out: Path,
    palette: dict[str, str],
    stem: str,
) -> Section:
    section = Section("plots", "Learning curves and score distributions")
    panels = [("Reward (rollout/reward, training)", _curves(data, task.id, "rollout", "rollout/reward"))]
    if task.headline is not None:
        title = f"{schema.metric(task.headline.metric).display} (validation)"
        panels.append((title, _curves(data, task.id, "validation", task.headline.metric)))
    panels = [(title, curves) for title, curves in panels if curves]
    if panels:
        path = plots.learning_curves(panels, palette, out / PLOTS_DIR / f"{stem}-curves.png")
        section.images.append(
            Image(f"{PLOTS_DIR}/{path.name}", "Learning curves: mean over seeds, band ±1 std")
        )
    else:
        section.paragraphs.append("No learning curves: these runs logged no training or validation curves.")
    if task.headline is not None:
        final = results.final
        rows = final[(final["task"] == task.id) & (final["metric"] == task.headline.metric)]
        scores = {alg: group["value"].tolist() for alg, group in rows.groupby("alg", sort=True)}
        if scores:
            display = schema.metric(task.headline.metric).display
            path = plots.score_distribution(scores, display, palette, out / PLOTS_DIR / f"{stem}-scores.png")
            section.images.append(Image(f"{PLOTS_DIR}/{path.name}", f"Final {display} of every seed"))
    return section


def _curves(data: StoreData, task: str, split: str, metric: str) -> dict[str, list[list[tuple[int, float]]]]:
    """Algorithm -> one (iteration, value) series per run, for training iterations (>= 0)."""
    rows = data.metrics
    rows = rows[
        (rows["task"] == task)
        & (rows["split"] == split)
        & (rows["name"] == metric)
        & (rows["iteration"] >= 0)
    ]
    curves: dict[str, list[list[tuple[int, float]]]] = {}
    for (alg, _run_id), group in rows.groupby(["alg", "run_id"], sort=True):
        points = list(zip(group["iteration"].astype(int), group["value"].astype(float), strict=True))
        curves.setdefault(alg, []).append(points)
    return curves
