"""The SQLite results store: schema, run lifecycle, atomic finishing and concurrent writers."""

from __future__ import annotations

import logging
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from grue_bench.errors import GrueError
from grue_bench.runner.executor import keep_alive
from grue_bench.store import (
    BEFORE_TRAINING,
    SCHEMA_VERSION,
    Store,
    environment_info,
    git_commit,
    run_key,
)
from grue_bench.store import schema as store_schema
from grue_bench.store.claims import OWNER_COLUMNS, Owner


def start(store: Store, *, seed: int = 0, alg: str = "ppo", task: str = "imdb", **kwargs):
    """Start (or reuse) a run with small defaults."""
    return store.start_run(
        task=task,
        task_version=1,
        alg=alg,
        seed=seed,
        profile="tiny",
        model="tiny-gpt2",
        config={"alg": {"id": alg}},
        config_hash="abc123",
        **kwargs,
    )


def count(store: Store, table: str, run_id: int) -> int:
    return store.db.execute(f"SELECT count(*) FROM {table} WHERE run_id = ?", [run_id]).fetchone()[0]


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "results" / "grue.db") as opened:
        yield opened


# --- opening ----------------------------------------------------------------------------------


def test_create_and_reopen(tmp_path: Path):
    path = tmp_path / "grue.db"
    with Store(path) as first:
        run = start(first, output_dir=tmp_path / "out")
        first.log_metrics(run.id, 0, "train", {"loss": 1.5})
    with Store(path) as second:
        again = second.get_run(run.key)
        assert again == run
        assert again.config == {"alg": {"id": "ppo"}}
        assert again.output_dir == str(tmp_path / "out")
        assert {"python", "platform", "grue_bench"} <= set(again.versions)
        assert second.curves(run.id, "train") == {"loss": [(0, 1.5)]}
        assert second.db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert second.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert second.db.execute("PRAGMA busy_timeout").fetchone()[0] >= 10_000
        assert second.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def set_schema_version(path: Path, version: int) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE schema_version SET version = ?", [version])
    conn.close()


def test_newer_schema_version_is_refused(tmp_path: Path):
    path = tmp_path / "grue.db"
    Store(path).close()
    set_schema_version(path, 7)
    with pytest.raises(GrueError) as caught:
        Store(path)
    message = str(caught.value)
    assert str(path) in message and "7" in message and f"({SCHEMA_VERSION})" in message
    assert "upgrade" in message


def test_older_schema_version_without_migration_is_refused(tmp_path: Path):
    path = tmp_path / "grue.db"
    Store(path).close()
    set_schema_version(path, 0)
    with pytest.raises(GrueError, match="cannot migrate") as caught:
        Store(path)
    assert str(path) in str(caught.value)


def test_older_schema_version_is_migrated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "grue.db"
    Store(path).close()
    monkeypatch.setattr(store_schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setattr(
        store_schema, "MIGRATIONS", {SCHEMA_VERSION: lambda db: db.execute("ALTER TABLE runs ADD note TEXT")}
    )
    with Store(path) as migrated:
        assert migrated.db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION + 1,)]
        assert "note" in migrated.db["runs"].columns_dict


V2_CHECK = "CHECK (status IN ('queued', 'running', 'finished', 'failed', 'submitted'))"
V1_CHECK = "CHECK (status IN ('running', 'finished', 'failed', 'submitted'))"


START_KEY = run_key("imdb", "ppo", 0, "abc123")
"""The key of the run ``start`` registers."""


def old_store(path: Path, version: int) -> None:
    """A store as schema version 1-4 wrote it (before 4, without the crowd tables), with one run left
    'running' and its metric."""
    with sqlite3.connect(path) as conn:
        for statement in store_schema.SCHEMA:
            conn.execute(statement if version > 1 else statement.replace(V2_CHECK, V1_CHECK))
        added = {3: list(OWNER_COLUMNS), 4: ["skipped_metrics"]}
        for column in [column for since, columns in added.items() if since > version for column in columns]:
            conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        if version < 4:
            conn.execute("DROP TABLE crowd_items")
            conn.execute("DROP TABLE crowd_batches")
        conn.execute("DROP TABLE sample_scores")
        conn.execute("INSERT INTO schema_version VALUES (?)", [version])
        conn.execute(
            "INSERT INTO runs (key, task, alg, seed, profile, config, config_hash, status, source, "
            "versions, started_at) VALUES (?, 'imdb', 'ppo', 0, 'tiny', '{}', 'abc123', 'running', "
            "'run', '{}', '2026-11-22')",
            [START_KEY],
        )
        conn.execute("INSERT INTO metrics VALUES (1, 'train', 'loss', 0, 1.0)")
    conn.close()


