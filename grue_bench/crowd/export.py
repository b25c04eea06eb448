"""``grue crowd export``: a batch CSV of sampled test prompts with the outputs of chosen runs, plus
attention checks, shuffled and blinded. The CSV names no system: the mapping from each item to the
run and system behind it is stored in the results store (``crowd_items``) for the ingest.

Likert: one row per prompt × algorithm. Pairwise: one row per prompt × pair of algorithms, the two
outputs in random A/B order. An algorithm's output for a prompt comes from one of its finished runs
(drawn per item), at the run's final test iteration. ``reference`` as an algorithm stands for the
sample's first reference text. Everything random comes from ``random.Random(seed)``: the same store
and options give the same batch (and the same batch id, stored once).
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from itertools import combinations

from grue_bench import plugins
from grue_bench.crowd.checks import DISTRACTOR, REFERENCE, distractor, likert_expected
from grue_bench.crowd.templates import PAIRWISE, Axis, Template, load_template
from grue_bench.crowd.views import SampleInput, clean, likert_columns, pairwise_columns, sample_from_row
from grue_bench.data import read_jsonl
from grue_bench.errors import GrueError
from grue_bench.store import CrowdBatch, CrowdItem, Store

log = logging.getLogger(__name__)

CHECK_FRACTION = 0.1
"""Attention checks added by default, as a fraction of the items (at least one)."""
UNRELATED_POOL = 20
"""How many other samples' references a distractor draws its words from."""


@dataclass(frozen=True)
class ExportedBatch:
    """An exported batch: its stored record and mapping, and the CSV to upload."""

    batch: CrowdBatch
    items: list[CrowdItem]
    columns: list[str]
    rows: list[dict[str, str]]
    n_prompts: int
    n_checks: int
    stored: bool
    """False when the store already held this very batch (same options, same outputs)."""


@dataclass(frozen=True)
class _Output:
    system: str
    run_id: int | None
    text: str


@dataclass(frozen=True)
class _Item:
    kind: str
    sample_id: str
    slots: list[tuple[str, _Output]]
    expected: dict[str, list[str]] | None


def export_batch(
    store: Store,
    *,
    task: str,
    algs: Sequence[str],
    n: int,
    seed: int,
    pairwise: bool = False,
    checks: int | None = None,
) -> ExportedBatch:
    """Sample ``n`` test prompts, build the blinded rows and store the batch with its mapping."""
    _check_options(algs, n, pairwise, checks)
    template = load_template(PAIRWISE if pairwise else task)
    axes = _checked_axes(template, pairwise)
    inputs, task_name = _task_inputs(task)
    # The reference last: the runs' generations may add inputs the shipped data lacks.
    outputs = {alg: _outputs(store, task, alg, inputs) for alg in sorted(algs, key=lambda a: a == REFERENCE)}
    rng = random.Random(seed)
    chosen = _choose_prompts(outputs, n, rng, store, task)
    items = _items(chosen, algs, outputs, pairwise, rng)
    n_checks = checks if checks is not None else max(1, round(CHECK_FRACTION * len(items)))
    items += [_check(chosen, inputs, axes, pairwise, rng) for _ in range(n_checks)]
    rng.shuffle(items)
    item_ids = _item_ids(len(items), rng)
    rows = [_row(task, task_name, inputs[item.sample_id], item, pairwise) for item in items]
    slots = _slots(items, item_ids)
    mode = "pairwise" if pairwise else "likert"
    content = json.dumps([rows, [asdict(slot) for slot in slots]], sort_keys=True)
    batch_id = f"{task}-{mode}-{hashlib.sha256(content.encode()).hexdigest()[:10]}"
    rows = [
        {"batch_id": batch_id, "item_id": item_id, **row} for item_id, row in zip(item_ids, rows, strict=True)
    ]
    columns = list(rows[0])
    _check_placeholders(template, columns)
    spec = {"algs": list(algs), "n": n, "seed": seed, "checks": n_checks, "n_prompts": len(chosen)}
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    axes_json = [axis.to_json() for axis in axes]
    batch = CrowdBatch(batch_id, task, mode, template.name, axes_json, spec, created)
    stored_items = [replace(slot, batch_id=batch_id) for slot in slots]
    stored = store.add_crowd_batch(batch, stored_items)
    return ExportedBatch(batch, stored_items, columns, rows, len(chosen), n_checks, stored)


