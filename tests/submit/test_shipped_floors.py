"""Every GRUE task ships its floors (tasks/<id>/floors.json) for its current inputs. A module of its
own: tests/submit/test_floors.py shrinks the constant floor's search, which is part of the key."""

from __future__ import annotations

import json

import pytest

from grue_bench import plugins
from grue_bench.datapools import TaskPool
from grue_bench.submit import floors
from grue_bench.submit.floors import CEILING, COPY, EMPTY


@pytest.mark.parametrize("task", plugins.grue_tasks())
def test_every_grue_task_ships_its_floors_for_its_current_inputs(task):
    """The shipped rows are used only while made from today's inputs; regenerate them with
    `python -m grue_bench.submit.floors` when this fails."""
    spec = plugins.TASKS.get(task)
    shipped = json.loads((spec.directory / floors.SHIPPED).read_text(encoding="utf-8"))
    samples = list(TaskPool.prepare("test", task=task))
    assert shipped["key"] == floors.cache_key(spec, "test", list(spec.metrics), samples)
    names = [row["name"] for row in shipped["rows"]]
    assert names[0] == EMPTY and names[-1] == CEILING and COPY in names
    headline = plugins.headline_key(spec)
    empty = shipped["rows"][0]
    assert len(empty["samples"][headline]) == len(samples) == empty["sample_count"][headline]
    # Every key the suite's metrics computed is one they declare (how the leaderboard shows it).
    declared = {key for metric in spec.metrics for key in plugins.metric_outputs(metric)}
    assert {key for row in shipped["rows"] for key in row["corpus"]} <= declared
