"""The plain-text report ``grue submit`` prints: re-scored numbers per task and seed, and the checks."""

from __future__ import annotations

from grue_bench.submit.rescore import Rescored
from grue_bench.submit.validate import ValidSubmission


def render(submission: ValidSubmission, rescored: Rescored) -> str:
    """Per task, a table of metric x seed with the mean; then skipped metrics and stated-number checks."""
    meta = submission.meta
    n_runs = sum(len(task.seeds) for task in submission.tasks.values())
    lines = [
        f"submission '{meta.name}' ({meta.algorithm}): {len(submission.tasks)} task(s), {n_runs} run(s), "
        "re-scored on the test split with each task's metric suite",
    ]
    for task_id, scores in rescored.tasks.items():
        seeds = sorted(scores.seeds)
        means = scores.mean()
        width = max((len(key) for key in means), default=6)
        header = "".join(f"{f'seed {s}':>12}" for s in seeds) + f"{'mean':>12}"
        lines += [
            "",
            f"{task_id} (v{submission.tasks[task_id].task_version})",
            f"  {'metric':<{width}}{header}",
        ]
        for key, mean in means.items():
            cells = "".join(f"{scores.seeds[s].get(key, float('nan')):>12.4f}" for s in seeds)
            lines.append(f"  {key:<{width}}{cells}{mean:>12.4f}")
        for metric, reason in scores.skipped.items():
            lines.append(f"  {metric}: skipped, {reason.split(' (')[0]}")
    lines.append("")
    lines.append(
        f"stated numbers: {rescored.checked} confirmed, {len(rescored.mismatches)} differ, "
        f"{len(rescored.unverified)} not re-scored"
    )
    lines += [f"  MISMATCH {d.describe()}" for d in rescored.mismatches]
    lines += [f"  unverified {d.describe()}" for d in rescored.unverified]
    return "\n".join(lines)
