"""`grue runs`: the plain text table of a store's runs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from grue_bench.cli import main
from grue_bench.commands.runs import _format_duration, format_runs
from grue_bench.store import Store


def test_format_runs(tmp_path: Path):
    assert format_runs([]) == "no runs"
    with Store(tmp_path / "grue.db") as store:
        ok = start(store, seed=0)
        store.finish_run(ok.id)
        bad = start(store, seed=1)
        store.fail_run(bad.id, "ValueError: bad reward\n  at line 3")
        lines = format_runs(store.runs()).splitlines()
    assert lines[0].split() == [
        "key",
        "task",
        "alg",
        "seed",
        "profile",
        "status",
        "duration",
        "collapse",
        "error",
    ]
    assert lines[1].split()[:6] == [ok.key[:10], "imdb", "ppo", "0", "tiny", "finished"]
    assert lines[2].split()[:6] == [bad.key[:10], "imdb", "ppo", "1", "tiny", "failed"]
    assert lines[2].endswith("ValueError: bad reward") and "line 3" not in lines[2]
    assert len(lines) == 3


def test_grue_runs_flags_a_collapsed_run_with_its_reason(tmp_path: Path, capsys):
    path = tmp_path / "grue.db"
    with Store(path) as store:
        for seed, texts in ((0, ["a fine reply", "another one", "and a third"]), (1, ["", "", "ok then"])):
            run = start(store, seed=seed)
            rows = [
                {"sample_id": f"s{i}", "prompt": "p", "text": t, "references": ["a reply of four"]}
                for i, t in enumerate(texts)
            ]
            store.finish_run(run.id, iteration=1, generations={"test": rows})
    assert main(["runs", "--store", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[7] == "-"  # not flagged
    assert "67% empty outputs" in lines[2] and "length 0.17× the references'" in lines[2]


def test_reading_a_sealed_store_leaves_it_as_it_is(tmp_path: Path, capsys):
    path = tmp_path / "grue.db"
    with Store(path) as store:
        store.finish_run(start(store, seed=0).id)
    sqlite3.connect(path).execute("PRAGMA journal_mode = DELETE").close()  # one file, as committed
    sealed = path.read_bytes()
    assert main(["runs", "--store", str(path)]) == 0
    assert "finished" in capsys.readouterr().out
    assert path.read_bytes() == sealed  # still in DELETE mode: a WAL switch rewrites the header
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grue.db"]  # no -wal or -shm beside it


def test_totals_add_up_recorded_time_per_task_and_algorithm(tmp_path: Path, capsys):
    path = tmp_path / "grue.db"
    with Store(path) as store:
        runs = [
            start(store, seed=0),
            start(store, seed=1),
            start(store, seed=0, alg="nlpo"),
            start(store, seed=2),
        ]
        for run in runs[:3]:
            store.finish_run(run.id)
    with sqlite3.connect(path) as db:  # the recorded times, every attempt added up (as a resumed run's)
        for run, seconds in zip(runs[:3], (600.0, 4500.0, 90.0), strict=True):
            db.execute("UPDATE runs SET duration_s = ? WHERE id = ?", (seconds, run.id))
    assert main(["runs", "--store", str(path), "--totals"]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        ["task", "alg", "runs", "total", "longest", "longest", "run"],
        ["imdb", "nlpo", "1", "1m30s", "1m30s", "seed", "0"],
        ["imdb", "ppo", "3", "1h25m", "1h15m", "seed", "1"],  # the unstarted seed 2: a run, no time
        ["all", "4", "1h26m", "1h15m", "imdb", "ppo", "seed", "1"],
    ]


@pytest.mark.parametrize(("seconds", "shown"), [(None, "-"), (4.25, "4.2s"), (125, "2m05s"), (7380, "2h03m")])
def test_durations_are_readable(seconds, shown):
    assert _format_duration(seconds) == shown


def start(store: Store, *, seed: int, alg: str = "ppo"):
    return store.start_run(
        task="imdb",
        task_version=1,
        alg=alg,
        seed=seed,
        profile="tiny",
        model="tiny-gpt2",
        config={"alg": {"id": "ppo"}},
        config_hash="abc123",
    )