def _choose_prompts(
    outputs: dict[str, dict[str, list[_Output]]], n: int, rng: random.Random, store: Store, task: str
) -> list[str]:
    """``n`` test samples (or all there are) that every algorithm has an output for."""
    shared = set.intersection(*(set(by_sample) for by_sample in outputs.values()))
    if not shared:
        raise GrueError(
            f"the outputs of {', '.join(outputs)} on task '{task}' share no test sample",
            source=str(store.path),
            key="--algs",
            fix="choose algorithms whose runs were evaluated on the same test split",
        )
    chosen = rng.sample(sorted(shared), min(n, len(shared)))
    if len(chosen) < n:
        log.warning("only %d test prompts have outputs of every algorithm (asked for %d)", len(chosen), n)
    return chosen


def _slots(items: list[_Item], item_ids: list[str]) -> list[CrowdItem]:
    """The mapping rows of the items (batch id still blank): one per item and slot."""
    return [
        CrowdItem(
            "",
            item_id,
            slot,
            item.kind,
            item.sample_id,
            out.system,
            out.run_id,
            clean(out.text),
            item.expected,
        )
        for item_id, item in zip(item_ids, items, strict=True)
        for slot, out in item.slots
    ]


def _check_options(algs: Sequence[str], n: int, pairwise: bool, checks: int | None) -> None:
    if not algs:
        raise GrueError("no algorithm given", key="--algs", fix="give --algs ppo,nlpo (comma-separated)")
    repeated = sorted({alg for alg in algs if list(algs).count(alg) > 1})
    if repeated:
        raise GrueError(f"listed twice: {', '.join(repeated)}", key="--algs", fix="name each algorithm once")
    if pairwise and len(algs) < 2:
        raise GrueError(
            "a pairwise batch compares two or more algorithms",
            key="--algs",
            fix="give at least two, e.g. --algs ppo,nlpo (or ppo,reference)",
        )
    if n < 1:
        raise GrueError(f"is {n}", key="--n", fix="give the number of test prompts to sample (1 or more)")
    if checks is not None and checks < 0:
        raise GrueError(f"is {checks}", key="--checks", fix="give 0 or more attention checks")


def _checked_axes(template: Template, pairwise: bool) -> tuple[Axis, ...]:
    """The template's axes, after checking that its answers can be read back."""
    if not template.axes:
        raise GrueError(
            "declares no rating axis",
            source=str(template.path),
            fix='mark each rating question <fieldset data-axis="NAME"> with radio buttons name="NAME"',
        )
    if not pairwise and not all(value.isdigit() for axis in template.axes for value in axis.values):
        raise GrueError(
            "a Likert template's answers are whole numbers",
            source=str(template.path),
            fix='give each radio button a rating as its value, e.g. value="3"',
        )
    if pairwise and (len(template.axes) != 1 or not {"A", "B"} <= set(template.axes[0].values)):
        raise GrueError(
            "a pairwise template asks one question whose answers include A and B",
            source=str(template.path),
            fix="keep the 'preference' radio buttons A / tie / B",
        )
    return template.axes


def _task_inputs(task: str) -> tuple[dict[str, SampleInput], str]:
    """The task's shipped test samples by id, and its display name."""

    spec = plugins.TASKS.get(task)
    try:
        rows = read_jsonl(spec.data_path("test"))
    except GrueError:  # a task without shipped data: its inputs come from the runs' generations
        rows = []
    return {str(row["id"]): sample_from_row(row) for row in rows}, spec.name or task


