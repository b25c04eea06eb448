"""Scoring generations with a task's metric suite (used by `grue eval`, the runner and submit)."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from grue_bench.data import Sample
from grue_bench.errors import GrueError, Problem
from grue_bench.metrics.base import Metric, MetricScores
from grue_bench.plugins.components import build
from grue_bench.random_states import random_states_kept
from grue_bench.schema import Component

log = logging.getLogger(__name__)


def load_predictions(path: str | Path, samples: Sequence[Sample]) -> list[str]:
    """Texts from a predictions JSONL (``id``, ``text``), in the order of ``samples``.

    Every sample must be predicted exactly once and no other id may appear; all problems
    are reported together, each with its line number.
    """
    path = Path(path)
    if not path.is_file():
        raise GrueError("predictions file not found", source=str(path), fix="check the path")
    wanted = {s.id for s in samples}
    texts: dict[str, str] = {}
    problems: list[Problem] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"line {number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(
                    Problem(f"not valid JSON: {exc.msg}", where, "write one JSON object per line")
                )
                continue
            if (
                not isinstance(row, dict)
                or not isinstance(row.get("id"), str)
                or not isinstance(row.get("text"), str)
            ):
                problems.append(
                    Problem(
                        "needs string fields 'id' and 'text'", where, 'write {"id": "...", "text": "..."}'
                    )
                )
                continue
            if row["id"] not in wanted:
                problems.append(
                    Problem(
                        f"id '{row['id']}' is not in this split",
                        where,
                        "predict the ids of the split being scored (see --split)",
                    )
                )
            elif row["id"] in texts:
                problems.append(
                    Problem(f"id '{row['id']}' is predicted twice", where, "keep one prediction per id")
                )
            else:
                texts[row["id"]] = row["text"]
    missing = [s.id for s in samples if s.id not in texts]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        problems.append(
            Problem(
                f"{len(missing)} id(s) of the split have no prediction: {shown}",
                "",
                "predict every sample of the split",
            )
        )
    if problems:
        raise GrueError.many(problems, str(path))
    return [texts[s.id] for s in samples]


@dataclass
class Scores:
    """Per metric id: its keys with per-sample and corpus scores; and what could not run, and why."""

    results: dict[str, MetricScores] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    """Metric key -> one value per sample whose mean is the key's corpus score (``sample_values``);
    keys without such values (distinct-n, perplexity of the references) are absent."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Metric id -> the wall seconds its ``compute`` took (where an evaluation's time goes)."""

    def corpus(self) -> dict[str, float]:
        """Metric key -> corpus score, flattened over metric ids."""
        return {key: corpus for scores in self.results.values() for key, (_, corpus) in scores.items()}

    def of_sample(self, index: int) -> dict[str, float]:
        """Metric key -> the value of the ``index``-th sample."""
        return {key: values[index] for key, values in self.samples.items()}


def sample_values(
    metric: Metric, scores: MetricScores, generations: list[str], references: list[list[str]]
) -> dict[str, list[float]]:
    """Per key, values whose mean over the samples is the corpus score: the per-sample scores when
    the corpus score is their mean; else, where the metric computes its corpus score without each
    sample (``leave_one_out``), the jackknife linearization ``θ + (N − 1)(mean_j θ₋ⱼ − θ₋ᵢ)``
    (the pseudo-values, centred on θ: their variance over N is the jackknife variance)."""
    values: dict[str, list[float]] = {}
    unresolved = []
    for key, (per_sample, corpus) in scores.items():
        if _is_mean(per_sample, corpus, len(generations)):
            values[key] = [float(v) for v in per_sample]
        else:
            unresolved.append(key)
    if unresolved and len(generations) > 1:
        left_out = metric.leave_one_out(list(generations), references) or {}
        n = len(generations)
        for key in unresolved:
            if key in left_out:
                loo = left_out[key]
                centre = sum(loo) / n
                corpus = scores[key][1]
                values[key] = [corpus + (n - 1) * (centre - v) for v in loo]
    return values


def score(
    metrics: Sequence[Component],
    samples: Sequence[Sample],
    generations: Sequence[str],
    *,
    model: Any = None,
    split: str | None = None,
    model_precision: Callable[[], AbstractContextManager] = nullcontext,
) -> Scores:
    """Run each metric on the generations. A metric that needs the policy's model is reported as
    skipped when no model is given (never scored as 0), and runs it inside ``model_precision()``
    (the run's autocast: perplexity under the policy as the policy runs); the others, their own
    models included, in float32. The global random states are left as they were found
    (``random_states_kept``): a metric backend's first use in a process can draw from them (an
    import does: ``rich.style`` takes ``random.getrandbits``), so without it a run's random states,
    and the supervised warm start keyed on them, would depend on whether another run of the process
    had used that backend."""
    with random_states_kept():
        return _score(metrics, samples, generations, model, split, model_precision)


def _is_mean(per_sample: list[float] | None, corpus: float, count: int) -> bool:
    """Whether the corpus score is the mean of one per-sample score per generation."""
    if not per_sample or len(per_sample) != count:
        return False
    return math.isclose(sum(per_sample) / count, corpus, rel_tol=1e-6, abs_tol=1e-9)


def _score(
    metrics: Sequence[Component],
    samples: Sequence[Sample],
    generations: Sequence[str],
    model: Any,
    split: str | None,
    model_precision: Callable[[], AbstractContextManager],
) -> Scores:
    prompts = [s.prompt_or_input_text for s in samples]
    references = [s.references for s in samples]
    metas = [s.meta_data for s in samples]
    out = Scores()
    for component in tqdm(metrics, desc="metrics", unit="metric", leave=False):
        metric = build("metrics", component.id, component.args, f"metrics.{component.id}.args")
        if model is None and metric.needs_policy_model():
            out.skipped[component.id] = "needs the policy's model (grue eval: pass --model DIR)"
            log.warning("skipping %s: %s", component.id, out.skipped[component.id])
            continue
        started = time.perf_counter()
        with model_precision() if metric.needs_policy_model() else nullcontext():
            scores = metric.compute(
                prompts, list(generations), references, metas, model=model, split_name=split
            )
        out.seconds[component.id] = time.perf_counter() - started
        for key, (_, corpus) in scores.items():
            if not math.isfinite(corpus):
                raise GrueError(f"metric '{component.id}' gave a non-finite score for '{key}'", key=key)
        out.results[component.id] = scores
        out.samples.update(sample_values(metric, scores, list(generations), references))
        log.debug("%s: %s", component.id, {k: v[1] for k, v in scores.items()})
    return out
