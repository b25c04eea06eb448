"""A task's floors and human ceiling: each row's outputs as the module promises, checked against the
metric run directly on those outputs; the constant floor is the best train reference; the cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from grue_bench import plugins
from grue_bench.data import read_jsonl
from grue_bench.datapools import TaskPool
from grue_bench.metrics.lexical import RougeLMax
from grue_bench.paths import cache_dir
from grue_bench.schema import Component
from grue_bench.submit import floors
from grue_bench.submit.floors import CEILING, CONSTANT, COPY, EMPTY, OTHER_REFERENCE, task_rows

TASK = "narrative_qa"
KEY = "lexical/rouge_l_max"


@pytest.fixture(scope="module")
def suite() -> list[Component]:
    """The task's own rouge_l_max (its headline) and diversity (reference-free)."""
    own = {c.id: c for c in plugins.TASKS.get(TASK).metrics}
    return [own["rouge_l_max"], own["diversity"]]


@pytest.fixture(scope="module")
def small_constant_search():
    """The constant floor searched over 6 train references on 12 train prompts, in this module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(floors, "CONSTANT_CANDIDATES", 6)
        patch.setattr(floors, "CONSTANT_PROMPTS", 12)
        yield


@pytest.fixture(scope="module")
def rows(suite, small_constant_search) -> dict:
    return {row.name: row for row in task_rows(TASK, metrics=suite)}


def rouge(suite, outputs: list[str], references: list[list[str]]) -> list[float]:
    metric = RougeLMax(**suite[0].args)
    return metric.compute([], outputs, references)[KEY][0]


def test_every_floor_and_the_ceiling_are_there(rows):
    assert list(rows) == [EMPTY, COPY, CONSTANT, OTHER_REFERENCE, CEILING]
    assert rows[EMPTY].corpus[KEY] == 0.0
    assert set(rows[EMPTY].samples[KEY].values()) == {0.0}


def test_copy_and_other_reference_score_the_outputs_they_promise(rows, suite):
    samples = list(TaskPool.prepare("test", task=TASK))
    raw = {row["id"]: row for row in read_jsonl(plugins.TASKS.get(TASK).data_path("test"))}
    questions = [raw[s.id]["meta"]["question"] for s in samples]
    expected = rouge(suite, questions, [s.references for s in samples])
    assert [rows[COPY].samples[KEY][s.id] for s in samples] == pytest.approx(expected)
    others = [samples[(i + 1) % len(samples)].references[0] for i in range(len(samples))]
    expected = rouge(suite, others, [s.references for s in samples])
    assert [rows[OTHER_REFERENCE].samples[KEY][s.id] for s in samples] == pytest.approx(expected)
    assert rows[OTHER_REFERENCE].corpus[KEY] == pytest.approx(np.mean(expected))


def test_the_ceiling_scores_a_reference_against_the_others(rows, suite):
    samples = [s for s in TaskPool.prepare("test", task=TASK) if len(s.references) >= 2]
    assert len(samples) > 0
    expected = rouge(suite, [s.references[0] for s in samples], [s.references[1:] for s in samples])
    assert rows[CEILING].sample_count[KEY] == len(samples)
    assert [rows[CEILING].samples[KEY][s.id] for s in samples] == pytest.approx(expected)
    # diversity is reference-free: the first reference of every sample, judged alone
    assert rows[CEILING].sample_count["diversity_metrics/mean_pred_length"] == len(
        TaskPool.prepare("test", task=TASK)
    )


def test_the_constant_floor_is_the_best_train_reference_on_train(rows, suite):
    train = list(TaskPool.prepare("train", task=TASK))
    candidates = floors.evenly(list(dict.fromkeys(s.references[0] for s in train if s.references)), 6)
    prompts = floors.evenly(train, 12)
    means = {
        c: np.mean(rouge(suite, [c] * len(prompts), [s.references for s in prompts])) for c in candidates
    }
    best = max(means, key=means.get)
    assert repr(best) in rows[CONSTANT].note
    test = list(TaskPool.prepare("test", task=TASK))
    expected = rouge(suite, [best] * len(test), [s.references for s in test])
    assert rows[CONSTANT].corpus[KEY] == pytest.approx(np.mean(expected))


def test_rows_are_cached_and_a_broken_cache_is_computed_again(rows, suite, monkeypatch):
    key = floors.cache_key(plugins.TASKS.get(TASK), "test", suite, list(TaskPool.prepare("test", task=TASK)))
    path = cache_dir() / "floors" / f"{TASK}-{key}.json"
    assert path.is_file()
    kept = path.read_text(encoding="utf-8")
    calls = []
    monkeypatch.setattr(floors, "compute_rows", lambda *a: calls.append(a) or [])
    try:
        again = {row.name: row for row in task_rows(TASK, metrics=suite)}
        assert calls == [] and again[COPY].samples == rows[COPY].samples
        path.write_text("{not json", encoding="utf-8")
        assert task_rows(TASK, metrics=suite) == [] and len(calls) == 1
        assert json.loads(path.read_text(encoding="utf-8")) == {"key": key, "rows": []}
    finally:  # the other tests of this worker may read the cache again
        path.write_text(kept, encoding="utf-8")
