"""``grue report``: read a store, compute the tables, draw the plots, write exports and HTML."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from grue_bench import plugins
from grue_bench.errors import GrueError
from grue_bench.report import aggregate, evidence, pages, plots
from grue_bench.report.collect import StoreData, read_store, sample_generations
from grue_bench.report.evidence import ReferenceRow, is_reference
from grue_bench.report.exports import write_table
from grue_bench.report.html import render_pages
from grue_bench.report.intervals import verdict
from grue_bench.report.pages import Image, Page, Section, TaskInfo
from grue_bench.report.results import ProfileResults, Results
from grue_bench.report.schema import Leaderboard, load_schema
from grue_bench.report.table import Cell, Column, Table
from grue_bench.store import Store
from grue_bench.tasks import TaskSpec

log = logging.getLogger(__name__)

PLOTS_DIR = "plots"


VERDICT_COLUMNS = [
    "task", "metric", "row_a", "row_b", "difference", "ci_low", "ci_high", "verdict", "method", "n_samples",
]  # fmt: skip


def build_report(
    store_path: str | Path,
    out_dir: str | Path,
    schema_path: str | Path | None = None,
    references: Mapping[str, Sequence[ReferenceRow]]
    | Callable[[list[str]], Mapping[str, Sequence[ReferenceRow]]]
    | None = None,
) -> Path:
    """Write the leaderboard (index.html, one page per task, plots, CSV/JSON) and return index.html.
    ``references``: each task's floors and human ceiling (``grue_bench.submit.floors``), or what
    computes them from the store's task ids once the store and the schema are checked."""
    schema = load_schema(schema_path)
    store_path, out = Path(store_path), Path(out_dir)
    if not store_path.is_file():
        raise GrueError(
            "results store not found", source=str(store_path), fix="give --store, or run `grue run` first"
        )
    with Store(store_path, reader=True) as store:
        data = read_store(store)
        if not data.runs:
            raise GrueError(
                "has no finished or submitted runs to report",
                source=str(store_path),
                fix="finish some runs with `grue run` (see `grue runs --store ...` for their status)",
            )
        samples = {task: sample_generations(store, data.task_runs(task)) for task in data.tasks}
    tasks = task_infos(data.tasks, schema)
    if callable(references):
        references = references(data.tasks)
    results = compute(data, schema, tasks, references or {})
    (out / PLOTS_DIR).mkdir(parents=True, exist_ok=True)
    palette = plots.colors(
        sorted({run.alg for run in data.runs} | {f"{run.alg} ({run.profile})" for run in data.runs})
    )
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
    order = {task: i for i, task in enumerate(plugins.grue_tasks())}
    specs = {task: registered_task(task) for task in task_ids}
    names = {task: _display_name(task, spec) for task, spec in specs.items()}
    rank = {task: (order.get(task, len(order)), specs[task] is None, names[task]) for task in task_ids}
    ordered = sorted(task_ids, key=rank.__getitem__)
    headlines = schema.headlines({task: spec for task, spec in specs.items() if spec})
    return [
        TaskInfo(task, names[task], f"task-{slug(task)}.html", headlines.get(task), _suite_keys(specs[task]))
        for task in ordered
    ]


def _suite_keys(spec: TaskSpec | None) -> tuple[str, ...]:
    """The keys the task's metrics report, in the suite's order."""
    return tuple(key for metric in spec.metrics for key in plugins.metric_outputs(metric)) if spec else ()


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


def compute(
    data: StoreData,
    schema: Leaderboard,
    tasks: list[TaskInfo],
    references: Mapping[str, Sequence[ReferenceRow]],
) -> Results:
    """The aggregate tables from the store's final test scores, one set per profile."""
    headlines = {task.id: task.headline for task in tasks if task.headline is not None}
    final = aggregate.final_scores(data.metrics)
    for task, headline in headlines.items():
        if final[(final["task"] == task) & (final["metric"] == headline.metric)].empty:
            log.warning("task %s: no run logged its headline metric %s on test", task, headline.metric)
    per_sample = evidence.final_sample_values(data.samples, final)
    profiles = {
        profile: profile_results(
            profile, final[final["profile"] == profile], per_sample, data, headlines, references
        )
        for profile in data.profiles
    }
    return Results(final=final, profiles=profiles, ratings=aggregate.ratings_table(data.ratings))


