"""The SQLite results store: every run, curve, metric and generation of the benchmark.

One file, opened through sqlite-utils, in WAL mode with a busy timeout, so several processes can
write to it at once. Every write is one ``BEGIN IMMEDIATE`` transaction: a run is only marked
finished together with its final rows.

Iterations: ``BEFORE_TRAINING`` (-1) is the evaluation of the initial model, 0..n-1 are training
iterations, and the evaluation after training is logged at iteration n (the iterations completed),
so a run's final score on a split is its value at the largest iteration.

Runs: ``start_run`` registers a run as 'queued' (a grid registers all its runs up front) and
claims it for the calling process (see ``grue_bench.claims``); ``mark_executing`` makes it
'running' when a worker takes it up; ``finish_run``/``fail_run`` end it and release the claim.
``start_run`` on a key already stored returns a run another live process holds unchanged (the
caller leaves it to that process, even with ``force=True``), queues a 'queued', 'running' (its
process died) or 'failed' run again for a resume (its rows, provenance and checkpoint are kept),
returns a finished one unchanged (the caller skips it), and with ``force=True`` deletes the run's
metrics and generations and starts it afresh.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import platform
import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from sqlite_utils import Database

from grue_bench.claims import NO_OWNER, OWNER_COLUMNS, Owner
from grue_bench.errors import GrueError

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
BEFORE_TRAINING = -1
"""The iteration at which the initial model is evaluated."""
SPLITS = ("train", "validation", "test", "rollout")
STATUSES = ("queued", "running", "finished", "failed", "submitted")
DONE = ("finished", "submitted")
"""Statuses of a run whose results are complete: re-running skips it."""

# Closed sets are CHECKed, so a bad row never lands; changing a table means a new SCHEMA_VERSION.
SCHEMA = [
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    # One row per (task, alg, seed, config hash): a benchmark run or a scored submission.
    """CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,
        task TEXT NOT NULL,
        task_version INTEGER,
        alg TEXT NOT NULL,
        seed INTEGER NOT NULL,
        profile TEXT NOT NULL,
        model TEXT,
        config TEXT NOT NULL,
        config_hash TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'finished', 'failed', 'submitted')),
        source TEXT NOT NULL CHECK (source IN ('run', 'submission')),
        git_commit TEXT,
        versions TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        duration_s REAL,
        error TEXT,
        output_dir TEXT,
        last_checkpoint_iteration INTEGER,
        submission TEXT,
        {owner_columns}
    )""".format(owner_columns=", ".join(f"{name} {kind}" for name, kind in OWNER_COLUMNS.items())),
    "CREATE INDEX runs_task_alg ON runs (task, alg, seed)",
    "CREATE INDEX runs_status ON runs (status)",
    # Scalars per iteration; the primary key order serves curves (run, split, name by iteration).
    """CREATE TABLE metrics (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        split TEXT NOT NULL CHECK (split IN ('train', 'validation', 'test', 'rollout')),
        name TEXT NOT NULL,
        iteration INTEGER NOT NULL,
        value REAL NOT NULL,
        PRIMARY KEY (run_id, split, name, iteration)
    ) WITHOUT ROWID""",
    # Generated text per sample; "references" is a JSON list of strings.
    """CREATE TABLE generations (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        split TEXT NOT NULL CHECK (split IN ('train', 'validation', 'test', 'rollout')),
        iteration INTEGER NOT NULL,
        sample_id TEXT NOT NULL,
        prompt TEXT NOT NULL,
        text TEXT NOT NULL,
        "references" TEXT NOT NULL,
        PRIMARY KEY (run_id, split, iteration, sample_id)
    ) WITHOUT ROWID""",
    # Crowd ratings ingested from MTurk results; run_id is null for systems outside the store.
    # Unique per (assignment, sample, system, axis) so re-ingesting a results file is idempotent.
    """CREATE TABLE human_ratings (
        id INTEGER PRIMARY KEY,
        run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL,
        task TEXT NOT NULL,
        sample_id TEXT NOT NULL,
        system TEXT NOT NULL,
        worker_id TEXT NOT NULL,
        assignment_id TEXT NOT NULL,
        axis TEXT NOT NULL,
        rating REAL NOT NULL,
        batch_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (assignment_id, sample_id, system, axis)
    )""",
    "CREATE INDEX human_ratings_task_system ON human_ratings (task, system)",
    "CREATE INDEX human_ratings_run ON human_ratings (run_id)",
    # Submitted result folders (baselines/<name>/); meta is the submission's JSON metadata.
    """CREATE TABLE submissions (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        path TEXT NOT NULL,
        meta TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
]