def test_a_schema_1_store_gains_the_queued_status_and_keeps_its_rows(tmp_path: Path):
    path = tmp_path / "v1.db"
    old_store(path, 1)
    with Store(path) as migrated:
        assert migrated.db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert migrated.get_run(START_KEY).status == "running"
        assert migrated.curves(1, "train") == {"loss": [(0, 1.0)]}  # not cascaded away
        assert start(migrated).status == "queued"
        assert {"runs_status", "runs_task_alg"} <= {index.name for index in migrated.db["runs"].indexes}
        with pytest.raises(sqlite3.IntegrityError):  # foreign keys are enforced again
            migrated.db.execute("INSERT INTO metrics VALUES (99, 'train', 'loss', 0, 1.0)")
    with Store(path) as reopened:  # and the migrated file opens as it is
        assert len(reopened.runs()) == 1


def test_a_schema_4_store_gains_an_empty_sample_scores_table(tmp_path: Path):
    path = tmp_path / "v4.db"
    old_store(path, 4)
    with Store(path) as migrated:
        assert migrated.db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert migrated.db["sample_scores"].count == 0
        assert migrated.curves(1, "train") == {"loss": [(0, 1.0)]}


def test_a_schema_2_store_gains_run_owners_and_its_running_run_is_taken_up(tmp_path: Path):
    path = tmp_path / "v2.db"
    old_store(path, 2)
    with Store(path) as migrated:
        assert migrated.db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        left = migrated.get_run(START_KEY)
        assert left.status == "running" and left.owner is None and left.heartbeat_at is None
        assert migrated.curves(1, "train") == {"loss": [(0, 1.0)]}
        assert {"runs_status", "runs_task_alg"} <= {index.name for index in migrated.db["runs"].indexes}
        taken = start(migrated)  # no process holds a run from before: the next grid takes it
        assert taken.id == 1 and taken.status == "queued" and taken.owner == Owner.current()


def test_a_schema_3_store_gains_skipped_metrics_and_the_crowd_tables_and_keeps_its_rows(tmp_path: Path):
    path = tmp_path / "v3.db"
    old_store(path, 3)
    with Store(path) as migrated:
        assert migrated.db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert SCHEMA_VERSION == 5  # and the sample_scores table, from 4 to 5
        assert "sample_scores" in migrated.db.table_names()
        left = migrated.get_run(START_KEY)
        assert left.status == "running" and left.skipped_metrics == {}
        assert migrated.curves(1, "train") == {"loss": [(0, 1.0)]}
        assert {"crowd_batches", "crowd_items"} <= set(migrated.db.table_names())
        assert {"runs_status", "runs_task_alg"} <= {index.name for index in migrated.db["runs"].indexes}
        run = start(migrated)  # the run left 'running' is taken up, executed and finished
        migrated.mark_executing(run.id)
        migrated.finish_run(run.id, skipped_metrics={"semantic/bert_score": "model offline"})
    with Store(path) as reopened:
        assert reopened.get_run(START_KEY).skipped_metrics == {"semantic/bert_score": "model offline"}


@pytest.mark.parametrize(("claimed", "column"), [(2, "owner_pid"), (3, "skipped_metrics")])
def test_a_runs_table_that_already_has_a_later_column_is_not_migrated_blindly(
    tmp_path: Path, claimed: int, column: str
):
    path = tmp_path / "odd.db"
    Store(path).close()
    set_schema_version(path, claimed)  # claims an older version, but its runs table is already newer
    with pytest.raises(
        GrueError, match=rf"cannot be migrated from schema version {claimed} to {claimed + 1}.*{column}"
    ):
        Store(path)


def test_a_runs_table_unlike_schema_1s_is_not_migrated_blindly(tmp_path: Path):
    path = tmp_path / "odd.db"
    Store(path).close()
    set_schema_version(path, 1)  # claims version 1, but its runs table is already version 2's
    with pytest.raises(GrueError, match="cannot be migrated from schema version 1 to 2") as caught:
        Store(path)
    assert str(path) in str(caught.value) and "status CHECK" in str(caught.value)


