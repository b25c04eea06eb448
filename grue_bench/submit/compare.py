"""Reference baselines beside the RL4LMs paper's numbers (``grue compare``).

A profile's baselines are the folders ``<profile>-<row>`` of a baselines folder, one per row of
the paper's tables: ``zero-shot``, ``supervised``, ``ppo``, ``nlpo``, ``supervised-ppo``,
``supervised-nlpo``. Each must be a valid submission; its numbers are the ones it states per seed
(the runs' own logged test scores, which ``grue submit --dry-run`` confirms by re-scoring; the
perplexity needs the trained model and is as logged).

Per task: the headline metric (and perplexity where the task reports it) as the mean over seeds
with a 95% bootstrap interval, beside the paper's number, and one line per row saying whether the
paper's ordering holds: zero-shot < supervised < RL <= supervised+RL on the headline, and the
fluency metric within 10% of the zero-shot model's. A step "holds" when the means are ordered; it
is "clear" when the two intervals do not overlap, else "within the seeds' spread".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import Field

from grue_bench import plugins
from grue_bench.errors import GrueError
from grue_bench.report.aggregate import Headline, bootstrap_mean_ci
from grue_bench.report.schema import Leaderboard, load_schema
from grue_bench.schema import Strict
from grue_bench.submit.format import Submission
from grue_bench.submit.validate import validate
from grue_bench.yamlio import read_yaml_mapping

PAPER_RESULTS = Path(__file__).resolve().parent / "paper_results.yaml"
ROWS = ("zero-shot", "supervised", "ppo", "nlpo", "supervised+ppo", "supervised+nlpo")
EXPECTED_ABOVE = {"supervised": "zero-shot", "ppo": "supervised", "nlpo": "supervised"}
"""Each row and the row the paper's ordering puts below it (strictly)."""
EXPECTED_AT_LEAST = {"supervised+ppo": "ppo", "supervised+nlpo": "nlpo"}
"""Each row and the row it should at least equal."""
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
class Estimate:
    """A mean over seeds with its 95% bootstrap interval."""

    mean: float
    low: float
    high: float
    n_seeds: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Estimate:
        low, high = bootstrap_mean_ci(values)
        return cls(float(np.mean(values)), low, high, len(values))

    def text(self, decimals: int) -> str:
        if np.isnan(self.low):
            return f"{self.mean:.{decimals}f} (1 seed)"
        return f"{self.mean:.{decimals}f} [{self.low:.{decimals}f}, {self.high:.{decimals}f}]"


@dataclass(frozen=True)
class TaskRow:
    """One row of a task's table: ours and the paper's."""

    row: str
    headline: Estimate | None
    fluency: Estimate | None
    paper_headline: float | None
    paper_fluency: float | None


@dataclass(frozen=True)
class TaskComparison:
    """A task's rows and the ordering verdicts, one line per row."""

    task: str
    headline_metric: str
    fluency_metric: str | None
    paper: PaperTask | None
    rows: list[TaskRow]
    verdicts: dict[str, str]
    holds: dict[str, bool]


def read_baselines(root: Path, profile: str) -> dict[str, Submission]:
    """Each row's submission of ``profile`` under ``root`` (a row without a folder is left out);
    every folder is validated as ``grue submit`` does."""
    found = {}
    for row in ROWS:
        folder = root / folder_name(profile, row)
        if (folder / "submission.yaml").is_file():
            found[row] = validate(folder).meta
    if not found:
        raise GrueError(
            f"no baseline of profile '{profile}' in {root}",
            key="--profile",
            fix=f"package runs as {root}/{folder_name(profile, 'ppo')} etc. (grue submit --from-store)",
        )
    return found


def estimate(submission: Submission, task: str, metric: str | None) -> Estimate | None:
    """The submission's stated ``metric`` on ``task`` over its seeds, or None if not stated."""
    entry = submission.tasks.get(task)
    if entry is None or metric is None or not entry.scores:
        return None
    values = [entry.scores[seed][metric] for seed in entry.seeds if metric in entry.scores.get(seed, {})]
    return Estimate.of(values) if len(values) == len(entry.seeds) else None


def compare_task(
    task: str,
    baselines: Mapping[str, Submission],
    paper: PaperTask | None,
    headline: Headline,
    decimals: int = 3,
) -> TaskComparison:
    """The rows of one task and a verdict per row."""
    fluency = paper.fluency.metric if paper and paper.fluency else _fluency_metric(task, baselines)
    rows = [
        TaskRow(
            row,
            estimate(sub, task, headline.metric),
            estimate(sub, task, fluency),
            paper.headline.values.get(row) if paper else None,
            paper.fluency.values.get(row) if paper and paper.fluency else None,
        )
        for row, sub in baselines.items()
        if task in sub.tasks
    ]
    by_row = {r.row: r for r in rows}
    verdicts, holds = {}, {}
    for r in rows:
        verdict = _verdict(r, by_row, headline.higher_is_better, decimals)
        if verdict is not None:
            verdicts[r.row], holds[r.row] = verdict
    return TaskComparison(task, headline.metric, fluency, paper, rows, verdicts, holds)


def _fluency_metric(task: str, baselines: Mapping[str, Submission]) -> str | None:
    """Perplexity, when the task's runs report it."""
    key = "fluency_metrics/perplexity"
    return key if any(estimate(sub, task, key) for sub in baselines.values()) else None


