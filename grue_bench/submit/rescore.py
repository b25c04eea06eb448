"""Re-scoring a submission's generations with each task's metric suite; stated numbers are only compared.

The scores come from ``grue_bench.scoring.score`` on the texts ``load_predictions`` read, exactly as
``grue eval --task ID --predictions FILE`` computes them. Metrics that need the policy's model
(perplexity) cannot run on submitted text and are reported as skipped, never as 0.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from grue_bench import plugins
from grue_bench.scoring import Scores, score
from grue_bench.submit.validate import ValidSubmission

log = logging.getLogger(__name__)

REL_TOLERANCE = 1e-6
ABS_TOLERANCE = 1e-9
"""A stated number agrees when it is within this of the re-scored one (float noise, not rounding)."""


@dataclass(frozen=True)
class Discrepancy:
    """A stated number that the re-scoring does not confirm."""

    task: str
    seed: int
    metric: str
    stated: float
    rescored: float | None
    """None when the metric was not re-scored (needs the model, or not in the task's suite)."""

    def describe(self) -> str:
        """One line for the command's output."""
        where = f"{self.task} seed {self.seed} {self.metric}"
        if self.rescored is None:
            return f"{where}: stated {self.stated:.6g}, not re-scored (not recorded)"
        return f"{where}: stated {self.stated:.6g}, re-scored {self.rescored:.6g}"


@dataclass
class TaskScores:
    """One task's re-scored corpus metrics per seed, and the metrics that could not run."""

    task: str
    seeds: dict[int, dict[str, float]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    samples: dict[int, Scores] = field(default_factory=dict)
    """Per seed, the whole scoring (its per-sample values go to the store with the generations)."""

    def mean(self) -> dict[str, float]:
        """Each metric's mean over seeds."""
        keys = sorted({key for values in self.seeds.values() for key in values})
        return {key: sum(v[key] for v in self.seeds.values()) / len(self.seeds) for key in keys}


@dataclass
class Rescored:
    """The scores of every task, and how the submission's stated numbers compare."""

    tasks: dict[str, TaskScores]
    mismatches: list[Discrepancy] = field(default_factory=list)
    """Stated numbers that differ from the re-scored ones."""
    unverified: list[Discrepancy] = field(default_factory=list)
    """Stated numbers of metrics that were not re-scored."""
    checked: int = 0
    """Stated numbers confirmed."""


def rescore(submission: ValidSubmission) -> Rescored:
    """Score every seed's generations with its task's metric suite and compare the stated numbers."""

    result = Rescored(tasks={})
    for task_id, task in submission.tasks.items():
        metrics = plugins.TASKS.get(task_id).metrics
        scores = result.tasks[task_id] = TaskScores(task_id)
        for seed, generations in sorted(task.seeds.items()):
            log.info("re-scoring %s seed %d (%s)", task_id, seed, generations.path)
            found = score(metrics, task.samples, generations.texts, model=None, split="test")
            scores.seeds[seed] = found.corpus()
            scores.samples[seed] = found
            scores.skipped.update(found.skipped)
        _compare(submission, scores, result)
    return result


def _compare(submission: ValidSubmission, scores: TaskScores, result: Rescored) -> None:
    stated = submission.meta.tasks[scores.task].scores or {}
    for seed, values in sorted(stated.items()):
        for metric, number in sorted(values.items()):
            rescored = scores.seeds.get(seed, {}).get(metric)
            if rescored is None:
                result.unverified.append(Discrepancy(scores.task, seed, metric, number, None))
            elif agrees(number, rescored):
                result.checked += 1
            else:
                result.mismatches.append(Discrepancy(scores.task, seed, metric, number, rescored))


def agrees(stated: float, rescored: float) -> bool:
    """Whether a stated number is the re-scored one, up to float noise."""
    return math.isclose(stated, rescored, rel_tol=REL_TOLERANCE, abs_tol=ABS_TOLERANCE)