def test_a_file_that_is_not_sqlite_is_named(tmp_path: Path):
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(GrueError) as caught:
        Store(path)
    message = str(caught.value)
    assert str(path) in message and "not a SQLite database" in message and "fix:" in message
    assert path.read_text().startswith("these are my notes")  # left untouched


def test_a_foreign_sqlite_database_is_refused(tmp_path: Path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.close()
    with pytest.raises(GrueError, match=r"not a GRUE Bench results store.*invoices"):
        Store(path)


# --- run lifecycle ----------------------------------------------------------------------------


def test_run_key_is_stable_and_distinguishes_each_part():
    key = run_key("imdb", "ppo", 0, "abc")
    assert key == run_key("imdb", "ppo", 0, "abc") and len(key) == 64
    others = {
        run_key("imdb", "nlpo", 0, "abc"),
        run_key("imdb", "ppo", 1, "abc"),
        run_key("cg", "ppo", 0, "abc"),
    }
    assert key not in others and len(others) == 3


def test_start_resume_finish_and_force(store: Store):
    run = start(store)
    assert run.status == "queued" and run.source == "run" and run.key == run_key("imdb", "ppo", 0, "abc123")
    assert run.afresh  # new to the store: nothing on disk is its own
    store.mark_executing(run.id)  # a worker takes it up
    executing = store.get_run(run.key)
    assert executing.status == "running" and executing.started_at >= run.started_at
    run = executing

    store.set_checkpoint(run.id, 4)
    store.log_metrics(run.id, 3, "train", {"loss": 0.4})
    store.fail_run(run.id, "CUDA out of memory\ntraceback ...")
    failed = store.get_run(run.key)
    assert failed.status == "failed" and failed.error.startswith("CUDA") and failed.finished_at

    resumed = start(store)  # a failed run is queued again, to resume from its checkpoint with its rows
    assert resumed.id == run.id and resumed.status == "queued" and not resumed.afresh
    assert resumed.error is None and resumed.finished_at is None
    assert resumed.duration_s == failed.duration_s  # the failed attempt's time is kept
    assert resumed.last_checkpoint_iteration == 4 and resumed.started_at == run.started_at
    assert count(store, "metrics", run.id) == 1
    assert start(store).id == run.id  # a queued one too
    store.mark_executing(run.id)
    assert start(store).status == "queued"  # and a running one (its process died)

    store.finish_run(run.id)
    finished = store.get_run(run.key)
    assert finished.status == "finished" and finished.done and finished.duration_s >= 0
    assert start(store) == finished  # a finished run is returned unchanged: the caller skips it
    assert not start(store).afresh

    store.add_generations(
        run.id, 5, "test", [{"sample_id": "a", "prompt": "p", "text": "t", "references": []}]
    )
    forced = start(store, force=True)
    assert forced.id == run.id and forced.status == "queued" and forced.afresh
    assert forced.last_checkpoint_iteration is None and forced.finished_at is None
    assert count(store, "metrics", run.id) == 0 and count(store, "generations", run.id) == 0
    assert len(store.runs()) == 1


def test_a_resumed_run_s_duration_adds_every_attempt(store: Store):
    run = start(store)
    store.mark_executing(run.id)
    started = datetime.fromisoformat(store.get_run(run.key).started_at)
    store.db["runs"].update(run.id, {"duration_s": 40.0})  # earlier attempts ran 40 s
    # this attempt's process dies 100 s in, after its last heartbeat
    last_beat = store_schema.timestamp(started + timedelta(seconds=100))
    store.db["runs"].update(run.id, {"heartbeat_at": last_beat})
    resumed = start(store)
    assert resumed.status == "queued" and resumed.duration_s == pytest.approx(140.0)
    store.mark_executing(run.id)
    store.fail_run(run.id, "killed")  # a failed attempt adds its own time
    failed = store.get_run(run.key)
    assert 140.0 <= failed.duration_s < 150.0
    assert start(store).duration_s == failed.duration_s
    store.mark_executing(run.id)
    store.finish_run(run.id)
    assert failed.duration_s <= store.get_run(run.key).duration_s < failed.duration_s + 10.0


def test_a_submission_finishes_as_submitted(store: Store):
    run = start(store, source="submission", submission={"name": "my-baseline", "authors": ["A"]})
    store.finish_run(run.id, iteration=0, final_metrics={"test": {"rouge2": 0.1}})
    done = store.get_run(run.key)
    assert done.status == "submitted" and done.done and done.submission["name"] == "my-baseline"
    assert start(store, source="submission").status == "submitted"


def test_finishing_an_unknown_run_is_an_error(store: Store):
    with pytest.raises(KeyError, match="no run with id 99"):
        store.finish_run(99)


def test_runs_filters(store: Store):
    for alg in ("ppo", "nlpo"):
        for seed in (0, 1):
            start(store, alg=alg, seed=seed)
    start(store, task="cg", alg="ppo", seed=0)
    store.fail_run(store.runs(alg="nlpo")[0].id, "boom")
    store.mark_executing(store.runs(alg="nlpo", status="queued")[0].id)

    assert len(store.runs()) == 5
    assert [(r.alg, r.seed) for r in store.runs(task="imdb", alg="ppo")] == [("ppo", 0), ("ppo", 1)]
    assert [r.task for r in store.runs(alg="ppo")] == ["cg", "imdb", "imdb"]
    assert [(r.alg, r.seed) for r in store.runs(status="failed")] == [("nlpo", 0)]
    assert store.runs(task="imdb", alg="nlpo", status="running")[0].seed == 1
    assert [(r.task, r.alg, r.seed) for r in store.runs(status="queued")] == [
        ("cg", "ppo", 0),
        ("imdb", "ppo", 0),
        ("imdb", "ppo", 1),
    ]
    assert store.runs(task="nothing") == []


# --- metrics and generations ------------------------------------------------------------------


def test_rewriting_a_metric_point_replaces_it(store: Store):
    run = start(store)
    store.log_metrics(run.id, 2, "validation", {"rouge1": 0.2, "bleu": 0.1})
    store.log_metrics(run.id, 2, "validation", {"rouge1": 0.3})  # e.g. after a resume
    assert store.curves(run.id, "validation") == {"bleu": [(2, 0.1)], "rouge1": [(2, 0.3)]}
    assert count(store, "metrics", run.id) == 2


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), "high"])
def test_a_non_finite_metric_is_rejected_by_name(store: Store, bad):
    run = start(store)
    with pytest.raises(GrueError, match="'train/kl_to_ref'") as caught:
        store.log_metrics(run.id, 1, "train", {"train/loss": 0.5, "train/kl_to_ref": bad})
    assert caught.value.problems[0].key == "train/kl_to_ref"
    assert count(store, "metrics", run.id) == 0  # nothing of the call is written


