"""Reference baselines beside the RL4LMs paper's numbers (``grue compare``).

A profile's baselines are the folders ``<profile>-<row>`` of a baselines folder, one per row of
the paper's tables: ``zero-shot``, ``supervised``, ``ppo``, ``nlpo``, ``supervised-ppo``,
``supervised-nlpo``. Each must be a valid submission. The headline is re-scored per sample from
each seed's generations (no model needed), so every row is a seeds × test samples matrix; the
perplexity needs the trained model and is the one stated per seed (its interval: seeds only).

Per task: the headline mean with its 95% interval over seeds and test samples, the task's floors
and human ceiling, the perplexity, collapse flags; then one line per step of the paper's ordering
(``- <row> > <row>:``): our verdict on the paired difference (``better``, ``worse``, ``tie``), the
direction of the paper's own table (none when equal at the table's decimals) and whether we
``agree`` (significant, same direction), are ``unresolved`` (our tie) or ``disagree``
(significant, opposite). For a tie: the smallest difference the data could resolve and how many
seeds or test samples would resolve the paper's gap (80% power). A flagged (collapsed) row never
counts. A smoke profile (``tiny``) is shown without the paper and counts nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import Field

from grue_bench import plugins
from grue_bench.errors import GrueError
from grue_bench.report.aggregate import Headline
from grue_bench.report.collapse import output_stats
from grue_bench.report.evidence import (
    SMOKE_NOTE,
    SMOKE_PROFILES,
    ReferenceRow,
    Row,
    best_floor_row,
    collapse_reasons,
    difference,
    floor_mark,
    reference_row,
)
from grue_bench.report.intervals import (
    Interval,
    components,
    detectable_difference,
    needed,
    seed_mean_interval,
    verdict,
)
from grue_bench.report.schema import Leaderboard, load_schema
from grue_bench.schema import Component, Strict
from grue_bench.scoring import score
from grue_bench.submit.floors import task_rows
from grue_bench.submit.validate import ValidSubmission, validate
from grue_bench.yamlio import read_yaml_mapping

PAPER_RESULTS = Path(__file__).resolve().parent / "paper_results.yaml"
ROWS = ("zero-shot", "supervised", "ppo", "nlpo", "supervised+ppo", "supervised+nlpo")
STEPS = (
    ("supervised", "zero-shot"),
    ("ppo", "supervised"),
    ("nlpo", "supervised"),
    ("supervised+ppo", "ppo"),
    ("supervised+nlpo", "nlpo"),
)
"""The paper's ordering, step by step: each row against the one it builds on."""
FLUENCY = "fluency_metrics/perplexity"
FLUENCY_TOLERANCE = 0.10


class PaperMetric(Strict):
    """One metric of a paper table: its key here and a number per row."""

    metric: str
    values: dict[str, float]


class PaperTask(Strict):
    """The paper's numbers for one task."""

    model: str
    source: str
    note: str = ""
    headline: PaperMetric
    fluency: PaperMetric | None = None


class PaperResults(Strict):
    """``paper_results.yaml``."""

    rows: list[str] = Field(min_length=1)
    tasks: dict[str, PaperTask]


def load_paper(path: Path = PAPER_RESULTS) -> PaperResults:
    """The paper's numbers, checked."""
    return PaperResults.model_validate(read_yaml_mapping(path))


def folder_name(profile: str, row: str) -> str:
    """The baseline folder of ``row`` for ``profile``: ``tiny-supervised-ppo``."""
    return f"{profile}-{row.replace('+', '-')}"


@dataclass(frozen=True)
class TaskRow:
    """One baseline row of a task: its headline per seed and sample, perplexity per seed, flag."""

    row: str
    headline: Row
    fluency: np.ndarray | None
    collapse: str


@dataclass(frozen=True)
class Step:
    """One step of the paper's ordering: ``upper`` against ``lower``."""

    upper: str
    lower: str
    difference: Interval
    verdict: str | None
    paper_direction: str | None
    """'better' / 'worse' (the paper's upper row against its lower), None: equal or not given."""
    flagged: str
    detectable: float
    needs: tuple[int | None, int | None] | None
    """Seeds, test samples that would resolve the paper's gap (a tie with a paper gap only)."""

    @property
    def agreement(self) -> str | None:
        """'agrees' / 'unresolved' / 'disagrees'; None when the step cannot count."""
        if self.flagged or self.paper_direction is None or self.verdict is None:
            return None
        if self.verdict == "tie":
            return "unresolved"
        return "agrees" if self.verdict == self.paper_direction else "disagrees"