def profile_results(
    profile: str,
    final: pd.DataFrame,
    per_sample: Mapping[tuple[int, str], pd.Series],
    data: StoreData,
    headlines: Mapping[str, aggregate.Headline],
    references: Mapping[str, Sequence[ReferenceRow]],
) -> ProfileResults:
    """One profile's leaderboard: flagged rows are shown, never ranked, left out of IQM and P(X > Y)."""
    summary = evidence.summarize(final, per_sample, references)
    flags = {}
    for (task, alg), group in final.groupby(["task", "alg"], sort=True):
        runs = group[["seed", "run_id"]].drop_duplicates().itertuples(index=False)
        reason = evidence.collapse_reasons({int(seed): data.collapse.get(int(run)) for seed, run in runs})
        if reason:
            flags[(task, alg)] = reason
    unflagged = [(task, alg) not in flags for task, alg in zip(final["task"], final["alg"], strict=True)]
    counted = final[unflagged] if len(final) else final
    ranked = (
        summary[
            [
                not is_reference(alg) and (task, alg) not in flags
                for task, alg in zip(summary["task"], summary["alg"], strict=True)
            ]
        ]
        if len(summary)
        else summary
    )
    anchors = {
        task: evidence.anchors(task, references.get(task, []), head.metric, head.higher_is_better)
        for task, head in headlines.items()
        if task in set(final["task"])
    }
    rows = evidence.headline_rows(final, per_sample, headlines)
    verdicts, marks = _verdicts(rows, headlines, references)
    normalized = evidence.anchored_scores(counted, {t: h.metric for t, h in headlines.items()}, anchors)
    unflagged_rows = {
        task: {alg: row for alg, row in algs.items() if (task, alg) not in flags}
        for task, algs in rows.items()
    }
    improvement = evidence.improvement_table(unflagged_rows, headlines)
    return ProfileResults(
        profile=profile,
        final=final,
        summary=summary,
        flags=flags,
        marks=marks,
        anchors=anchors,
        verdicts=verdicts,
        ranks=aggregate.ranks(ranked, headlines),
        improvement=improvement,
        average_improvement=evidence.average_improvement(improvement),
        normalized=normalized,
        overall=aggregate.overall_table(normalized),
    )