# Crowd batches (grue crowd export): the blinded mapping from a batch's items to the systems behind
# them. Added within schema version 1, so "IF NOT EXISTS": a store created before these tables has
# them created on its first crowd write (Store._ensure_crowd_tables).
CROWD_SCHEMA = [
    # One row per exported batch; axes is the template's JSON rating axes, spec the export's options.
    """CREATE TABLE IF NOT EXISTS crowd_batches (
        batch_id TEXT PRIMARY KEY,
        task TEXT NOT NULL,
        mode TEXT NOT NULL CHECK (mode IN ('likert', 'pairwise')),
        template TEXT NOT NULL,
        axes TEXT NOT NULL,
        spec TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    # One row per item and slot ('' for a Likert item, 'A'/'B' for a pairwise one); an attention
    # check ('check') carries the JSON answers an attentive worker gives in "expected".
    """CREATE TABLE IF NOT EXISTS crowd_items (
        batch_id TEXT NOT NULL REFERENCES crowd_batches (batch_id) ON DELETE CASCADE,
        item_id TEXT NOT NULL,
        slot TEXT NOT NULL CHECK (slot IN ('', 'A', 'B')),
        kind TEXT NOT NULL CHECK (kind IN ('item', 'check')),
        sample_id TEXT NOT NULL,
        system TEXT NOT NULL,
        run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL,
        text TEXT NOT NULL,
        expected TEXT,
        PRIMARY KEY (batch_id, item_id, slot)
    ) WITHOUT ROWID""",
]
SCHEMA += CROWD_SCHEMA


def _admit_queued_status(db: Database) -> None:
    """Schema 1 -> 2: ``runs.status`` admits 'queued'. SQLite cannot alter a CHECK constraint,
    so the table is rebuilt from its own definition (foreign keys are off while the store opens,
    so dropping the old table cascades to nothing) and its indexes recreated."""
    (table_sql,) = db.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'runs'"
    ).fetchone()
    old_check = "CHECK (status IN ('running', 'finished', 'failed', 'submitted'))"
    if old_check not in table_sql:
        raise ValueError("its runs table is not schema version 1's (the status CHECK differs)")
    new_check = "CHECK (status IN ('queued', 'running', 'finished', 'failed', 'submitted'))"
    indexes = [
        sql
        for (sql,) in db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' AND sql IS NOT NULL"
        ).fetchall()
    ]
    # the name may be quoted (SQLite writes it so after a rename)
    new_table = re.sub(r'^CREATE TABLE\s+"?runs"?', "CREATE TABLE runs_v2", table_sql)
    db.execute(new_table.replace(old_check, new_check))
    db.execute("INSERT INTO runs_v2 SELECT * FROM runs")
    db.execute("DROP TABLE runs")
    db.execute("ALTER TABLE runs_v2 RENAME TO runs")
    for sql in indexes:
        db.execute(sql)


def _add_run_owner(db: Database) -> None:
    """Schema 2 -> 3: ``runs`` records the process holding a run and its heartbeat (no process
    holds the runs already stored: the next grid takes them)."""
    present = set(OWNER_COLUMNS) & set(db["runs"].columns_dict)
    if present:
        raise ValueError(f"its runs table already has {', '.join(sorted(present))} (not schema version 2's)")
    for name, kind in OWNER_COLUMNS.items():
        db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")


MIGRATIONS: dict[int, Callable[[Database], None]] = {1: _admit_queued_status, 2: _add_run_owner}
"""Migration from schema version N to N+1, keyed by N; applied in one transaction on open."""

_METRIC_PK = ("run_id", "split", "name", "iteration")
_GENERATION_PK = ("run_id", "split", "iteration", "sample_id")


class Generation(TypedDict):
    """One generated sample, as given to ``add_generations``."""

    sample_id: str
    prompt: str
    text: str
    references: list[str]


@dataclass(frozen=True)
class RunRecord:
    """One row of ``runs``, with its JSON columns parsed."""

    id: int
    key: str
    task: str
    task_version: int | None
    alg: str
    seed: int
    profile: str
    model: str | None
    config: dict[str, Any]
    config_hash: str
    status: str
    source: str
    git_commit: str | None
    versions: dict[str, Any]
    started_at: str
    finished_at: str | None
    duration_s: float | None
    error: str | None
    output_dir: str | None
    last_checkpoint_iteration: int | None
    submission: dict[str, Any] | None
    owner_host: str | None
    owner_pid: int | None
    owner_started: str | None
    heartbeat_at: str | None

    @property
    def done(self) -> bool:
        """Whether the run's results are complete (re-running skips it)."""
        return self.status in DONE

    @property
    def owner(self) -> Owner | None:
        """The process holding the run (its grid queued or is executing it), or None."""
        return Owner.from_row(vars(self))

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RunRecord:
        """Build from a ``runs`` row."""
        values = {f.name: row[f.name] for f in fields(cls)}
        for name in ("config", "versions", "submission"):
            if values[name] is not None:
                values[name] = json.loads(values[name])
        return cls(**values)


def run_key(task: str, alg: str, seed: int, config_hash: str) -> str:
    """The identity of a run: sha256 of ``task|alg|seed|config_hash``."""
    return hashlib.sha256(f"{task}|{alg}|{seed}|{config_hash}".encode()).hexdigest()


class Store:
    """A results store file; safe to open from several processes at once."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 30.0):
        self.path = Path(path)
        if self.path.is_dir():
            raise GrueError(
                "is a directory, not a results store file",
                source=str(self.path),
                fix="give a file path such as results/grue.db",
            )
        if not hasattr(Database, "atomic"):  # 3.x commits inside our transactions: no atomic finish
            raise GrueError(
                "the results store needs sqlite-utils 4 or newer", fix="pip install -U 'sqlite-utils>=4'"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # sqlite3's timeout is SQLite's busy_timeout: a writer waits for the lock instead of failing.
        conn = sqlite3.connect(self.path, timeout=busy_timeout_s)
        try:
            self.db = Database(conn)
            self.db.enable_wal()
            self._open_schema()  # foreign keys still off (SQLite's default): a migration may rebuild a table
            self.db.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as error:
            conn.close()
            raise self._open_error(error) from error
        except BaseException:
            conn.close()
            raise

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """One write transaction (``BEGIN IMMEDIATE``); nested blocks become savepoints."""
        conn = self.db.conn
        if conn.in_transaction:
            with self.db.atomic():
                yield self.db
            return
        # IMMEDIATE takes the write lock up front, waiting up to busy_timeout; a deferred BEGIN that
        # reads then writes can fail at once with "database is locked" when another process wrote.
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.rollback()
            raise
        try:
            conn.execute("COMMIT")
        except BaseException:
            self.db.rollback()
            raise

    # --- runs ---------------------------------------------------------------------------------

    def start_run(
        self,
        *,
        task: str,
        task_version: int | None,
        alg: str,
        seed: int,
        profile: str,
        model: str | None,
        config: dict[str, Any],
        config_hash: str,
        output_dir: str | Path | None = None,
        source: str = "run",
        submission: dict[str, Any] | None = None,
        force: bool = False,
    ) -> RunRecord:
        """Insert a 'queued' run held by this process; one with the same key is queued again for
        a resume (and claimed), or returned as is if done or held by another live process."""
        key = run_key(task, alg, seed, config_hash)
        environment = environment_info()
        row = {
            "key": key,
            "task": task,
            "task_version": task_version,
            "alg": alg,
            "seed": seed,
            "profile": profile,
            "model": model,
            "config": json.dumps(config, sort_keys=True),
            "config_hash": config_hash,
            "status": "queued",
            "source": source,
            "git_commit": environment.pop("git_commit"),
            "versions": json.dumps(environment, sort_keys=True),
            "started_at": _now(),
            "finished_at": None,
            "duration_s": None,
            "error": None,
            "output_dir": None if output_dir is None else str(output_dir),
            "last_checkpoint_iteration": None,
            "submission": None if submission is None else json.dumps(submission, sort_keys=True),
        }
        with self.transaction():  # the check and the claim in one: of two racing processes, one wins
            existing = self._run_row("key", key)
            holder = None if existing is None else _live_holder(existing)
            claim = {**Owner.current().as_row(), "heartbeat_at": _now()}
            if existing is None:
                self.db["runs"].insert({**row, **claim})
                log.info("run %s started: %s %s seed %d", key[:10], task, alg, seed)
            elif holder is not None:
                log.info(
                    "run %s is %s in another process (%s): left to it",
                    key[:10],
                    existing["status"],
                    holder.describe(),
                )
                return RunRecord.from_row(existing)
            elif force:
                self.db["metrics"].delete_where("run_id = ?", [existing["id"]])
                self.db["generations"].delete_where("run_id = ?", [existing["id"]])
                self.db["runs"].update(existing["id"], {**row, **claim})
                log.info("run %s restarted (force): earlier rows deleted", key[:10])
            elif existing["status"] in DONE:
                log.info("run %s is %s: skipped", key[:10], existing["status"])
                return RunRecord.from_row(existing)
            else:
                # Resume: keep the provenance and the checkpoint; started_at is reset when it executes.
                resumed = {"status": "queued", "error": None, "finished_at": None, "duration_s": None}
                self.db["runs"].update(existing["id"], {**resumed, **claim})
                _log_takeover(existing)
                log.info(
                    "run %s resumed (was %s, checkpoint %s)",
                    key[:10],
                    existing["status"],
                    existing["last_checkpoint_iteration"],
                )
            record = self._run_row("key", key)
        assert record is not None
        return RunRecord.from_row(record)

    def get_run(self, key: str) -> RunRecord | None:
        """The run with this key, or None."""
        row = self._run_row("key", key)
        return None if row is None else RunRecord.from_row(row)

    def runs(
        self, task: str | None = None, alg: str | None = None, status: str | None = None
    ) -> list[RunRecord]:
        """Runs matching every filter given, ordered by task, alg, seed."""
        given = {
            column: value for column, value in (("task", task), ("alg", alg), ("status", status)) if value
        }
        where = " AND ".join(f"{column} = :{column}" for column in given)
        rows = self.db["runs"].rows_where(where or None, given or None, order_by="task, alg, seed, id")
        return [RunRecord.from_row(row) for row in rows]

    def mark_executing(self, run_id: int) -> None:
        """The run (or this attempt at it) starts executing now: 'running', its duration counted
        from here, not from the time its grid queued it (it may wait behind others)."""
        with self.transaction():
            self.db["runs"].update(run_id, {"status": "running", "started_at": _now()})

    def heartbeat(self) -> int:
        """Refresh the heartbeat of the runs this process holds, which keeps them from a grid on
        another host (it cannot see this process); returns how many there are."""
        where, params = _held_here()
        with self.transaction():
            beat = self.db.execute(f"UPDATE runs SET heartbeat_at = ? WHERE {where}", [_now(), *params])
        return beat.rowcount

    def release_runs(self) -> None:
        """Let go of the runs this process still holds (its grid stops before they end, e.g. on
        an error), so the next grid takes them over even while this process lives on."""
        where, params = _held_here()
        assignments = ", ".join(f"{name} = NULL" for name in NO_OWNER)
        with self.transaction():
            self.db.execute(f"UPDATE runs SET {assignments} WHERE {where}", params)

    def set_checkpoint(self, run_id: int, iteration: int) -> None:
        """Record the last iteration whose checkpoint is saved (where a resume starts)."""
        with self.transaction():
            self.db["runs"].update(run_id, {"last_checkpoint_iteration": iteration})

    def finish_run(
        self,
        run_id: int,
        *,
        iteration: int | None = None,
        final_metrics: Mapping[str, Mapping[str, float]] | None = None,
        generations: Mapping[str, Sequence[Generation]] | None = None,
        model: str | None = None,
    ) -> None:
        """Write the final rows (per split, at ``iteration``) and mark the run done, atomically;
        ``model`` records what was trained (known once the run has loaded it)."""
        if (final_metrics or generations) and iteration is None:
            raise ValueError("finish_run needs iteration= to write final metrics or generations")
        checked = {
            split: _checked_metrics(run_id, iteration, split, values)
            for split, values in (final_metrics or {}).items()
        }
        with self.transaction():
            for split, values in checked.items():
                self._write_metrics(run_id, iteration, split, values)
            for split, rows in (generations or {}).items():
                self._write_generations(run_id, iteration, split, rows)
            row = self._require_run(run_id)
            if model is not None:
                self.db["runs"].update(run_id, {"model": model})
            status = "submitted" if row["source"] == "submission" else "finished"
            self._set_status(row, status)
        log.info("run %s %s", row["key"][:10], status)

    def fail_run(self, run_id: int, error: str) -> None:
        """Mark a run failed with its error (a later start resumes it)."""
        with self.transaction():
            row = self._require_run(run_id)
            self._set_status(row, "failed", error=error)
        log.warning("run %s failed: %s", row["key"][:10], _first_line(error))

    # --- metrics and generations --------------------------------------------------------------

    def log_metrics(self, run_id: int, iteration: int, split: str, values: Mapping[str, float]) -> None:
        """Write scalars for one (iteration, split); rewriting a point replaces it."""
        checked = _checked_metrics(run_id, iteration, split, values)
        with self.transaction():
            self._write_metrics(run_id, iteration, split, checked)

    def add_generations(self, run_id: int, iteration: int, split: str, rows: Sequence[Generation]) -> None:
        """Write generated samples for one (iteration, split); rewriting a sample replaces it."""
        with self.transaction():
            self._write_generations(run_id, iteration, split, rows)

    def curves(self, run_id: int, split: str) -> dict[str, list[tuple[int, float]]]:
        """Each metric of a run's split as (iteration, value) pairs, by iteration."""
        result: dict[str, list[tuple[int, float]]] = {}
        rows = self.db.execute(
            "SELECT name, iteration, value FROM metrics WHERE run_id = ? AND split = ? "
            "ORDER BY name, iteration",
            [run_id, split],
        )
        for name, iteration, value in rows:
            result.setdefault(name, []).append((iteration, value))
        return result

    def metrics_table(self) -> pd.DataFrame:
        """Every metric row joined with its run's identity, as a pandas DataFrame."""
        import pandas as pd

        return pd.read_sql_query(
            """SELECT m.run_id, r.key, r.task, r.task_version, r.alg, r.seed, r.profile, r.model,
                      r.config_hash, r.status, r.source, m.split, m.name, m.iteration, m.value
               FROM metrics AS m JOIN runs AS r ON r.id = m.run_id
               ORDER BY r.task, r.alg, r.seed, m.run_id, m.split, m.name, m.iteration""",
            self.db.conn,
        )

    # --- internals ----------------------------------------------------------------------------

    def _open_schema(self) -> None:
        with self.transaction():
            tables = {name for name in self.db.table_names() if not name.startswith("sqlite_")}
            if "schema_version" not in tables:
                if tables:
                    raise GrueError(
                        f"is a SQLite database but not a GRUE Bench results store (tables: "
                        f"{', '.join(sorted(tables))})",
                        source=str(self.path),
                        fix="choose another store path; GRUE Bench creates the file itself",
                    )
                for statement in SCHEMA:
                    self.db.execute(statement)
                self.db["schema_version"].insert({"version": SCHEMA_VERSION})
                log.info("created results store %s (schema version %d)", self.path, SCHEMA_VERSION)
                return
            version = self.db.execute("SELECT max(version) FROM schema_version").fetchone()[0]
            if version is None or version > SCHEMA_VERSION:
                raise GrueError(
                    f"has schema version {version}, newer than this GRUE Bench's ({SCHEMA_VERSION})",
                    source=str(self.path),
                    fix="upgrade GRUE Bench (pip install -U grue-bench) or use another store file",
                )
            if version < SCHEMA_VERSION:
                self._migrate(version)

    def _migrate(self, version: int) -> None:
        if any(step not in MIGRATIONS for step in range(version, SCHEMA_VERSION)):
            raise GrueError(
                f"has schema version {version}, which this GRUE Bench (schema version "
                f"{SCHEMA_VERSION}) cannot migrate",
                source=str(self.path),
                fix="open it with the GRUE Bench release that wrote it, or start a new store file",
            )
        for step in range(version, SCHEMA_VERSION):
            try:
                MIGRATIONS[step](self.db)
            except ValueError as error:
                raise GrueError(
                    f"cannot be migrated from schema version {step} to {step + 1}: {error}",
                    source=str(self.path),
                    fix="open it with the GRUE Bench release that wrote it, or start a new store file",
                ) from error
        self.db.execute("UPDATE schema_version SET version = ?", [SCHEMA_VERSION])
        log.info("migrated %s from schema version %d to %d", self.path, version, SCHEMA_VERSION)

    def _open_error(self, error: sqlite3.DatabaseError) -> GrueError:
        not_a_database = getattr(error, "sqlite_errorcode", None) == getattr(sqlite3, "SQLITE_NOTADB", 26)
        if not_a_database or "file is not a database" in str(error):
            return GrueError(
                "is not a SQLite database",
                source=str(self.path),
                fix="point the store (the config's 'store' key or --store) at a new path or at a "
                "store GRUE Bench created; move this file away if it was written by something else",
            )
        return GrueError(
            f"cannot open the results store: {error}",
            source=str(self.path),
            fix="check that the file and its folder are writable and on a local file system",
        )

    def _run_row(self, column: str, value: object) -> dict[str, Any] | None:
        return next(self.db["runs"].rows_where(f"{column} = ?", [value]), None)

    def _require_run(self, run_id: int) -> dict[str, Any]:
        row = self._run_row("id", run_id)
        if row is None:
            raise KeyError(f"no run with id {run_id} in {self.path}")
        return row

    def _set_status(self, row: Mapping[str, Any], status: str, error: str | None = None) -> None:
        finished = datetime.now(timezone.utc)
        duration = (finished - datetime.fromisoformat(row["started_at"])).total_seconds()
        changes = {
            "status": status,
            "error": error,
            "finished_at": _now(finished),
            "duration_s": duration,
            **NO_OWNER,  # an ended run is no process's: a later start may take it up
        }
        self.db["runs"].update(row["id"], changes)

    def _write_metrics(self, run_id: int, iteration: int, split: str, values: Mapping[str, float]) -> None:
        rows = [
            {"run_id": run_id, "split": split, "name": name, "iteration": iteration, "value": value}
            for name, value in values.items()
        ]
        if rows:
            self.db["metrics"].upsert_all(rows, pk=_METRIC_PK)

    def _write_generations(self, run_id: int, iteration: int, split: str, rows: Sequence[Generation]) -> None:
        _check_split(split)
        records = [
            {
                "run_id": run_id,
                "split": split,
                "iteration": iteration,
                "sample_id": str(row["sample_id"]),
                "prompt": row["prompt"],
                "text": row["text"],
                "references": json.dumps(list(row["references"])),
            }
            for row in rows
        ]
        if records:
            self.db["generations"].upsert_all(records, pk=_GENERATION_PK)

    def generations(self, run_id: int, split: str, iteration: int | None = None) -> list[Generation]:
        """A run's generated samples on a split at ``iteration`` (default: its last), by sample id."""
        if iteration is None:
            found = self.db.execute(
                "SELECT max(iteration) FROM generations WHERE run_id = ? AND split = ?", [run_id, split]
            ).fetchone()[0]
            if found is None:
                return []
            iteration = int(found)
        rows = self.db.execute(
            'SELECT sample_id, prompt, text, "references" FROM generations '
            "WHERE run_id = ? AND split = ? AND iteration = ? ORDER BY sample_id",
            [run_id, split, iteration],
        )
        return [
            Generation(sample_id=sample_id, prompt=prompt, text=text, references=json.loads(references))
            for sample_id, prompt, text, references in rows
        ]

    # --- crowd batches and human ratings ------------------------------------------------------

    def add_crowd_batch(self, batch: CrowdBatch, items: Sequence[CrowdItem]) -> bool:
        """Record an exported batch with its blinded item mapping; False if that batch is already stored."""
        with self.transaction():
            self._ensure_crowd_tables()
            if self.crowd_batch(batch.batch_id) is not None:
                return False
            row = {**asdict(batch), "axes": json.dumps(batch.axes), "spec": json.dumps(batch.spec)}
            self.db["crowd_batches"].insert(row)
            records = [
                {**asdict(item), "expected": None if item.expected is None else json.dumps(item.expected)}
                for item in items
            ]
            self.db["crowd_items"].insert_all(records)
        log.info("crowd batch %s stored: %d item rows", batch.batch_id, len(items))
        return True

    def crowd_batch(self, batch_id: str) -> CrowdBatch | None:
        """The exported batch with this id, or None."""
        if not self._has_table("crowd_batches"):
            return None
        row = next(self.db["crowd_batches"].rows_where("batch_id = ?", [batch_id]), None)
        if row is None:
            return None
        return CrowdBatch(**{**row, "axes": json.loads(row["axes"]), "spec": json.loads(row["spec"])})

    def crowd_items(self, batch_id: str) -> list[CrowdItem]:
        """A batch's item rows (items and attention checks, each slot), by item id and slot."""
        if not self._has_table("crowd_items"):
            return []
        rows = self.db["crowd_items"].rows_where("batch_id = ?", [batch_id], order_by="item_id, slot")
        return [
            CrowdItem(**{**row, "expected": None if row["expected"] is None else json.loads(row["expected"])})
            for row in rows
        ]

    def add_human_ratings(self, rows: Sequence[HumanRating]) -> int:
        """Write ratings in one transaction; a rating already stored for the same (assignment, sample,
        system, axis) is replaced, so re-ingesting a results file changes nothing. Returns the count."""
        columns = ("run_id", "task", "sample_id", "system", "worker_id", "assignment_id", "axis", "rating")
        created = _now()
        values = [[*(row[c] for c in columns), row["batch_id"], created] for row in rows]
        with self.transaction():
            self.db.conn.executemany(
                f"INSERT INTO human_ratings ({', '.join(columns)}, batch_id, created_at) "
                f"VALUES ({', '.join('?' * (len(columns) + 2))}) "
                "ON CONFLICT (assignment_id, sample_id, system, axis) DO UPDATE SET "
                "run_id = excluded.run_id, task = excluded.task, worker_id = excluded.worker_id, "
                "rating = excluded.rating, batch_id = excluded.batch_id",
                values,
            )
        return len(values)

    def human_ratings(self, task: str | None = None, batch_ids: Sequence[str] | None = None) -> pd.DataFrame:
        """Human ratings (every ``human_ratings`` column), optionally of one task or some batches."""
        import pandas as pd

        where, params = [], []
        if task is not None:
            where.append("task = ?")
            params.append(task)
        if batch_ids is not None:
            where.append(f"batch_id IN ({', '.join('?' * len(batch_ids))})")
            params.extend(batch_ids)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        return pd.read_sql_query(
            f"SELECT * FROM human_ratings{clause} ORDER BY task, batch_id, sample_id, system, axis, id",
            self.db.conn,
            params=params,
        )

    def _ensure_crowd_tables(self) -> None:
        """Create the crowd tables in a store made before they existed (idempotent)."""
        for statement in CROWD_SCHEMA:
            self.db.execute(statement)

    def _has_table(self, name: str) -> bool:
        return self.db[name].exists()


@dataclass(frozen=True)
class CrowdBatch:
    """An exported crowd batch: its task, mode, template, rating axes and export options."""

    batch_id: str
    task: str
    mode: str
    template: str
    axes: list[dict[str, Any]]
    spec: dict[str, Any]
    created_at: str


@dataclass(frozen=True)
class CrowdItem:
    """One slot of a batch item: the sample and system behind it ('check': an attention check)."""

    batch_id: str
    item_id: str
    slot: str
    kind: str
    sample_id: str
    system: str
    run_id: int | None
    text: str
    expected: dict[str, Any] | None


class HumanRating(TypedDict):
    """One rating, as given to ``add_human_ratings``."""

    run_id: int | None
    task: str
    sample_id: str
    system: str
    worker_id: str
    assignment_id: str
    axis: str
    rating: float
    batch_id: str


def _live_holder(row: Mapping[str, Any]) -> Owner | None:
    """The other process holding this run, if it is alive: the run is that process's to execute."""
    owner = Owner.from_row(row)
    if owner is None or owner == Owner.current():
        return None
    return owner if owner.is_alive(row["heartbeat_at"], datetime.now(timezone.utc)) else None


def _log_takeover(row: Mapping[str, Any]) -> None:
    """Say so when a run is taken from a process that died holding it."""
    owner = Owner.from_row(row)
    if owner is not None and owner != Owner.current():
        log.warning("run %s: %s held it and is gone; taking it over", row["key"][:10], owner.describe())


def _held_here() -> tuple[str, list[Any]]:
    """A WHERE clause (and its parameters) for the runs this process holds."""
    owner = Owner.current().as_row()
    return " AND ".join(f"{name} IS ?" for name in owner), list(owner.values())


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {', '.join(SPLITS)}")


def _checked_metrics(
    run_id: int, iteration: int, split: str, values: Mapping[str, float]
) -> dict[str, float]:
    """The values as floats; a non-finite or non-numeric one is a GrueError naming the metric."""
    _check_split(split)
    checked = {}
    for name, value in values.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number):
            raise GrueError(
                f"metric '{name}' is {value!r} (run {run_id}, iteration {iteration}, split {split}); "
                "the store keeps finite numbers only",
                key=name,
                fix="drop or repair this metric before logging it",
            )
        checked[name] = number
    return checked