@dataclass(frozen=True)
class TaskComparison:
    """A task's rows, floors and steps."""

    task: str
    headline: Headline
    paper: PaperTask | None
    rows: list[TaskRow]
    references: list[ReferenceRow]
    steps: list[Step]
    best_floor: str | None
    floor_marks: dict[str, str]
    """Row -> 'at floor' / 'below floor' / 'above' against the best floor, paired by sample."""


def read_baselines(root: Path, profile: str) -> dict[str, ValidSubmission]:
    """Each row's submission of ``profile`` under ``root`` (a row without a folder is left out);
    every folder is validated as ``grue submit`` does."""
    found = {}
    for row in ROWS:
        folder = root / folder_name(profile, row)
        if (folder / "submission.yaml").is_file():
            found[row] = validate(folder)
    if not found:
        raise GrueError(
            f"no baseline of profile '{profile}' in {root}",
            key="--profile",
            fix=f"package runs as {root}/{folder_name(profile, 'ppo')} etc. (grue submit --from-store)",
        )
    return found


def task_row(
    row: str, submission: ValidSubmission, task_id: str, metric: str, component: Component
) -> TaskRow:
    """A row's headline re-scored per sample, its stated perplexity and its collapse flag."""
    generations = submission.tasks[task_id]
    lines, values, stats = [], [], {}
    ids = [s.id for s in generations.samples]
    references = [s.references for s in generations.samples]
    for seed, texts in sorted(generations.seeds.items()):
        scores = score([component], generations.samples, texts.texts, split="test")
        lines.append(scores.samples[metric])
        values.append(scores.corpus()[metric])
        stats[seed] = output_stats(texts.texts, references)
    matrix = pd.DataFrame(lines, columns=ids)
    stated = submission.meta.tasks[task_id].scores or {}
    fluency = [stated.get(seed, {}).get(FLUENCY) for seed in sorted(generations.seeds)]
    fluency_values = np.array(fluency, dtype=float) if all(v is not None for v in fluency) else None
    return TaskRow(row, Row(np.array(values), matrix), fluency_values, collapse_reasons(stats))


def compare_task(
    task: str,
    baselines: Mapping[str, ValidSubmission],
    paper: PaperTask | None,
    headline: Headline,
    references: Sequence[ReferenceRow],
    decimals: int = 3,
) -> TaskComparison:
    """The rows of one task and its steps."""
    covering = {row: sub for row, sub in baselines.items() if task in sub.tasks}
    component = plugins.TASKS.get(task).headline_metric()
    assert component is not None, "a task with a headline names one of its metrics (tasks.load_task)"
    rows = [task_row(row, sub, task, headline.metric, component) for row, sub in covering.items()]
    by_row = {r.row: r for r in rows}
    steps = [
        _step(by_row[upper], by_row[lower], paper, headline, decimals)
        for upper, lower in STEPS
        if upper in by_row and lower in by_row
    ]
    floor = best_floor_row(references, headline.metric, headline.higher_is_better)
    marks = {
        r.row: floor_mark(r.headline, floor[1], headline.higher_is_better) or "above" for r in rows if floor
    }
    return TaskComparison(task, headline, paper, rows, list(references), steps, floor and floor[0], marks)


def _step(upper: TaskRow, lower: TaskRow, paper: PaperTask | None, head: Headline, decimals: int) -> Step:
    diff = difference(upper.headline, lower.headline)
    word = verdict(diff, head.higher_is_better)
    direction = None
    gap = None
    if paper is not None and upper.row in paper.headline.values and lower.row in paper.headline.values:
        a, b = paper.headline.values[upper.row], paper.headline.values[lower.row]
        if round(a, decimals) != round(b, decimals):
            direction = "better" if (a > b) == head.higher_is_better else "worse"
            gap = a - b
    flagged = " and ".join(r.row for r in (upper, lower) if r.collapse)
    needs = None
    a_matrix, b_matrix = upper.headline.matrix, lower.headline.matrix
    if word == "tie" and gap is not None and a_matrix is not None and b_matrix is not None:
        parts = components(a_matrix.to_numpy(), b_matrix[a_matrix.columns].to_numpy())
        needs = needed(parts, gap, seeds=len(a_matrix), samples=a_matrix.shape[1])
    return Step(upper.row, lower.row, diff, word, direction, flagged, detectable_difference(diff), needs)