def _verdicts(
    rows: Mapping[str, Mapping[str, evidence.Row]],
    headlines: Mapping[str, aggregate.Headline],
    references: Mapping[str, Sequence[ReferenceRow]],
) -> tuple[pd.DataFrame, dict[tuple[str, str], str]]:
    """Per task, on the headline (``rows``: ``evidence.headline_rows``): every pair of algorithms
    (the higher mean first) and each algorithm against the best floor, paired by test sample; and
    each algorithm's floor mark."""
    records, marks = [], {}
    for task, algs in sorted(rows.items()):
        head = headlines[task]
        order = sorted(algs, key=lambda a: algs[a].seed_values.mean(), reverse=head.higher_is_better)
        pairs = [(a, b) for i, a in enumerate(order) for b in order[i + 1 :]]
        floor = evidence.best_floor_row(references.get(task, []), head.metric, head.higher_is_better)
        compared = [(a, b, algs[a], algs[b]) for a, b in pairs]
        if floor is not None:
            floor_name, floor_row = floor
            compared += [(a, floor_name, algs[a], floor_row) for a in order]
            for alg in order:
                mark = evidence.floor_mark(algs[alg], floor_row, head.higher_is_better)
                if mark:
                    marks[(task, alg)] = mark
        for a, b, row_a, row_b in compared:
            diff = evidence.difference(row_a, row_b)
            word = verdict(diff, head.higher_is_better) or ""
            samples = diff.samples
            records.append(
                (task, head.metric, a, b, diff.estimate, diff.low, diff.high, word, diff.method, samples)
            )
    return pd.DataFrame.from_records(records, columns=VERDICT_COLUMNS), marks


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
    """The leaderboard people open first: one section per profile, then the tasks and the data."""
    n_submitted = sum(run.source == "submission" for run in data.runs)
    algs = sorted({run.alg for run in data.runs})
    subtitle = (
        f"{len(data.runs)} runs ({n_submitted} submitted) of {len(algs)} algorithms on {len(tasks)} tasks "
        f"in {len(results.profiles)} profile(s), from {store_name}; final test scores."
    )
    page = Page(
        "index.html", "GRUE Bench leaderboard", subtitle, notices=_overview_notices(data, results, tasks)
    )
    for profile, found in results.profiles.items():
        page.sections.append(_profile_section(profile, found, data, schema, tasks, out, palette))
    task_table = pages.tasks_table(tasks, data.runs, schema)
    downloads = Section("data", "Data", paragraphs=["Every table of the report, as CSV and JSON:"])
    everything = Table("exports", "All tables", [Column("Table"), Column("CSV"), Column("JSON")], [])
    for stem, frame in _all_tables(results, schema).items():
        (_, csv), (_, json) = write_table(frame, out, stem)
        everything.rows.append([Cell(stem, sort=stem), Cell(csv, href=csv), Cell(json, href=json)])
    downloads.tables.append(everything)
    page.sections += [Section("tasks", "Tasks", tables=[task_table])]
    if not results.ratings.empty:
        page.sections.append(_ratings_overview(tasks, results.ratings))
    page.sections.append(downloads)
    return page


def _profile_section(
    profile: str,
    found: ProfileResults,
    data: StoreData,
    schema: Leaderboard,
    tasks: list[TaskInfo],
    out: Path,
    palette: dict[str, str],
) -> Section:
    """A profile's leaderboard, its overall score's anchors and its probability of improvement."""
    key = slug(profile)
    runs = [run for run in data.runs if run.profile == profile]
    profile_tasks = [task for task in tasks if any(run.task == task.id for run in runs)]
    section = Section(f"profile-{key}", f"Profile: {profile}", paragraphs=_profile_notes(profile))
    board = pages.leaderboard_table(profile_tasks, found, runs, schema, table_id=f"leaderboard-{key}")
    board.exports = write_table(_headline_summary(profile_tasks, found), out, f"leaderboard-{key}") + [
        (f"overall {label}", href) for label, href in write_table(found.overall, out, f"overall-{key}")
    ]
    board.notes.append(
        "Each cell: the mean of the final test score over seeds with its 95% interval over seeds and "
        "test samples (t with Satterthwaite's degrees of freedom; 'seeds only' where per-sample scores "
        "are missing), the seeds, and the rank among the rows with 2+ seeds that are not flagged. "
        "floor:* and ceiling:human rows are what no training achieves and what a reference scores "
        "(deterministic: their interval is over test samples). 'at floor': the paired interval "
        "against the task's best floor holds 0. A row flagged as collapsed is shown, never ranked. "
        "Overall: the interquartile mean of per-task headline scores on fixed anchors (best floor = 0, "
        "human ceiling = 1; table below), with a 95% stratified bootstrap interval."
    )
    section.tables.append(board)
    section.tables.append(pages.anchors_table(profile_tasks, found.anchors, schema, f"anchors-{key}"))
    if not found.overall.empty:
        path = plots.overall_iqm(found.overall, palette, out / PLOTS_DIR / f"overall-iqm-{key}.png")
        section.images.append(
            Image(f"{PLOTS_DIR}/{path.name}", f"Overall IQM on the anchors, profile {profile}")
        )
    average = pages.overall_improvement_table(found.average_improvement, f"improvement-overall-{key}")
    average.exports = write_table(found.average_improvement, out, f"improvement_overall-{key}")
    if average.rows:
        section.tables.append(average)
    else:
        section.paragraphs += average.notes
    return section


