"""`grue merge`: the finished runs of other stores, with all their rows, copied into one store."""

from __future__ import annotations

from pathlib import Path

import pytest

from grue_bench.cli import main
from grue_bench.errors import GrueError
from grue_bench.store import Store
from grue_bench.store.merge import merge_runs


def start(store: Store, *, seed: int, alg: str = "ppo"):
    return store.start_run(
        task="imdb",
        task_version=1,
        alg=alg,
        seed=seed,
        profile="small",
        model="smollm2-135m",
        config={"alg": {"id": alg}},
        config_hash="abc123",
    )


def finished(store: Store, *, seed: int, reward: float):
    record = start(store, seed=seed)
    store.log_metrics(record.id, 10, "test", {"semantic/learned_automodel_metric": reward})
    store.log_metrics(record.id, 5, "validation", {"semantic/learned_automodel_metric": reward / 2})
    store.add_generations(
        record.id, 10, "test", [{"sample_id": "s1", "prompt": "p", "text": f"t{seed}", "references": ["r"]}]
    )
    store.finish_run(record.id)
    return record


def test_merge_copies_finished_runs_with_their_rows_and_keeps_what_is_there(tmp_path: Path, capsys):
    with Store(tmp_path / "a.sqlite") as a:
        first = finished(a, seed=0, reward=0.6)
        start(a, seed=2)  # killed: not finished, left out
    with Store(tmp_path / "b.sqlite") as b:
        finished(b, seed=1, reward=0.7)
        finished(b, seed=0, reward=0.1)  # the same key as a's seed 0: a's is kept
    with Store(tmp_path / "all.sqlite") as target:
        target_first = merge_runs(target, tmp_path / "a.sqlite")
    assert target_first.copied == [first.key] and len(target_first.unfinished) == 1

    assert main(["merge", str(tmp_path / "b.sqlite"), "--store", str(tmp_path / "all.sqlite")]) == 0
    assert "1 run(s) copied, 1 already in" in capsys.readouterr().out
    with Store(tmp_path / "all.sqlite") as target:
        runs = {run.seed: run for run in target.runs()}
        assert sorted(runs) == [0, 1] and all(run.status == "finished" for run in runs.values())
        table = target.metrics_table().set_index(["run_id", "split", "iteration"])["value"]
        assert table[(runs[0].id, "test", 10)] == 0.6 and table[(runs[0].id, "validation", 5)] == 0.3
        assert table[(runs[1].id, "test", 10)] == 0.7
        assert [row["text"] for row in target.generations(runs[1].id, "test")] == ["t1"]


def test_merge_refuses_a_missing_source_and_the_store_itself(tmp_path: Path):
    with Store(tmp_path / "all.sqlite") as target:
        with pytest.raises(GrueError, match="store not found"):
            merge_runs(target, tmp_path / "nope.sqlite")
        with pytest.raises(GrueError, match="into itself"):
            merge_runs(target, tmp_path / "all.sqlite")
    (tmp_path / "notes.txt").write_text("not a store")
    not_a_store = pytest.raises(GrueError, match="not a GRUE Bench results store")
    with Store(tmp_path / "all.sqlite") as target, not_a_store:
        merge_runs(target, tmp_path / "notes.txt")


def test_merge_takes_only_the_chosen_task_alg_and_seed(tmp_path: Path):
    with Store(tmp_path / "grid.sqlite") as grid:
        keep = finished(grid, seed=1, reward=0.5)
        finished(grid, seed=0, reward=0.4)
    assert (
        main(["merge", str(tmp_path / "grid.sqlite"), "--store", str(tmp_path / "one.sqlite"), "--seed", "1"])
        == 0
    )
    with Store(tmp_path / "one.sqlite") as one:
        assert [run.key for run in one.runs()] == [keep.key]
        assert merge_runs(one, tmp_path / "grid.sqlite", task="imdb", alg="nlpo").copied == []