def compare_profile(
    root: Path,
    profile: str,
    paper: PaperResults | None = None,
    references: Callable[[str], Sequence[ReferenceRow]] | None = None,
) -> list[TaskComparison]:
    """Every task the profile's baselines cover, in the paper's order; ``references`` gives a
    task's floors and ceiling (default: ``grue_bench.submit.floors.task_rows``)."""
    paper = paper or load_paper()
    baselines = read_baselines(root, profile)
    schema = load_schema()
    tasks = sorted({task for sub in baselines.values() for task in sub.tasks}, key=_paper_order(paper))
    headlines = schema.headlines({task: plugins.TASKS.get(task) for task in tasks})
    floors = references or task_rows
    return [
        compare_task(
            task,
            baselines,
            None if profile in SMOKE_PROFILES else paper.tasks.get(task),
            head,
            floors(task),
            schema.metric(head.metric).decimals,
        )
        for task, head in headlines.items()
    ]


def _paper_order(paper: PaperResults) -> Callable[[str], tuple[int, str]]:
    """Sort key: the paper's task order, then other tasks by id."""
    order = {task: i for i, task in enumerate(paper.tasks)}
    return lambda task: (order.get(task, len(order)), task)


# --- Markdown -------------------------------------------------------------------------------------


def render_markdown(profile: str, comparisons: Sequence[TaskComparison]) -> str:
    """A Markdown section: a table per task, the step lines, and the profile's count."""
    schema = load_schema()
    lines = [f"## Profile `{profile}`", ""]
    tasks = ", ".join(c.task for c in comparisons)
    if profile in SMOKE_PROFILES:
        lines += [f"{SMOKE_NOTE} Tasks: {tasks}; no paper column, and no step is counted.", ""]
    else:
        counts = {word: 0 for word in ("agrees", "unresolved", "disagrees")}
        steps = [s for c in comparisons for s in c.steps]
        for step in steps:
            if step.agreement:
                counts[step.agreement] += 1
        flagged = sum(bool(s.flagged) for s in steps)
        no_direction = sum(not s.flagged and s.paper_direction is None for s in steps)
        lines += [
            f"Of {len(steps)} steps of the paper's ordering ({tasks}): {counts['agrees']} agree with the "
            f"paper's direction, {counts['unresolved']} are unresolved (a tie here), "
            f"{counts['disagrees']} disagree; {flagged} involve a collapsed row and {no_direction} have "
            "no direction in the paper (equal at its decimals), and do not count.",
            "",
        ]
    for c in comparisons:
        lines += _task_section(c, schema, profile in SMOKE_PROFILES)
    return "\n".join(lines).rstrip() + "\n"


