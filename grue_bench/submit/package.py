"""Packaging one's own finished runs as a submission folder (``grue submit --from-store``).

Stage ``final``: each run's test generations and metrics at its highest iteration. Stage ``zero-shot``:
its test generations before training (iteration -1), i.e. the base model's outputs; the runner stores
them, and a run's artifacts (``predictions/test_-1.json``) are read when the store has none (runs made
before it did).
The folder is written next to its destination, checked like any submission, then moved in place.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grue_bench.errors import GrueError
from grue_bench.store import BEFORE_TRAINING, RunRecord, Store
from grue_bench.submit.format import FORMAT_VERSION, METADATA_FILE, default_file
from grue_bench.submit.validate import validate
from grue_bench.yamlio import dump_yaml

log = logging.getLogger(__name__)

STAGES = ("final", "zero-shot")


@dataclass
class PackageRequest:
    """What to package and the submission's metadata."""

    store: Path
    name: str
    out: Path
    """The folder that receives ``<name>/`` (baselines/)."""
    authors: list[str]
    contact: str
    link: str
    runs: list[str] = field(default_factory=list)
    """Run key prefixes (as ``grue runs`` shows them)."""
    tasks: list[str] = field(default_factory=list)
    alg: str | None = None
    stage: str = "final"
    algorithm: str | None = None
    """The leaderboard label; default: the runs' algorithm, or 'zero-shot'."""
    description: str | None = None
    force: bool = False


@dataclass
class Packaged:
    """One run's contribution: its seed's generations and the numbers the run logged for them."""

    run: RunRecord
    iteration: int
    rows: list[dict[str, str]]
    scores: dict[str, float]


def package(request: PackageRequest) -> Path:
    """Write ``<out>/<name>/`` from the selected runs; returns the folder."""

    if request.stage not in STAGES:
        raise GrueError(f"unknown stage '{request.stage}'", key="--stage", fix=f"use one of {STAGES}")
    target = request.out / request.name
    if target.exists() and not request.force:
        raise GrueError("already exists", source=str(target), fix="pass --force to replace it")
    if not request.store.is_file():
        raise GrueError("results store not found", source=str(request.store), fix="give --store PATH")
    with Store(request.store, reader=True) as store:
        runs = select_runs(store, request)
        packaged = [_collect(store, run, request.stage) for run in runs]
    metadata = _metadata(request, packaged)
    request.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{request.name}-", dir=request.out) as scratch:
        folder = Path(scratch) / request.name
        _write(folder, metadata, packaged)
        try:  # what we ship must pass the same checks as anyone's submission
            validate(folder)
        except GrueError as error:
            raise GrueError.many(error.problems, str(target)) from None
        if target.exists():
            shutil.rmtree(target)
        folder.rename(target)
    log.info("packaged %d run(s) as %s", len(packaged), target)
    return target


def select_runs(store: Store, request: PackageRequest) -> list[RunRecord]:
    """The finished runs named by key prefix and/or matching the task and algorithm filters."""
    if not request.runs and not request.tasks and not request.alg:
        raise GrueError(
            "no runs selected", key="--runs", fix="select runs with --runs KEY,... and/or --task and --alg"
        )
    every = [run for run in store.runs() if run.status == "finished" and run.source == "run"]
    chosen = every
    if request.runs:
        chosen = []
        for prefix in request.runs:
            matches = [run for run in every if run.key.startswith(prefix)]
            if len(matches) != 1:
                what = "no finished run" if not matches else f"{len(matches)} finished runs"
                raise GrueError(
                    f"{what} of the store has a key starting with '{prefix}'",
                    key="--runs",
                    fix="give key prefixes as `grue runs` shows them (10 characters)",
                )
            chosen.append(matches[0])
    chosen = [
        run
        for run in chosen
        if (not request.tasks or run.task in request.tasks) and (not request.alg or run.alg == request.alg)
    ]
    if not chosen:
        raise GrueError("no finished run matches the selection", key="--runs", fix="check with `grue runs`")
    _check_selection(chosen)
    return sorted(chosen, key=lambda run: (run.task, run.seed))


