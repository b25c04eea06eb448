"""The store's tables, their migrations, opening the file and its write transactions.

One SQLite file, opened through sqlite-utils in WAL mode with a busy timeout, so several processes
can write to it at once; a command that only reads it leaves its journal mode as it is (a store
sealed as one file, ``PRAGMA journal_mode = DELETE``, stays byte for byte the same). Every write is
one ``BEGIN IMMEDIATE`` transaction. A store written by an older schema version is migrated on
open, one step at a time, in one transaction.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from sqlite_utils import Database

from grue_bench.errors import GrueError
from grue_bench.store.claims import OWNER_COLUMNS

log = logging.getLogger(__name__)

SCHEMA_VERSION = 5

# Crowd batches (grue crowd export): the blinded mapping from a batch's items to the systems behind
# them. "IF NOT EXISTS": they came within schema version 1, so some older stores have them already.
CROWD_TABLES = [
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

# Per-sample scores (schema 5): for each metric key that has them, one value per generated sample,
# whose mean over the samples of an evaluation is the logged corpus score: the sample's own score
# for a mean over samples, its jackknife linearization for a corpus-level metric (BLEU, chrF, TER).
SAMPLE_SCORES_TABLE = """CREATE TABLE sample_scores (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        split TEXT NOT NULL CHECK (split IN ('train', 'validation', 'test', 'rollout')),
        iteration INTEGER NOT NULL,
        name TEXT NOT NULL,
        sample_id TEXT NOT NULL,
        value REAL NOT NULL,
        PRIMARY KEY (run_id, split, iteration, name, sample_id)
    ) WITHOUT ROWID"""

# Closed sets are CHECKed, so a bad row never lands; changing a table means a new SCHEMA_VERSION.
SCHEMA = [
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    # One row per (task, alg, seed, config hash): a benchmark run or a scored submission.
    # skipped_metrics: JSON {metric: reason} of the metrics a finished run could not compute.
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
        {owner_columns},
        skipped_metrics TEXT
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
    *CROWD_TABLES,
    SAMPLE_SCORES_TABLE,
]


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


def _add_columns(db: Database, columns: dict[str, str], version: int) -> None:
    """Add columns to ``runs``; one already there means the table is not ``version``'s."""
    present = set(columns) & set(db["runs"].columns_dict)
    if present:
        named = ", ".join(sorted(present))
        raise ValueError(f"its runs table already has {named} (not schema version {version}'s)")
    for name, kind in columns.items():
        db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")


def _add_run_owner(db: Database) -> None:
    """Schema 2 -> 3: ``runs`` records the process holding a run and its heartbeat (no process
    holds the runs already stored: the next grid takes them)."""
    _add_columns(db, OWNER_COLUMNS, version=2)


def _add_crowd_tables_and_skipped_metrics(db: Database) -> None:
    """Schema 3 -> 4: the crowd tables, which a store made before them lacks at any earlier
    version, and ``runs.skipped_metrics`` (NULL for the runs already stored)."""
    for statement in CROWD_TABLES:
        db.execute(statement)
    _add_columns(db, {"skipped_metrics": "TEXT"}, version=3)


def _add_sample_scores(db: Database) -> None:
    """Schema 4 -> 5: the per-sample scores table (empty: ``grue backfill`` fills it for the runs
    already stored, from their stored generations)."""
    db.execute(SAMPLE_SCORES_TABLE)


MIGRATIONS: dict[int, Callable[[Database], None]] = {
    1: _admit_queued_status,
    2: _add_run_owner,
    3: _add_crowd_tables_and_skipped_metrics,
    4: _add_sample_scores,
}
"""Migration from schema version N to N+1, keyed by N; applied in one transaction on open."""

_OLD_RELEASE_FIX = "open it with the GRUE Bench release that wrote it, or start a new store file"


