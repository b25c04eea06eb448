"""Test helpers: a store with finished CommonGen runs and their test generations, and a writer of
results files shaped like MTurk's batch results CSV."""

from __future__ import annotations

import csv
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from grue_bench.store import Store

TASK = "commongen"
SAMPLES = ["commongen-test-707", "commongen-test-682", "commongen-test-71", "commongen-test-1201"]
"""Shipped CommonGen test samples the runs have outputs for."""
RUNS = [("ppo", 0), ("ppo", 1), ("nlpo", 0)]

MTURK_BEFORE = [
    "HITId", "HITTypeId", "Title", "Description", "Keywords", "Reward", "CreationTime", "MaxAssignments",
    "RequesterAnnotation", "AssignmentDurationInSeconds", "AutoApprovalDelayInSeconds", "Expiration",
    "NumberOfSimilarHITs", "LifetimeInSeconds", "AssignmentId", "WorkerId", "AssignmentStatus",
    "AcceptTime", "SubmitTime", "AutoApprovalTime", "ApprovalTime", "RejectionTime", "RequesterFeedback",
    "WorkTimeInSeconds", "LifetimeApprovalRate", "Last30DaysApprovalRate", "Last7DaysApprovalRate",
]  # fmt: skip
"""The columns MTurk writes before ``Input.*`` in a batch results CSV."""


def output_text(alg: str, seed: int, sample_id: str) -> str:
    """A recognizable generated sentence (naming neither algorithm nor seed)."""
    return f"Output number {RUNS.index((alg, seed))} about sample {sample_id.rsplit('-', 1)[1]}."


def make_store(path: Path) -> Path:
    """A store with finished runs (``RUNS``) on ``TASK``, each with final test scores and generations."""
    with Store(path) as store:
        for alg, seed in RUNS:
            run = store.start_run(
                task=TASK,
                task_version=1,
                alg=alg,
                seed=seed,
                profile="tiny",
                model="tiny-t5",
                config={"alg": {"id": alg}},
                config_hash=f"hash-{alg}",
            )
            generations = [
                {
                    "sample_id": sample,
                    "prompt": "p",
                    "text": output_text(alg, seed, sample),
                    "references": ["r"],
                }
                for sample in SAMPLES
            ]
            store.finish_run(
                run.id,
                iteration=2,
                final_metrics={"test": {"lexical/cider": 0.9 + 0.05 * seed, "lexical/meteor": 0.3}},
                generations={"test": generations},
            )
    return path


def run_ids(store: Store, alg: str) -> set[int]:
    """The ids of an algorithm's runs."""
    return {run.id for run in store.runs(task=TASK, alg=alg)}


def dump(path: Path) -> list[str]:
    """Every row and schema statement of a store, for comparing before and after."""
    with sqlite3.connect(path) as conn:
        lines = list(conn.iterdump())
    conn.close()
    return lines


Answerer = Callable[[str, dict[str, str]], Mapping[str, str] | None]
"""(worker, batch row) -> that worker's answers (``Answer.*`` without the prefix), or None: no HIT."""


def write_results(
    path: Path, batch_rows: Sequence[dict[str, str]], workers: Sequence[str], answer: Answerer
) -> Path:
    """A results CSV as MTurk writes it: one row per assignment, the batch columns as ``Input.*``."""
    answer_names: list[str] = []
    records = []
    for number, row in enumerate(batch_rows):
        for worker in workers:
            answers = answer(worker, row)
            if answers is None:
                continue
            answers = {**answers, "feedback": "", "time_on_task_s": "12.5"}
            answer_names += [name for name in answers if name not in answer_names]
            records.append(
                {
                    "HITId": f"HIT{number:04d}",
                    "HITTypeId": "TYPE1",
                    "Title": "Rate a sentence",
                    "Reward": "$0.10",
                    "MaxAssignments": str(len(workers)),
                    "AssignmentId": f"ASG-{number:04d}-{worker}",
                    "WorkerId": worker,
                    "AssignmentStatus": "Submitted",
                    "WorkTimeInSeconds": "30",
                    **{f"Input.{key}": value for key, value in row.items()},
                    **{f"Answer.{key}": value for key, value in answers.items()},
                }
            )
    columns = MTURK_BEFORE + [f"Input.{key}" for key in batch_rows[0]]
    columns += [f"Answer.{name}" for name in answer_names] + ["Approve", "Reject"]
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(records)
    return path