def _outputs(store: Store, task: str, alg: str, inputs: dict[str, SampleInput]) -> dict[str, list[_Output]]:
    """Per test sample, the algorithm's final outputs (one per run); fills in unshipped inputs."""
    found: dict[str, list[_Output]] = {}
    if alg == REFERENCE:
        for sample_id, sample in inputs.items():
            if sample.references:
                found[sample_id] = [_Output(REFERENCE, None, sample.references[0])]
        return found
    runs = [run for run in store.runs(task=task, alg=alg) if run.done]
    if not runs:
        known = sorted({run.alg for run in store.runs(task=task) if run.done})
        raise GrueError(
            f"no finished run of '{alg}' on task '{task}'",
            source=str(store.path),
            key="--algs",
            fix=f"choose among: {', '.join([*known, REFERENCE])}" if known else "run `grue run` first",
        )

    prompt = plugins.TASKS.get(task).prompt
    for run in runs:
        for generation in store.generations(run.id, "test"):
            sample_id = generation["sample_id"]
            found.setdefault(sample_id, []).append(_Output(alg, run.id, generation["text"]))
            if sample_id not in inputs:
                raw = generation["prompt"].removeprefix(prompt.prefix).removesuffix(prompt.suffix)
                inputs[sample_id] = SampleInput(sample_id, raw, list(generation["references"]))
    if not found:
        raise GrueError(
            f"the finished runs of '{alg}' on task '{task}' stored no test generations",
            source=str(store.path),
            key="--algs",
            fix="re-run them with `grue run --force` so their test generations are stored",
        )
    return found


def _items(
    chosen: list[str],
    algs: Sequence[str],
    outputs: dict[str, dict[str, list[_Output]]],
    pairwise: bool,
    rng: random.Random,
) -> list[_Item]:
    """One item per prompt and algorithm (Likert) or pair of algorithms (pairwise, sides shuffled)."""
    items = []
    for sample_id in chosen:
        if not pairwise:
            items += [
                _Item("item", sample_id, [("", rng.choice(outputs[alg][sample_id]))], None) for alg in algs
            ]
            continue
        for first, second in combinations(algs, 2):
            pair = [rng.choice(outputs[first][sample_id]), rng.choice(outputs[second][sample_id])]
            rng.shuffle(pair)
            items.append(_Item("item", sample_id, list(zip("AB", pair, strict=True)), None))
    return items


def _check(
    chosen: list[str],
    inputs: dict[str, SampleInput],
    axes: Sequence[Axis],
    pairwise: bool,
    rng: random.Random,
) -> _Item:
    """An attention check on a sampled prompt: a distractor, rated alone or against the reference."""
    candidates = [sample_id for sample_id in chosen if inputs[sample_id].references] if pairwise else chosen
    if not candidates:
        raise GrueError(
            "a pairwise attention check shows the reference, and these samples have none",
            key="--checks",
            fix="use --checks 0 for this task",
        )
    sample_id = rng.choice(candidates)
    others = [s.references[0] for other, s in sorted(inputs.items()) if other != sample_id and s.references]
    fake = _Output(DISTRACTOR, None, distractor(rng.sample(others, min(UNRELATED_POOL, len(others))), rng))
    if not pairwise:
        expected = likert_expected(axes)
        if not expected:
            raise GrueError(
                "no axis of the template bounds an attention check (data-check-max)",
                key="--checks",
                fix='mark an axis such as fluency with data-check-max="2", or use --checks 0',
            )
        return _Item("check", sample_id, [("", fake)], expected)
    reference = _Output(REFERENCE, None, inputs[sample_id].references[0])
    pair = [reference, fake]
    rng.shuffle(pair)
    slot = "A" if pair[0] is reference else "B"
    return _Item("check", sample_id, list(zip("AB", pair, strict=True)), {axes[0].name: [slot]})


def _item_ids(count: int, rng: random.Random) -> list[str]:
    """Opaque, distinct item ids (they say nothing about the system or whether it is a check)."""
    ids: list[str] = []
    while len(ids) < count:
        candidate = f"{rng.getrandbits(40):010x}"
        if candidate not in ids:
            ids.append(candidate)
    return ids


def _row(task: str, task_name: str, sample: SampleInput, item: _Item, pairwise: bool) -> dict[str, str]:
    outputs = dict(item.slots)
    if pairwise:
        return pairwise_columns(task, task_name, sample, outputs["A"].text, outputs["B"].text)
    return likert_columns(task, sample, outputs[""].text)


def _check_placeholders(template: Template, columns: list[str]) -> None:
    missing = [name for name in template.placeholders if name not in columns]
    if missing:
        raise GrueError(
            f"uses {', '.join('${' + name + '}' for name in missing)}, which the export does not fill "
            f"(it writes {', '.join(columns)})",
            source=str(template.path),
            fix="use only the columns the export writes (see crowdsourcing/README.md)",
        )