def test_curves_by_split_and_iteration(store: Store):
    run = start(store)
    for iteration in (2, 0, 1):
        store.log_metrics(run.id, iteration, "rollout", {"reward": iteration / 10, "length": 20 + iteration})
    store.log_metrics(run.id, BEFORE_TRAINING, "test", {"rouge1": 0.1})
    store.log_metrics(run.id, 3, "test", {"rouge1": 0.4})
    assert store.curves(run.id, "rollout") == {
        "length": [(0, 20.0), (1, 21.0), (2, 22.0)],
        "reward": [(0, 0.0), (1, 0.1), (2, 0.2)],
    }
    assert store.curves(run.id, "test") == {"rouge1": [(-1, 0.1), (3, 0.4)]}
    assert store.curves(run.id, "train") == {}


def test_generations_are_stored_and_replaced(store: Store):
    run = start(store)
    rows = [
        {"sample_id": str(i), "prompt": f"p{i}", "text": f"t{i}", "references": [f"r{i}"]} for i in range(3)
    ]
    store.add_generations(run.id, 0, "validation", rows)
    store.add_generations(run.id, 0, "validation", [{**rows[0], "text": "better"}])
    stored = store.db.execute(
        'SELECT sample_id, text, "references" FROM generations WHERE run_id = ? ORDER BY sample_id', [run.id]
    ).fetchall()
    assert stored == [("0", "better", '["r0"]'), ("1", "t1", '["r1"]'), ("2", "t2", '["r2"]')]
    with pytest.raises(ValueError, match="split 'dev'"):
        store.add_generations(run.id, 0, "dev", rows)