def _check_selection(runs: Sequence[RunRecord]) -> None:
    algs = sorted({run.alg for run in runs})
    if len(algs) > 1:
        raise GrueError(
            f"the selected runs are of several algorithms ({', '.join(algs)}); a submission is one",
            key="--alg",
            fix="add --alg ID",
        )
    seen: dict[tuple[str, int], RunRecord] = {}
    for run in runs:
        other = seen.setdefault((run.task, run.seed), run)
        if other is not run:
            raise GrueError(
                f"{run.task} seed {run.seed} is selected twice (runs {other.key[:10]} and {run.key[:10]}, "
                "of different configs)",
                key="--runs",
                fix="choose one of them with --runs KEY,...",
            )


def _collect(store: Store, run: RunRecord, stage: str) -> Packaged:
    curves = store.curves(run.id, "test")
    if stage == "final":
        iteration = max((it for points in curves.values() for it, _ in points), default=None)
        if iteration is None or iteration == BEFORE_TRAINING:
            raise GrueError(f"run {run.key[:10]} has no final test evaluation", key="--runs")
    else:
        iteration = BEFORE_TRAINING
    generations = store.generations(run.id, "test", iteration)
    rows = [{"id": g["sample_id"], "text": g["text"]} for g in generations]
    if not rows:
        rows = _artifact_rows(run, iteration)
    scores = {name: value for name, points in curves.items() for it, value in points if it == iteration}
    return Packaged(run, iteration, sorted(rows, key=lambda row: row["id"]), scores)


def _artifact_rows(run: RunRecord, iteration: int) -> list[dict[str, str]]:
    """Test generations from the run's artifacts folder (as the runner writes them)."""
    if run.artifacts is None:
        raise GrueError(f"run {run.key[:10]} has no test generations at iteration {iteration}", key="--runs")
    path = run.artifacts / "predictions" / f"test_{iteration}.json"
    if not path.is_file():
        raise GrueError(
            f"run {run.key[:10]} has no test generations at iteration {iteration} in the store, and its "
            "artifacts file is missing",
            source=str(path),
            fix="package from the machine (and --output-dir) where the run was made",
        )
    rows = json.loads(path.read_text(encoding="utf-8"))
    return [{"id": str(row["sample_id"]), "text": str(row["text"])} for row in rows]


def _metadata(request: PackageRequest, packaged: Sequence[Packaged]) -> dict[str, Any]:
    """The submission.yaml data."""
    first = packaged[0].run
    label = request.algorithm or ("zero-shot" if request.stage == "zero-shot" else first.alg)
    models = {item.run.task: item.run.model or "unknown" for item in packaged}
    shared_model = next(iter(models.values())) if len(set(models.values())) == 1 else None
    tasks: dict[str, Any] = {}
    for item in packaged:
        run = item.run
        entry = tasks.setdefault(
            run.task,
            {"task_version": run.task_version, "seeds": []}
            | ({"model": models[run.task]} if shared_model is None else {})
            | {"scores": {}, "config": run.config},
        )
        entry["seeds"].append(run.seed)
        entry["scores"][run.seed] = item.scores
    return {
        "format": FORMAT_VERSION,
        "name": request.name,
        "algorithm": label,
        "authors": [{"name": author} for author in request.authors],
        "contact": request.contact,
        "link": request.link,
        "model": shared_model or f"GRUE Bench {first.profile} profile models (per task below)",
        "profile": first.profile,
        "description": request.description or _description(request, first, label),
        "tasks": tasks,
    }


def _description(request: PackageRequest, run: RunRecord, label: str) -> str:
    if request.stage == "zero-shot":
        what = "the test generations of the base model before any training (iteration -1)"
        note = " Of each task's config only the model, tokenizer and generation settings apply."
    else:
        what, note = "the test generations after training (each run's final iteration)", ""
    return (
        f"{label} on the {run.profile} profile: {what} in runs of `grue run --alg {run.alg}`, "
        f"packaged with `grue submit --from-store`.{note}"
    )


def _write(folder: Path, metadata: dict[str, Any], packaged: Sequence[Packaged]) -> None:
    folder.mkdir(parents=True)
    (folder / METADATA_FILE).write_text(dump_yaml(metadata), encoding="utf-8")
    for item in packaged:
        path = folder / default_file(item.run.task, item.run.seed)
        path.parent.mkdir(exist_ok=True)
        lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in item.rows)
        path.write_text("".join(lines), encoding="utf-8")