def _ratings_overview(tasks: list[TaskInfo], ratings: pd.DataFrame) -> Section:
    """Every task's human ratings, one table each, on the overview."""
    section = Section("ratings", "Human ratings")
    for task in tasks:
        rows = ratings[ratings["task"] == task.id]
        if not rows.empty:
            section.tables.append(pages.ratings_table(rows, f"ratings-{slug(task.id)}", task.name))
    return section


def _profile_notes(profile: str) -> list[str]:
    """What a profile's section says first: a smoke profile, that its numbers are no evidence."""
    return [evidence.SMOKE_NOTE] if profile in evidence.SMOKE_PROFILES else []


def _overview_notices(data: StoreData, results: Results, tasks: list[TaskInfo]) -> list[str]:
    headline = {task.id: task.headline.metric for task in tasks if task.headline}
    notices = []
    for profile, found in results.profiles.items():
        trained = found.summary[[not is_reference(a) for a in found.summary["alg"]]]
        notices += pages.one_seed_notice(trained, profile)
        if found.flags:
            listed = ", ".join(f"{alg} on {task}" for task, alg in sorted(found.flags))
            notices.append(
                f"Profile {profile}: flagged as collapsed, shown but not ranked (the reasons are on each "
                f"cell and in the task pages' Collapse column): {listed}."
            )
        seeds_only = sorted(
            {
                f"{r.alg} on {r.task}"
                for r in trained.itertuples(index=False)
                if r.method == "seeds only" and headline.get(r.task) == r.metric
            }
        )
        if seeds_only:
            notices.append(
                f"Profile {profile}: no per-sample headline scores for {', '.join(seeds_only)}: their "
                "intervals are over seeds only (run `grue backfill` on the store)."
            )
    if data.not_counted:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(data.not_counted.items()))
        notices.append(f"Runs not counted (only finished and submitted runs are): {counts}.")
    return notices


def _headline_summary(tasks: list[TaskInfo], found: ProfileResults) -> pd.DataFrame:
    """The summary rows of each task's headline metric, with task names, ranks, flags and marks."""
    frames = []
    for task in tasks:
        if task.headline is None:
            continue
        rows = found.summary[
            (found.summary["task"] == task.id) & (found.summary["metric"] == task.headline.metric)
        ]
        frames.append(rows.assign(task_name=task.name, higher_is_better=task.headline.higher_is_better))
    columns = [*evidence.SUMMARY_COLUMNS, "task_name", "higher_is_better", "rank", "collapse", "floor_mark"]
    if not frames:
        return pd.DataFrame(columns=columns)
    merged = pd.concat(frames, ignore_index=True).merge(found.ranks, on=["task", "alg"], how="left")
    merged["rank"] = merged["rank"].astype("Int64")
    pairs = list(zip(merged["task"], merged["alg"], strict=True))
    merged["collapse"] = [found.flags.get(pair) for pair in pairs]
    merged["floor_mark"] = [found.marks.get(pair) for pair in pairs]
    return merged[columns]


