"""Per-sample scores for runs stored before the store kept them (``grue backfill``).

Each finished or submitted run's stored generations of a split are scored again with the run's own
metric suite (its config's ``train_evaluation.metrics``, else its task's), without the policy:
only the per-sample values are written (``sample_scores``), the logged corpus scores stay as they
are. A re-scored corpus score that differs from the logged one is reported (a metric backend that
changed since); the task's samples are looked up by id in the split the task ships, for the
metrics that read more than the references (ToTTo's tables).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from grue_bench import plugins
from grue_bench.classifiers.judges import judges_of, with_judges
from grue_bench.data import Sample
from grue_bench.datapools import TaskPool
from grue_bench.errors import GrueError
from grue_bench.schema import Component
from grue_bench.scoring import score
from grue_bench.store import DONE, RunRecord, Store

log = logging.getLogger(__name__)

REL_TOLERANCE = 1e-4
"""A re-scored corpus score within this of the logged one agrees (BERTScore's documented jitter)."""


@dataclass
class Backfilled:
    """What a backfill did: evaluations scored, those already complete, and logged numbers the
    re-scoring did not confirm."""

    scored: list[str] = field(default_factory=list)
    complete: int = 0
    differ: list[str] = field(default_factory=list)


def backfill(store: Store, split: str = "test", *, iterations: str = "all") -> Backfilled:
    """Write the missing per-sample scores of every done run's evaluations on ``split``
    (``iterations``: ``all`` or ``final``, the last one only)."""
    result = Backfilled()
    runs = [run for run in store.runs() if run.status in DONE]
    pools: dict[str, list[Sample]] = {}
    for run in tqdm(runs, desc="backfill", unit="run"):
        for iteration in _evaluations(store, run, split, iterations):
            if store.sample_scores(run.id, split, iteration):
                result.complete += 1
                continue
            _backfill_one(store, run, split, iteration, pools, result)
    return result


def _evaluations(store: Store, run: RunRecord, split: str, which: str) -> list[int]:
    rows = store.db.execute(
        "SELECT DISTINCT iteration FROM generations WHERE run_id = ? AND split = ? ORDER BY iteration",
        [run.id, split],
    ).fetchall()
    found = [iteration for (iteration,) in rows]
    return found[-1:] if which == "final" else found


def _backfill_one(
    store: Store,
    run: RunRecord,
    split: str,
    iteration: int,
    pools: dict[str, list[Sample]],
    result: Backfilled,
) -> None:
    label = f"{run.task}/{run.alg}/seed{run.seed} iteration {iteration}"
    stored = {g["sample_id"]: g["text"] for g in store.generations(run.id, split, iteration)}
    if run.task not in pools:
        pools[run.task] = list(TaskPool.prepare(split, task=run.task))
    samples = [s for s in pools[run.task] if s.id in stored]  # the split's order: MSTTR reads it
    if len(samples) < len(stored):
        missing = sorted(set(stored) - {s.id for s in samples})
        raise GrueError(
            f"run {run.key[:10]} ({label}): {len(missing)} generation(s) are of samples the task's "
            f"{split} split does not have (first: {missing[0]})",
            fix="backfill with the task version the run was made with",
        )
    texts = [stored[s.id] for s in samples]
    scores = score(_metrics(run), samples, texts, model=None, split=split)
    logged = dict(
        store.db.execute(
            "SELECT name, value FROM metrics WHERE run_id = ? AND split = ? AND iteration = ?",
            [run.id, split, iteration],
        ).fetchall()
    )
    for key, value in scores.corpus().items():
        if key in logged and not math.isclose(value, logged[key], rel_tol=REL_TOLERANCE, abs_tol=1e-9):
            result.differ.append(f"{label} {key}: logged {logged[key]:.6g}, re-scored {value:.6g}")
    values = {
        key: {s.id: v for s, v in zip(samples, per_sample, strict=True)}
        for key, per_sample in scores.samples.items()
    }
    store.add_sample_scores(run.id, iteration, split, values)
    result.scored.append(label)
    log.info("backfilled %s: %d metric(s) per sample", label, len(values))


def _metrics(run: RunRecord) -> list[Component]:
    """The run's metric suite: its config's, else its task's; each judged metric with the judge the
    run records (a run stored before judges had names: the first ones)."""
    configured = (run.config.get("train_evaluation") or {}).get("metrics") if run.config else None
    if configured:
        metrics = [Component.model_validate(item) for item in configured]
    else:
        metrics = list(plugins.TASKS.get(run.task).metrics)
    judges = judges_of(run.versions)
    return [Component(id=m.id, args=with_judges(m.id, m.args, judges)) for m in metrics]