def _verdict(
    row: TaskRow, by_row: Mapping[str, TaskRow], higher: bool, decimals: int = 3
) -> tuple[str, bool] | None:
    """One line on the row's ordering step (and fluency), and whether it holds; means equal at the
    table's ``decimals`` count as equal."""
    strict = row.row in EXPECTED_ABOVE
    below_id = EXPECTED_ABOVE.get(row.row) or EXPECTED_AT_LEAST.get(row.row)
    below = by_row.get(below_id) if below_id else None
    if below is None or row.headline is None or below.headline is None:
        return None
    sign = ">" if strict else ">="
    ours_ok = _ordered(row.headline.mean, below.headline.mean, strict, higher, decimals)
    parts = [f"{row.row} {sign} {below.row}: {'holds' if ours_ok else 'does not hold'}"]
    parts[0] += f" ({_spread(row.headline, below.headline, decimals)})"
    if row.paper_headline is not None and below.paper_headline is not None:
        paper_ok = _ordered(row.paper_headline, below.paper_headline, strict, higher, decimals)
        parts.append(f"in the paper: {'holds' if paper_ok else 'does not hold'}")
    fluency_ok = True
    start = by_row.get("zero-shot")
    if row.fluency is not None and start is not None and start.fluency is not None:
        change = row.fluency.mean / start.fluency.mean - 1
        fluency_ok = abs(change) <= FLUENCY_TOLERANCE
        text = f"perplexity {change:+.0%} of the start: {'within' if fluency_ok else 'outside'} 10%"
        if row.paper_fluency is not None and start.paper_fluency is not None:
            text += f" (paper {row.paper_fluency / start.paper_fluency - 1:+.0%})"
        parts.append(text)
    return "; ".join(parts), ours_ok and fluency_ok


def _ordered(value: float, below: float, strict: bool, higher: bool, decimals: int) -> bool:
    a, b = (round(value, decimals), round(below, decimals))
    a, b = (a, b) if higher else (b, a)
    return a > b if strict else a >= b


def _spread(a: Estimate, b: Estimate, decimals: int) -> str:
    if round(a.mean, decimals) == round(b.mean, decimals):
        return f"equal at {decimals} decimals"
    if np.isnan(a.low) or np.isnan(b.low):
        return "one seed: no interval"
    apart = a.low > b.high or b.low > a.high
    return "clear: the intervals do not overlap" if apart else "within the seeds' spread"


def compare_profile(root: Path, profile: str, paper: PaperResults | None = None) -> list[TaskComparison]:
    """Every task the profile's baselines cover, in the paper's order."""
    paper = paper or load_paper()
    baselines = read_baselines(root, profile)
    schema = load_schema()
    tasks = sorted({task for sub in baselines.values() for task in sub.tasks}, key=_paper_order(paper))
    headlines = schema.headlines({task: plugins.TASKS.get(task).headline.metric for task in tasks})
    return [
        compare_task(task, baselines, paper.tasks.get(task), head, schema.metric(head.metric).decimals)
        for task, head in headlines.items()
    ]


def _paper_order(paper: PaperResults) -> Callable[[str], tuple[int, str]]:
    """Sort key: the paper's task order, then other tasks by id."""
    order = {task: i for i, task in enumerate(paper.tasks)}
    return lambda task: (order.get(task, len(order)), task)


def render_markdown(profile: str, comparisons: Sequence[TaskComparison]) -> str:
    """A Markdown section: a table per task, the verdict lines, and the profile's summary."""
    schema = load_schema()
    lines = [f"## Profile `{profile}`", ""]
    held = sum(sum(c.holds.values()) for c in comparisons)
    steps = sum(len(c.holds) for c in comparisons)
    lines += [
        f"The paper's ordering holds in {held} of {steps} steps "
        f"({', '.join(sorted({c.task for c in comparisons}))}).",
        "",
    ]
    for c in comparisons:
        lines += _task_section(c, schema)
    return "\n".join(lines).rstrip() + "\n"


def _task_section(c: TaskComparison, schema: Leaderboard) -> list[str]:
    name = plugins.TASKS.get(c.task).name
    head = schema.metric(c.headline_metric)
    out = [f"### {name} (`{c.task}`)", ""]
    if c.paper is not None:
        source = f"Paper: {c.paper.model}, {c.paper.source}" + (f"; {c.paper.note}" if c.paper.note else "")
        out += [source + ".", ""]
    columns = [f"paper {head.display}", f"ours {head.display}"]
    if c.fluency_metric:
        columns += ["paper perplexity", "ours perplexity"]
    out += ["| row | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for r in c.rows:
        cells = [_number(r.paper_headline, head.decimals), _estimate(r.headline, head.decimals)]
        if c.fluency_metric:
            cells += [_number(r.paper_fluency, 1), _estimate(r.fluency, 1)]
        out.append(f"| {r.row} | " + " | ".join(cells) + " |")
    out.append("")
    out += [f"- {c.verdicts[r.row]}" for r in c.rows if r.row in c.verdicts]
    return [*out, ""]


def _number(value: float | None, decimals: int) -> str:
    return "n/a" if value is None else f"{value:.{decimals}f}"


def _estimate(value: Estimate | None, decimals: int) -> str:
    return "n/a" if value is None else value.text(decimals)