def _task_section(c: TaskComparison, schema: Leaderboard, smoke: bool) -> list[str]:
    name = plugins.TASKS.get(c.task).name
    head = schema.metric(c.headline.metric)
    out = [f"### {name} (`{c.task}`)", ""]
    if c.paper is not None:
        source = f"Paper: {c.paper.model}, {c.paper.source}" + (f"; {c.paper.note}" if c.paper.note else "")
        out += [source + ".", ""]
    samples = c.rows[0].headline.matrix.shape[1] if c.rows and c.rows[0].headline.matrix is not None else 0
    out += [
        f"{head.display}: mean with its 95% interval over seeds and the {samples} test samples; "
        "perplexity: over seeds only (it needs the trained model). Against the best floor: the paired "
        "interval holds 0 (at floor), is below it (below floor) or above it.",
        "",
    ]
    with_fluency = any(r.fluency is not None for r in c.rows)
    columns = ([f"paper {head.display}"] if not smoke else []) + [f"ours {head.display}"]
    if with_fluency:
        columns += (["paper perplexity"] if not smoke else []) + ["ours perplexity"]
    if c.best_floor:
        columns.append(f"against {c.best_floor}")
    columns.append("collapse")
    out += ["| row | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for r in c.rows:
        cells = [] if smoke else [_number(_paper_value(c.paper, r.row, fluency=False), head.decimals)]
        cells.append(_interval_text(r.headline.interval(), head.decimals))
        if with_fluency:
            if not smoke:
                cells.append(_number(_paper_value(c.paper, r.row, fluency=True), 1))
            cells.append(_seed_text(r.fluency))
        if c.best_floor:
            cells.append(c.floor_marks.get(r.row, "–"))
        cells.append(r.collapse or "–")
        out.append(f"| {r.row} | " + " | ".join(cells) + " |")
    for reference in c.references:
        found = reference_row(reference, c.headline.metric)
        if found is None:
            continue
        cells = [] if smoke else ["–"]
        cells.append(_interval_text(found.interval(), head.decimals, deterministic=True))
        if with_fluency:
            cells += ([] if smoke else ["–"]) + ["–"]
        if c.best_floor:
            cells.append("–")
        cells.append("–")
        out.append(f"| {reference.name} | " + " | ".join(cells) + " |")
    out.append("")
    start = next((r for r in c.rows if r.row == "zero-shot"), None)
    out += [f"- {_step_line(step, c, head.decimals, start, smoke)}" for step in c.steps]
    return [*out, ""]


def _step_line(step: Step, c: TaskComparison, decimals: int, start: TaskRow | None, smoke: bool) -> str:
    d = step.difference
    width = decimals + 1
    text = f"{step.upper} > {step.lower}: {step.verdict or 'no interval'}"
    if d.known:
        over = f"{d.seeds} seeds × {d.samples} samples" if d.samples else f"{d.seeds} seeds"
        bounds = f"[{d.low:+.{width}f}, {d.high:+.{width}f}]"
        text += f" ({step.upper} − {step.lower} = {d.estimate:+.{width}f} {bounds}, {over})"
    if not smoke:
        paper = {"better": "better", "worse": "worse", None: "no direction"}[step.paper_direction]
        text += f"; the paper: {paper}"
        if step.flagged:
            text += f"; not counted: {step.flagged} collapsed (table)"
        elif step.agreement:
            text += f"; {step.agreement}"
    elif step.flagged:
        text += f"; {step.flagged} collapsed (table)"
    if step.verdict == "tie" and np.isfinite(step.detectable):
        text += f"; the smallest difference these data resolve (80% power): {step.detectable:.{width}f}"
        if step.needs is not None and c.paper is not None:
            seeds, samples = step.needs
            gap = abs(c.paper.headline.values[step.upper] - c.paper.headline.values[step.lower])
            text += (
                f"; a difference as large as the paper's ({gap:.{decimals}f}) would be resolved with "
                f"{_count(seeds, 'seeds per row', f'{d.samples} test samples')} or "
                f"{_count(samples, 'test samples', f'{d.seeds} seeds')}"
            )
    upper = next(r for r in c.rows if r.row == step.upper)
    if start is not None and upper.fluency is not None and start.fluency is not None:
        change = upper.fluency.mean() / start.fluency.mean() - 1
        within = "within" if abs(change) <= FLUENCY_TOLERANCE else "outside"
        text += f"; perplexity {change:+.0%} of the zero-shot model's: {within} 10%"
    return text


def _count(value: int | None, what: str, kept: str) -> str:
    """'N seeds per row', or why no number will do with the other factor kept."""
    return f"{value} {what}" if value is not None else f"no number of {what} (not with {kept})"


def _paper_value(paper: PaperTask | None, row: str, *, fluency: bool) -> float | None:
    if paper is None:
        return None
    table = paper.fluency if fluency else paper.headline
    return table.values.get(row) if table else None


def _interval_text(interval: Interval, decimals: int, deterministic: bool = False) -> str:
    if not interval.known:
        return f"{interval.estimate:.{decimals}f} (1 seed)"
    text = f"{interval.estimate:.{decimals}f} [{interval.low:.{decimals}f}, {interval.high:.{decimals}f}]"
    return text + (" (no seed)" if deterministic else "")


def _seed_text(values: np.ndarray | None) -> str:
    if values is None:
        return "n/a"
    return _interval_text(seed_mean_interval(values), 1)


def _number(value: float | None, decimals: int) -> str:
    return "n/a" if value is None else f"{value:.{decimals}f}"