def open_database(path: Path, *, busy_timeout_s: float, wal: bool = True) -> Database:
    """Open (creating or migrating) the store file at ``path``, switched to WAL mode if ``wal``
    (for writers: another process may write at the same time); a GrueError says why it cannot."""
    if path.is_dir():
        raise GrueError(
            "is a directory, not a results store file",
            source=str(path),
            fix="give a file path such as results/grue.db",
        )
    if not hasattr(Database, "atomic"):  # 3.x commits inside our transactions: no atomic finish
        raise GrueError(
            "the results store needs sqlite-utils 4 or newer", fix="pip install -U 'sqlite-utils>=4'"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    # sqlite3's timeout is SQLite's busy_timeout: a writer waits for the lock instead of failing.
    conn = sqlite3.connect(path, timeout=busy_timeout_s)
    try:
        db = Database(conn)
        if wal:
            _enable_wal(db, busy_timeout_s)
        _open_schema(db, path)  # foreign keys still off (SQLite's default): a migration may rebuild a table
        db.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as error:
        conn.close()
        raise _open_error(error, path) from error
    except BaseException:
        conn.close()
        raise
    return db


def _enable_wal(db: Database, busy_timeout_s: float) -> None:
    """WAL mode, waiting up to the busy timeout: switching the journal mode does not wait for a
    lock as other statements do, and fails at once while another process creates the store."""
    deadline = time.monotonic() + busy_timeout_s
    while True:
        try:
            db.enable_wal()
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextmanager
def transaction(db: Database) -> Iterator[Database]:
    """One write transaction (``BEGIN IMMEDIATE``); nested blocks become savepoints."""
    conn = db.conn
    if conn.in_transaction:
        with db.atomic():
            yield db
        return
    # IMMEDIATE takes the write lock up front, waiting up to busy_timeout; a deferred BEGIN that
    # reads then writes can fail at once with "database is locked" when another process wrote.
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.rollback()
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        db.rollback()
        raise


def timestamp(moment: datetime | None = None) -> str:
    """A time as the store writes it: ISO 8601 in UTC, to the millisecond (default: now)."""
    return (moment or datetime.now(timezone.utc)).isoformat(timespec="milliseconds")


def _open_schema(db: Database, path: Path) -> None:
    with transaction(db):
        tables = {name for name in db.table_names() if not name.startswith("sqlite_")}
        if "schema_version" not in tables:
            if tables:
                raise GrueError(
                    f"is a SQLite database but not a GRUE Bench results store (tables: "
                    f"{', '.join(sorted(tables))})",
                    source=str(path),
                    fix="choose another store path; GRUE Bench creates the file itself",
                )
            for statement in SCHEMA:
                db.execute(statement)
            db["schema_version"].insert({"version": SCHEMA_VERSION})
            log.info("created results store %s (schema version %d)", path, SCHEMA_VERSION)
            return
        version = db.execute("SELECT max(version) FROM schema_version").fetchone()[0]
        if version is None or version > SCHEMA_VERSION:
            raise GrueError(
                f"has schema version {version}, newer than this GRUE Bench's ({SCHEMA_VERSION})",
                source=str(path),
                fix="upgrade GRUE Bench (pip install -U grue-bench) or use another store file",
            )
        if version < SCHEMA_VERSION:
            _migrate(db, path, version)


def _migrate(db: Database, path: Path, version: int) -> None:
    if any(step not in MIGRATIONS for step in range(version, SCHEMA_VERSION)):
        raise GrueError(
            f"has schema version {version}, which this GRUE Bench (schema version "
            f"{SCHEMA_VERSION}) cannot migrate",
            source=str(path),
            fix=_OLD_RELEASE_FIX,
        )
    for step in range(version, SCHEMA_VERSION):
        try:
            MIGRATIONS[step](db)
        except ValueError as error:
            raise GrueError(
                f"cannot be migrated from schema version {step} to {step + 1}: {error}",
                source=str(path),
                fix=_OLD_RELEASE_FIX,
            ) from error
    db.execute("UPDATE schema_version SET version = ?", [SCHEMA_VERSION])
    log.info("migrated %s from schema version %d to %d", path, version, SCHEMA_VERSION)


def _open_error(error: sqlite3.DatabaseError, path: Path) -> GrueError:
    not_a_database = getattr(error, "sqlite_errorcode", None) == getattr(sqlite3, "SQLITE_NOTADB", 26)
    if not_a_database or "file is not a database" in str(error):
        return GrueError(
            "is not a SQLite database",
            source=str(path),
            fix="point the store (the config's 'store' key or --store) at a new path or at a "
            "store GRUE Bench created; move this file away if it was written by something else",
        )
    return GrueError(
        f"cannot open the results store: {error}",
        source=str(path),
        fix="check that the file and its folder are writable and on a local file system",
    )