def test_metrics_table_joins_runs(store: Store):
    for seed in (0, 1):
        run = start(store, seed=seed)
        store.log_metrics(run.id, 0, "test", {"rouge1": 0.1 * (seed + 1)})
    table = store.metrics_table()
    assert list(table.columns) == [
        "run_id", "key", "task", "task_version", "alg", "seed", "profile", "model",
        "config_hash", "status", "source", "split", "name", "iteration", "value",
    ]  # fmt: skip
    assert table["seed"].tolist() == [0, 1] and table["value"].tolist() == pytest.approx([0.1, 0.2])
    assert set(table["task"]) == {"imdb"}


# --- atomic finish ----------------------------------------------------------------------------


def test_finish_run_writes_final_rows_with_the_status(store: Store):
    run = start(store)
    generation = {"sample_id": "s1", "prompt": "p", "text": "t", "references": ["r"]}
    store.finish_run(
        run.id, iteration=10, final_metrics={"test": {"rouge1": 0.5}}, generations={"test": [generation]}
    )
    assert store.get_run(run.key).status == "finished"
    assert store.curves(run.id, "test") == {"rouge1": [(10, 0.5)]}
    assert count(store, "generations", run.id) == 1
    with pytest.raises(ValueError, match="iteration="):
        store.finish_run(run.id, final_metrics={"test": {"rouge1": 0.5}})


def test_skipped_metrics_are_stored_with_the_finished_run(tmp_path: Path):
    path = tmp_path / "grue.db"
    skipped = {"semantic/bert_score": "needs the hub, which is offline", "diversity/self_bleu": "one sample"}
    with Store(path) as first:
        run = start(first)
        assert run.skipped_metrics == {}
        first.finish_run(run.id, iteration=1, final_metrics={"test": {"rouge": 0.5}}, skipped_metrics=skipped)
    with Store(path) as second:
        assert second.get_run(run.key).skipped_metrics == skipped
        restarted = start(second, force=True)  # a fresh start forgets what the last attempt skipped
        assert restarted.skipped_metrics == {}


def assert_untouched(store: Store, run) -> None:
    after = store.get_run(run.key)
    assert after.status == "queued" and after.finished_at is None
    assert count(store, "metrics", run.id) == 0 and count(store, "generations", run.id) == 0


def test_finish_run_is_all_or_nothing_when_a_row_fails(store: Store):
    run = start(store)
    good = {"sample_id": "s1", "prompt": "p", "text": "t", "references": ["r"]}
    bad = {"sample_id": "s2", "prompt": "p", "text": None, "references": ["r"]}  # violates NOT NULL
    with pytest.raises(sqlite3.IntegrityError):
        store.finish_run(
            run.id, iteration=10, final_metrics={"test": {"rouge1": 0.5}}, generations={"test": [good, bad]}
        )
    assert_untouched(store, run)


def test_finish_run_is_all_or_nothing_when_marking_fails(store: Store, monkeypatch: pytest.MonkeyPatch):
    run = start(store)

    def crash(*args, **kwargs):
        raise RuntimeError("killed while marking the run finished")

    monkeypatch.setattr(Store, "_set_status", crash)
    generation = {"sample_id": "s1", "prompt": "p", "text": "t", "references": ["r"]}
    with pytest.raises(RuntimeError, match="killed"):
        store.finish_run(
            run.id, iteration=10, final_metrics={"test": {"rouge1": 0.5}}, generations={"test": [generation]}
        )
    monkeypatch.undo()
    assert_untouched(store, run)
    store.log_metrics(run.id, 0, "train", {"loss": 1.0})  # the store is usable after the rollback
    assert count(store, "metrics", run.id) == 1


def test_a_non_finite_final_metric_leaves_the_run_unfinished(store: Store):
    run = start(store)
    with pytest.raises(GrueError, match="'rouge1'"):
        store.finish_run(run.id, iteration=3, final_metrics={"test": {"meteor": 0.2, "rouge1": float("nan")}})
    assert_untouched(store, run)


# --- concurrent writers -----------------------------------------------------------------------

ROWS_PER_WRITER = 200


