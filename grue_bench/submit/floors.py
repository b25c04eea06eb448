"""A task's trivial floors and its human ceiling, scored on a split with the task's metric suite.

Every leaderboard table and ``baselines/COMPARISON.md`` shows them as rows, so that a trained row
can be read against what no training achieves:

- ``floor:empty``: the empty output for every input.
- ``floor:copy``: the task's natural copy of its input (its ``floors.copy_input`` hook: IMDB the prompt's
  last sentence, CNN/DM the article's first three sentences, ToTTo the highlighted cells' values,
  IWSLT the English source, CommonGen the concepts, NarrativeQA the question, DailyDialog the last
  utterance).
- ``floor:constant``: one output for every input: of ``CONSTANT_CANDIDATES`` train references
  (evenly spaced over the train split), the one whose headline is best over ``CONSTANT_PROMPTS``
  train samples (evenly spaced): a sample of the train split, chosen on train only.
- ``floor:other-reference``: each sample's output is the next test sample's first reference.
- ``ceiling:human``: a reference scored as an output. For a metric that compares the output with
  the references, over the samples with two or more: the first against the others (how many is
  stated); for a reference-free metric (a judge of the output alone or against the sample's own
  label: sentiment, intent accuracy, diversity), the first reference of every sample.

A floor's outputs do not depend on a seed: its rows are deterministic (one line, no seed variance).
Metrics that need the policy's model (perplexity) have no floor value. Rows are cached under
``cache_dir()/floors``, keyed by the task, its version, the split's samples, the suite (with the
offline judge of each judged metric) and ``FLOORS_VERSION`` (bump it when a metric's implementation
changes what a floor scores). Each GRUE task folder ships its rows (``floors.json``, written by
``python -m grue_bench.submit.floors``), used while their key is the current one, so a fresh install
does not score them again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from grue_bench import __version__, plugins
from grue_bench.classifiers.judges import CURRENT_JUDGES, with_judges
from grue_bench.data import Sample, read_jsonl
from grue_bench.datapools import TaskPool
from grue_bench.errors import GrueError
from grue_bench.paths import cache_dir
from grue_bench.report.evidence import ReferenceRow
from grue_bench.report.schema import load_schema
from grue_bench.schema import Component
from grue_bench.scoring import Scores, score
from grue_bench.tasks import TaskSpec

log = logging.getLogger(__name__)

FLOORS_VERSION = 1
CONSTANT_CANDIDATES = 40
CONSTANT_PROMPTS = 100
EMPTY, COPY, CONSTANT, OTHER_REFERENCE = (
    "floor:empty",
    "floor:copy",
    "floor:constant",
    "floor:other-reference",
)
CEILING = "ceiling:human"


def _take(row: ReferenceRow, scores: Scores, samples: Sequence[Sample]) -> None:
    row.add(scores.corpus(), scores.samples, [s.id for s in samples])


def evenly(items: Sequence, count: int) -> list:
    """``count`` items spread evenly over ``items`` (all of them when fewer)."""
    if len(items) <= count:
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def task_rows(
    task_id: str, split: str = "test", metrics: Sequence[Component] | None = None
) -> list[ReferenceRow]:
    """The floors and the ceiling of ``task_id`` on ``split``: from the cache, else from the task
    folder's ``floors.json`` when it was made from the same inputs, else computed (and cached)."""
    spec = plugins.TASKS.get(task_id)
    suite = list(metrics or spec.metrics)
    samples = list(TaskPool.prepare(split, task=task_id))
    key = cache_key(spec, split, suite, samples)
    path = cache_dir() / "floors" / f"{spec.id}-{key}.json"
    for source in (path, spec.directory / SHIPPED):
        rows = _read_rows(source, key)
        if rows is not None:
            return rows
    rows = compute_rows(spec, split, suite, samples)
    _write_rows(path, key, rows)
    return rows


SHIPPED = "floors.json"
"""A task folder's floors of its shipped test split and default suite (``python -m
grue_bench.submit.floors`` writes them); used only while its key matches."""


def _read_rows(path: Path, key: str) -> list[ReferenceRow] | None:
    """The rows a file holds for ``key``; None when it is missing, for other inputs or unreadable."""
    if not path.is_file():
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        if found.get("key") != key:
            return None
        return [ReferenceRow(**row) for row in found["rows"]]
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        log.warning("floors file %s is unreadable (%s): computing again", path, error)
        return None


