"""Rewrite a submission folder's stated numbers with the re-scored ones: a maintainer's step after a
metric or its judge changes (the generations are untouched, so the re-scoring is what the folder now
scores). Only numbers the folder states, the re-scoring computed and ``agrees`` does not confirm are
replaced; the others (those that need the policy's model, or within float noise) stay as stated."""

from __future__ import annotations

import os
import tempfile

from grue_bench.submit.format import METADATA_FILE
from grue_bench.submit.rescore import Rescored, agrees
from grue_bench.submit.validate import ValidSubmission
from grue_bench.yamlio import dump_yaml, read_yaml_mapping


def restate(submission: ValidSubmission, rescored: Rescored) -> int:
    """Write the re-scored numbers into ``submission.yaml``; returns how many changed."""
    path = submission.root / METADATA_FILE
    metadata = read_yaml_mapping(path)
    changed = 0
    for task_id, task in metadata["tasks"].items():
        for seed, stated in (task.get("scores") or {}).items():
            for metric in stated:
                value = rescored.tasks[task_id].seeds.get(int(seed), {}).get(metric)
                if value is not None and not agrees(stated[metric], value):
                    stated[metric] = value
                    changed += 1
    with tempfile.NamedTemporaryFile(
        "w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8"
    ) as tmp:
        tmp.write(dump_yaml(metadata))
    os.replace(tmp.name, path)
    return changed