def write_metrics_concurrently(path: str, seed: int, barrier) -> None:
    """In a child process: open the (possibly new) store at the same moment as the other writer."""
    barrier.wait()
    with Store(path) as store:
        run = start(store, seed=seed)
        for iteration in range(ROWS_PER_WRITER):
            store.log_metrics(run.id, iteration, "train", {"loss": float(iteration)})


def test_two_processes_write_one_store_concurrently(tmp_path: Path):
    path = str(tmp_path / "shared.db")
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    writers = [
        context.Process(target=write_metrics_concurrently, args=(path, seed, barrier)) for seed in (0, 1)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=60)
    assert [writer.exitcode for writer in writers] == [0, 0]  # a "database is locked" would exit 1
    with Store(path) as store:
        runs = store.runs()
        assert [r.seed for r in runs] == [0, 1]
        assert store.db.execute("SELECT count(*) FROM metrics").fetchone()[0] == 2 * ROWS_PER_WRITER
        for run in runs:
            assert store.curves(run.id, "train")["loss"][-1] == (ROWS_PER_WRITER - 1, ROWS_PER_WRITER - 1.0)


# --- claims: the process holding a run --------------------------------------------------------


def hold(store: Store, run_id: int, owner: Owner, heartbeat_age_s: float = 0.0) -> None:
    """Record ``owner`` as holding the run, with a heartbeat ``heartbeat_age_s`` old."""
    beat = datetime.now(timezone.utc) - timedelta(seconds=heartbeat_age_s)
    store.db["runs"].update(run_id, {**owner.as_row(), "heartbeat_at": beat.isoformat()})