def _now(moment: datetime | None = None) -> str:
    return (moment or datetime.now(timezone.utc)).isoformat(timespec="milliseconds")


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


# --- provenance -------------------------------------------------------------------------------


def environment_info(cwd: str | Path | None = None) -> dict[str, Any]:
    """Python, platform, installed versions of key packages and the git commit of ``cwd``."""
    from grue_bench import __version__

    info: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    for package in ("torch", "transformers", "datasets"):
        with suppress(metadata.PackageNotFoundError):
            info[package] = metadata.version(package)
    info["grue_bench"] = __version__
    info["git_commit"] = git_commit(Path.cwd() if cwd is None else Path(cwd))
    return info


def git_commit(folder: Path) -> str | None:
    """The commit checked out in the git work tree holding ``folder``, or None (read from .git)."""
    try:
        for candidate in (folder.resolve(), *folder.resolve().parents):
            dot_git = candidate / ".git"
            if dot_git.is_dir():
                return _head_commit(dot_git)
            if dot_git.is_file():  # a worktree or submodule: ".git" names the real git dir
                text = dot_git.read_text().strip()
                if not text.startswith("gitdir:"):
                    return None
                return _head_commit((candidate / text.removeprefix("gitdir:").strip()).resolve())
    except OSError as error:
        log.debug("no git commit for %s: %s", folder, error)
    return None


def _head_commit(git_dir: Path) -> str | None:
    head = (git_dir / "HEAD").read_text().strip()
    if not head.startswith("ref:"):
        return head or None  # detached HEAD
    ref = head.removeprefix("ref:").strip()
    common = git_dir
    if (git_dir / "commondir").is_file():
        common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
    for base in (git_dir, common):
        if (base / ref).is_file():
            return (base / ref).read_text().strip()
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text().splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha
    return None  # an unborn branch, or refs in a format we do not read (reftable)


# --- formatting -------------------------------------------------------------------------------


def format_runs(records: Sequence[RunRecord]) -> str:
    """A plain text table of runs for ``grue runs``."""
    if not records:
        return "no runs"
    header = ("key", "task", "alg", "seed", "profile", "status", "duration", "error")
    rows = [
        (
            r.key[:10],
            r.task,
            r.alg,
            str(r.seed),
            r.profile,
            r.status,
            _format_duration(r.duration_s),
            _truncate(_first_line(r.error), 60),
        )
        for r in records
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
    return "\n".join(lines)


def _format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
