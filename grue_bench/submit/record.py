"""Recording a checked, re-scored submission in a results store, in one transaction.

Each (task, seed) becomes a run with source 'submission' and status 'submitted': its algorithm is the
submission's label, its re-scored test metrics and generations are logged at iteration 0
(``SUBMISSION_ITERATION``, the run's only and so final evaluation) and its ``submission`` column holds
the card the leaderboard shows (name, link, authors). The submission itself is a row of
``submissions``. A problem found here (a name already recorded, a label already used by other runs)
rolls everything back: a rejected submission leaves the store as it was.
"""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grue_bench.classifiers.judges import CURRENT_JUDGES
from grue_bench.errors import GrueError, Problem
from grue_bench.store import Store
from grue_bench.submit.rescore import Rescored
from grue_bench.submit.validate import ValidSubmission

log = logging.getLogger(__name__)

SUBMISSION_ITERATION = 0
"""The iteration at which a submission's test scores and generations are logged."""


def check_store(store_path: Path, submission: ValidSubmission, *, replace: bool = False) -> None:
    """Refuse early (before re-scoring) what ``record`` would refuse; reads an existing store only."""
    if not store_path.exists():
        return
    with Store(store_path) as store:
        problems = conflicts(store, submission, replace=replace)
    if problems:
        raise GrueError.many(problems, str(store_path))


def record(
    store_path: Path, submission: ValidSubmission, rescored: Rescored, *, replace: bool = False
) -> list[int]:
    """Write the submission's runs and its ``submissions`` row atomically; returns the run ids."""
    meta = submission.meta
    run_ids = []
    with Store(store_path) as store, store.transaction():
        problems = conflicts(store, submission, replace=replace)
        if problems:
            raise GrueError.many(problems, str(store_path))
        if replace:
            _delete(store, meta.name)
        for task_id, task in submission.tasks.items():
            config = meta.task_config(task_id)
            config_hash = submission_hash(meta.name, config)
            for seed in sorted(task.seeds):
                run = store.start_run(
                    task=task_id,
                    task_version=task.task_version,
                    alg=meta.algorithm,
                    seed=seed,
                    profile=meta.profile,
                    model=meta.task_model(task_id),
                    config=config,
                    config_hash=config_hash,
                    output_dir=str(submission.root),
                    source="submission",
                    submission=meta.card(),
                    judges=CURRENT_JUDGES,
                )
                if run.done:  # the same key recorded by something else
                    raise GrueError(
                        f"run {run.key[:10]} ({task_id} seed {seed}) is already in the store as {run.status}",
                        source=str(store_path),
                        fix="record the submission into another store, or pass --replace",
                    )
                texts = task.seeds[seed].texts
                per_sample = rescored.tasks[task_id].samples.get(seed)
                rows = [
                    {
                        "sample_id": s.id,
                        "prompt": s.prompt_or_input_text,
                        "text": t,
                        "references": s.references,
                        "scores": per_sample.of_sample(i) if per_sample else {},
                    }
                    for i, (s, t) in enumerate(zip(task.samples, texts, strict=True))
                ]
                store.finish_run(
                    run.id,
                    iteration=SUBMISSION_ITERATION,
                    final_metrics={"test": rescored.tasks[task_id].seeds[seed]},
                    generations={"test": rows},
                    model=meta.task_model(task_id),
                )
                run_ids.append(run.id)
        store.db["submissions"].insert(
            {
                "name": meta.name,
                "path": str(submission.root),
                "meta": json.dumps(_meta(submission, rescored), sort_keys=True),
                "created_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
            }
        )
    log.info("recorded submission %s: %d run(s) in %s", meta.name, len(run_ids), store_path)
    return run_ids


def conflicts(store: Store, submission: ValidSubmission, *, replace: bool) -> list[Problem]:
    """Why the store cannot take this submission: its name is taken, or its label is used by others."""
    meta = submission.meta
    problems = []
    taken = next(store.db["submissions"].rows_where("name = ?", [meta.name]), None)
    if taken is not None and not replace:
        problems.append(
            Problem(
                f"a submission named '{meta.name}' is already recorded (on {taken['created_at']}, "
                f"from {taken['path']})",
                "name",
                "pass --replace to record it again (its earlier runs are deleted), or rename it",
            )
        )
    for task_id in submission.tasks:
        others = [
            run
            for run in store.runs(task=task_id, alg=meta.algorithm)
            if not (run.source == "submission" and (run.submission or {}).get("name") == meta.name)
        ]
        if others:
            origin = sorted(
                {
                    f"submission '{(run.submission or {}).get('name')}'"
                    if run.source == "submission"
                    else "grue run"
                    for run in others
                }
            )
            problems.append(
                Problem(
                    f"the store already has {len(others)} run(s) of algorithm '{meta.algorithm}' on "
                    f"{task_id} (from {', '.join(origin)}); the leaderboard would pool their seeds",
                    "algorithm",
                    "give the submission a distinct algorithm label, or record it into another store",
                )
            )
    return problems


def submission_hash(name: str, config: dict[str, Any]) -> str:
    """The config hash of a submission's runs: its name and training config (so keys never collide)."""
    text = f"submission|{name}|{json.dumps(config, sort_keys=True)}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _delete(store: Store, name: str) -> None:
    """A submission's earlier runs (their metrics and generations cascade) and its row."""
    store.db.execute(
        "DELETE FROM runs WHERE source = 'submission' AND json_extract(submission, '$.name') = ?", [name]
    )
    store.db.execute("DELETE FROM submissions WHERE name = ?", [name])
    log.info("replacing the earlier submission %s", name)


def _meta(submission: ValidSubmission, rescored: Rescored) -> dict[str, Any]:
    """The submissions row's metadata: the card, what was submitted (with file hashes), the checks."""
    meta = submission.meta
    return {
        **meta.card(),
        "format": meta.format,
        "model": meta.model,
        "profile": meta.profile,
        "description": meta.description,
        "tasks": {
            task_id: {
                "task_version": task.task_version,
                "seeds": sorted(task.seeds),
                "files": {
                    str(s): {"path": g.path, "sha256": g.sha256} for s, g in sorted(task.seeds.items())
                },
                "mean": rescored.tasks[task_id].mean(),
                "skipped": rescored.tasks[task_id].skipped,
            }
            for task_id, task in submission.tasks.items()
        },
        "stated_numbers": {
            "confirmed": rescored.checked,
            "mismatches": [d.describe() for d in rescored.mismatches],
            "not_rescored": [d.describe() for d in rescored.unverified],
        },
    }