def ended_process() -> Owner:
    """A process of this host that has exited."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        return Owner.of(process.pid)
    finally:
        process.kill()
        process.wait()


def reused_pid() -> Owner:
    """A process recorded with the pid of a live one, which started at another time."""
    live = Owner.of(os.getppid())
    return Owner(live.host, live.pid, str(int(live.started) + 1))


ELSEWHERE = "another-host.invalid"
LIVE_HOLDERS = {
    "a live process of this host": lambda: (Owner.of(os.getppid()), 0.0),
    "a process of another host with a fresh heartbeat": lambda: (Owner(ELSEWHERE, 4242, "7"), 60.0),
}
GONE_HOLDERS = {
    "an ended process": lambda: (ended_process(), 0.0),
    "a pid now another process's": lambda: (reused_pid(), 0.0),
    "a process of another host whose heartbeat is stale": lambda: (Owner(ELSEWHERE, 4242, "7"), 3600.0),
}


def test_a_run_is_held_by_the_process_that_started_it_until_it_ends(store: Store):
    finished, failed = start(store, seed=0), start(store, seed=1)
    assert finished.owner == failed.owner == Owner.current() and finished.heartbeat_at
    store.mark_executing(finished.id)
    assert store.get_run(finished.key).owner == Owner.current()
    store.finish_run(finished.id)
    store.fail_run(failed.id, "boom")
    for run in (finished, failed):
        ended = store.get_run(run.key)
        assert ended.owner is None and ended.heartbeat_at is None
    assert start(store, seed=1).owner == Owner.current()  # a failed run is taken up again


@pytest.mark.parametrize("holder", LIVE_HOLDERS.values(), ids=LIVE_HOLDERS)
def test_a_run_another_live_process_holds_is_left_to_it(store: Store, holder, caplog):
    run = start(store)
    store.mark_executing(run.id)
    store.log_metrics(run.id, 0, "train", {"loss": 1.0})
    owner, heartbeat_age_s = holder()
    hold(store, run.id, owner, heartbeat_age_s)
    for force in (False, True):
        with caplog.at_level(logging.INFO, logger="grue_bench.store"):
            again = start(store, force=force)
        assert again.status == "running" and again.owner == owner
        assert f"in another process ({owner.describe()}): left to it" in caplog.text
    assert count(store, "metrics", run.id) == 1  # not even --force wipes a run another process executes


@pytest.mark.parametrize("holder", GONE_HOLDERS.values(), ids=GONE_HOLDERS)
def test_a_run_whose_holder_is_gone_is_taken_over_with_its_rows(store: Store, holder, caplog):
    run = start(store)
    store.mark_executing(run.id)
    store.set_checkpoint(run.id, 2)
    owner, heartbeat_age_s = holder()
    hold(store, run.id, owner, heartbeat_age_s)
    with caplog.at_level(logging.WARNING, logger="grue_bench.store"):
        taken = start(store)
    assert taken.status == "queued" and taken.owner == Owner.current()
    assert taken.last_checkpoint_iteration == 2  # it resumes from its checkpoint
    assert f"{owner.describe()} held it and is gone; taking it over" in caplog.text


def test_heartbeat_and_release_touch_only_the_runs_this_process_holds(store: Store):
    mine, theirs = start(store, seed=0), start(store, seed=1)
    hold(store, mine.id, Owner.current(), heartbeat_age_s=60)
    hold(store, theirs.id, Owner.of(os.getppid()), heartbeat_age_s=60)
    before = {run.key: store.get_run(run.key).heartbeat_at for run in (mine, theirs)}
    assert store.heartbeat() == 1
    assert store.get_run(mine.key).heartbeat_at > before[mine.key]
    assert store.get_run(theirs.key).heartbeat_at == before[theirs.key]
    store.release_runs()
    assert store.get_run(mine.key).owner is None and store.get_run(mine.key).status == "queued"
    assert store.get_run(theirs.key).owner == Owner.of(os.getppid())


def test_a_grid_refreshes_the_heartbeat_of_the_runs_it_holds(store: Store):
    run = start(store)
    with keep_alive(store.path, every=0.05):
        deadline = time.time() + 120
        while store.get_run(run.key).heartbeat_at == run.heartbeat_at and time.time() < deadline:
            time.sleep(0.05)
    assert store.get_run(run.key).heartbeat_at > run.heartbeat_at


RACERS = 4


def claim_at_once(path: str, barrier, results) -> None:
    """In a child process: claim the run at the same moment as the others, and stay alive until
    every racer has tried (a winner that had exited would rightly be taken over)."""
    with Store(path) as store:
        barrier.wait(timeout=120)
        results.put((os.getpid(), start(store).owner == Owner.current()))
        barrier.wait(timeout=120)


def test_of_processes_racing_to_claim_a_run_exactly_one_wins(tmp_path: Path):
    path = str(tmp_path / "shared.db")
    Store(path).close()
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(RACERS), context.Queue()
    racers = [context.Process(target=claim_at_once, args=(path, barrier, results)) for _ in range(RACERS)]
    for racer in racers:
        racer.start()
    claims = dict(results.get(timeout=180) for _ in racers)
    for racer in racers:
        racer.join(timeout=60)
    assert [racer.exitcode for racer in racers] == [0] * RACERS
    winners = [pid for pid, won in claims.items() if won]
    assert len(winners) == 1
    with Store(path) as store:
        assert store.get_run(START_KEY).owner_pid == winners[0]


# --- provenance ------------------------------------------------------------------------------------


def test_environment_info(tmp_path: Path):
    info = environment_info(tmp_path)
    assert info["python"].count(".") == 2 and info["platform"] and info["grue_bench"]
    assert info["git_commit"] is None  # tmp_path is not a git checkout


def test_git_commit_is_read_from_the_checkout(tmp_path: Path):
    sha = "0123456789abcdef0123456789abcdef01234567"
    git_dir = tmp_path / ".git"
    (git_dir / "refs" / "heads").mkdir(parents=True)
    (git_dir / "HEAD").write_text("ref: refs/heads/main\n")
    (git_dir / "refs" / "heads" / "main").write_text(sha + "\n")
    nested = tmp_path / "src" / "pkg"
    nested.mkdir(parents=True)
    assert git_commit(nested) == sha

    (git_dir / "refs" / "heads" / "main").unlink()  # after `git gc`, the ref is packed
    (git_dir / "packed-refs").write_text(f"# pack-refs with: peeled\n{sha} refs/heads/main\n")
    assert git_commit(tmp_path) == sha

    (git_dir / "HEAD").write_text(sha[::-1] + "\n")  # detached
    assert git_commit(tmp_path) == sha[::-1]


def test_a_run_records_the_offline_judges_that_score_it(store: Store):
    judges = {"sentiment": "imdb_sentiment@2", "intent": "daily_dialog_intent@2"}
    recorded = start(store, judges=judges)
    assert store.get_run(recorded.key).versions["offline_judges"] == judges
    assert "offline_judges" not in start(store, seed=1).versions  # none given: none claimed