def _all_tables(results: Results, schema: Leaderboard) -> dict[str, pd.DataFrame]:
    def joined(name: str) -> pd.DataFrame:
        """One table of every profile's, with its profile."""
        frames = [getattr(f, name).assign(profile=p) for p, f in results.profiles.items()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    return {
        "summary": with_display(
            pd.concat([f.summary for f in results.profiles.values()], ignore_index=True), schema
        ),
        "final_scores": with_display(results.final, schema),
        "verdicts": joined("verdicts"),
        "improvement": joined("improvement").drop(columns=evidence.INTERNAL_COLUMNS),
        "normalized_scores": joined("normalized"),
        "ranks": joined("ranks"),
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
    """Per profile: all metrics with floors, paired verdicts and P(improvement); then plots, sample
    generations, human ratings and runs of one task."""
    runs = data.task_runs(task.id)
    stem = f"task-{slug(task.id)}"
    page = Page(task.filename, task.name, f"Task '{task.id}': final test scores of {len(runs)} runs.")
    if task.headline is None:
        page.notices.append(
            f"No headline metric is declared for '{task.id}' in the leaderboard schema: algorithms are "
            "not ranked and the task is not part of the overall score."
        )
    for profile, found in results.profiles.items():
        profile_runs = [run for run in runs if run.profile == profile]
        if profile_runs:
            page.notices += pages.one_seed_notice(
                found.summary[(found.summary["task"] == task.id) & ~found.summary["alg"].map(is_reference)],
                profile,
            )
            page.sections.append(_task_profile_section(task, profile, found, profile_runs, schema, out, stem))
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
    runs_table = pages.runs_table(runs, data.collapse)
    final = results.final[results.final["task"] == task.id]
    runs_table.exports = write_table(with_display(final, schema), out, f"{stem}-final_scores")
    page.sections.append(Section("runs", "Runs", tables=[runs_table]))
    return page


def _task_profile_section(
    task: TaskInfo,
    profile: str,
    found: ProfileResults,
    runs: list,
    schema: Leaderboard,
    out: Path,
    stem: str,
) -> Section:
    key = slug(profile)
    summary = found.summary[found.summary["task"] == task.id]
    metric_keys = _ordered_metrics(summary["metric"].unique().tolist(), task)
    own = [m for m in metric_keys if not schema.metric(m).naturalness]
    natural = [m for m in metric_keys if schema.metric(m).naturalness]
    section = Section(f"profile-{key}", f"Profile: {profile}", paragraphs=_profile_notes(profile))
    if task.headline is not None:
        spec = schema.metric(task.headline.metric)
        section.paragraphs.append(f"Headline metric: {spec.display}{pages.arrow(spec.higher_is_better)}.")
        anchor = found.anchors.get(task.id)
        if anchor is not None and anchor.excluded:
            section.paragraphs.append(f"Left out of the overall score: {anchor.excluded}.")
    args = (task, summary, found, runs, schema)
    metric_table = pages.metrics_table(*args, own, table_id=f"metrics-{key}", caption="Task metrics")
    metric_table.exports = write_table(with_display(summary, schema), out, f"{stem}-summary-{key}")
    section.tables.append(metric_table)
    if natural:
        section.tables.append(
            pages.metrics_table(
                *args, natural, table_id=f"naturalness-{key}", caption="Naturalness: fluency and diversity"
            )
        )
    verdicts = found.verdicts[found.verdicts["task"] == task.id]
    if not verdicts.empty:
        table = pages.verdicts_table(verdicts, schema, f"verdicts-{key}")
        table.exports = write_table(verdicts, out, f"{stem}-verdicts-{key}")
        section.tables.append(table)
    improvement = found.improvement[found.improvement["task"] == task.id]
    if task.headline is not None and improvement["alg_x"].nunique() > 1:
        table = pages.improvement_table(task, improvement, f"improvement-{key}")
        table.exports = write_table(
            improvement.drop(columns=evidence.INTERNAL_COLUMNS), out, f"{stem}-improvement-{key}"
        )
        section.tables.append(table)
    return section


def _ordered_metrics(keys: list[str], task: TaskInfo) -> list[str]:
    """The headline first, then the task suite's order, then other keys alphabetically."""
    order = {key: i for i, key in enumerate(task.metric_order)}
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
        several = rows["profile"].nunique() > 1
        scores = {
            (f"{alg} ({profile})" if several else alg): group["value"].tolist()
            for (profile, alg), group in rows.groupby(["profile", "alg"], sort=True)
        }
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
    several = rows["profile"].nunique() > 1
    for (profile, alg, _run_id), group in rows.groupby(["profile", "alg", "run_id"], sort=True):
        points = list(zip(group["iteration"].astype(int), group["value"].astype(float), strict=True))
        curves.setdefault(f"{alg} ({profile})" if several else alg, []).append(points)
    return curves