def _write_rows(path: Path, key: str, rows: list[ReferenceRow]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as tmp:
        json.dump({"key": key, "rows": [asdict(row) for row in rows]}, tmp, sort_keys=True)
    os.replace(tmp.name, path)


def floor_rows(tasks: Sequence[str], split: str = "test") -> dict[str, list[ReferenceRow]]:
    """The floors and ceiling of each of ``tasks`` that is registered here and has shipped data (a
    task that is not is logged and left without them)."""
    rows = {}
    for task_id in tasks:
        try:
            spec = plugins.TASKS.get(task_id)
        except GrueError:
            log.warning("task %s is not registered here: no floors", task_id)
            continue
        if spec.data is None:
            continue  # a generated (synthetic) task: its samples are drawn, no references to floor
        rows[task_id] = task_rows(task_id, split)
    return rows


def cache_key(spec: TaskSpec, split: str, suite: list[Component], samples: list[Sample]) -> str:
    """What the rows are computed from: the task, its samples, the suite and this code's version."""
    payload = {
        "floors_version": FLOORS_VERSION,
        "grue_bench": __version__,
        "task": [spec.id, spec.version, split],
        "constant_floor": [CONSTANT_CANDIDATES, CONSTANT_PROMPTS],
        # a judged metric with the judge that scores it, so a new default judge is a new key
        "suite": [{"id": c.id, "args": with_judges(c.id, c.args, CURRENT_JUDGES)} for c in suite],
        "samples": [[s.id, s.prompt_or_input_text, s.references] for s in samples],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def compute_rows(
    spec: TaskSpec, split: str, suite: list[Component], samples: list[Sample]
) -> list[ReferenceRow]:
    """Score every floor and the ceiling (no cache)."""
    log.info("task %s: scoring its floors and ceiling on %s (%d samples)", spec.id, split, len(samples))

    def floor(name: str, note: str, texts: list[str]) -> ReferenceRow:
        row = ReferenceRow(name, note)
        _take(row, score(suite, samples, texts, split=split), samples)
        return row

    rows = [floor(EMPTY, "the empty output", [""] * len(samples))]
    if spec.floors is not None:
        copy = spec.resolve(spec.floors.copy_input)
        by_id = {str(row.get("id")): row for row in read_jsonl(spec.data_path(split))}
        note = f"the task's copy of its input ({spec.floors.copy_input})"
        rows.append(floor(COPY, note, [copy(by_id[s.id]) for s in samples]))
    constant = constant_output(spec, suite)
    if constant is not None:
        note = f"the same train reference for every input: {constant!r}"
        rows.append(floor(CONSTANT, note, [constant] * len(samples)))
    if len(samples) > 1 and all(s.references for s in samples):
        texts = [samples[(i + 1) % len(samples)].references[0] for i in range(len(samples))]
        rows.append(floor(OTHER_REFERENCE, "the next test sample's first reference", texts))
    rows.append(ceiling(suite, samples, split))
    return rows


def ceiling(suite: list[Component], samples: list[Sample], split: str) -> ReferenceRow:
    """The references as outputs: against the other references, or judged alone (module doc)."""
    free = [c for c in suite if plugins.METRICS.get(c.id).reference_free]
    compared = [c for c in suite if not plugins.METRICS.get(c.id).reference_free]
    with_refs = [s for s in samples if s.references]
    several = [s for s in samples if len(s.references) >= 2]
    row = ReferenceRow(
        CEILING,
        f"a reference as the output: against the others on the {len(several)} of {len(samples)} "
        f"samples with 2+ references; a reference-free metric on the first reference of all "
        f"{len(with_refs)} with references",
    )
    if free and with_refs:
        _take(row, score(free, with_refs, [s.references[0] for s in with_refs], split=split), with_refs)
    if compared and several:
        others = [Sample(s.id, s.prompt_or_input_text, s.references[1:], s.meta_data) for s in several]
        _take(row, score(compared, others, [s.references[0] for s in several], split=split), several)
    return row


def constant_output(spec: TaskSpec, suite: list[Component]) -> str | None:
    """The train reference that, given for every input, scores best on the headline over a sample
    of the train split; None when the task has no headline or no train references."""
    if spec.headline is None:
        return None
    train = list(TaskPool.prepare("train", task=spec.id))
    candidates = list(
        dict.fromkeys(s.references[0] for s in train if s.references and s.references[0].strip())
    )
    if not candidates:
        return None
    candidates, prompts = evenly(candidates, CONSTANT_CANDIDATES), evenly(train, CONSTANT_PROMPTS)
    component = next((metric for metric in suite if metric.id == spec.headline.metric), None)
    if component is None:
        return None
    head = load_schema().headlines({spec.id: spec})[spec.id]
    best, best_value = None, None
    for text in candidates:
        value = score([component], prompts, [text] * len(prompts), split="train").corpus()[head.metric]
        if best_value is None or (value > best_value if head.higher_is_better else value < best_value):
            best, best_value = text, value
    return best


def write_shipped(tasks: Sequence[str] | None = None) -> list[Path]:
    """Write ``floors.json`` into each task folder (default: every GRUE task) from its shipped test
    split and default suite; returns the files written."""
    written = []
    for task_id in tasks or plugins.grue_tasks():
        spec = plugins.TASKS.get(task_id)
        samples = list(TaskPool.prepare("test", task=task_id))
        key = cache_key(spec, "test", list(spec.metrics), samples)
        rows = task_rows(task_id)
        _write_rows(spec.directory / SHIPPED, key, rows)
        written.append(spec.directory / SHIPPED)
        log.info("wrote %s", spec.directory / SHIPPED)
    return written


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    for path in write_shipped(sys.argv[1:] or None):
        print(path)
