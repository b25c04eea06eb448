"""Copying the finished runs of one store into another: a grid split across machines or sessions
(each with its own store) becomes one store, which ``grue run`` then resumes and ``grue submit
--from-store`` and ``grue report`` read whole.

A run is copied with every row it has (its curves, metrics and generations of every split and
iteration), under its key; a key the target holds already is left as it is there.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from grue_bench.errors import GrueError
from grue_bench.store.db import Store
from grue_bench.store.schema import SCHEMA_VERSION

RUN_ROW_TABLES = ("metrics", "generations", "sample_scores")
"""The tables whose rows belong to one run (``run_id``) and travel with it."""


@dataclass
class MergeResult:
    """What a merge did, by run key: copied, already in the target, or not finished in the source."""

    copied: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)


def merge_runs(
    target: Store, source: Path, task: str | None = None, alg: str | None = None, seed: int | None = None
) -> MergeResult:
    """Copy ``source``'s finished runs (not submissions) into ``target``, in one transaction; with
    ``task``, ``alg`` or ``seed``, only the runs that have it."""
    if not source.is_file():
        raise GrueError("store not found", source=str(source), fix="give a store `grue run` wrote")
    if source.resolve() == target.path.resolve():
        raise GrueError("a store cannot be merged into itself", source=str(source), fix="give another store")
    reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    reader.row_factory = sqlite3.Row
    try:
        _check_version(reader, source)
        result = MergeResult()
        with target.transaction() as db:
            chosen = {"task": task, "alg": alg, "seed": seed}
            where = "".join(f" AND {column} = ?" for column, value in chosen.items() if value is not None)
            values = [value for value in chosen.values() if value is not None]
            query = f"SELECT * FROM runs WHERE source = 'run'{where} ORDER BY id"
            for run in reader.execute(query, values).fetchall():
                if run["status"] != "finished":
                    result.unfinished.append(run["key"])
                elif db.execute("SELECT 1 FROM runs WHERE key = ?", [run["key"]]).fetchone():
                    result.present.append(run["key"])
                else:
                    _copy_run(reader, db.conn, run)
                    result.copied.append(run["key"])
        return result
    finally:
        reader.close()


def _check_version(reader: sqlite3.Connection, source: Path) -> None:
    try:
        (version,) = reader.execute("SELECT version FROM schema_version").fetchone()
    except sqlite3.DatabaseError as error:
        raise GrueError(
            f"not a GRUE Bench results store ({error})",
            source=str(source),
            fix="give a store `grue run` wrote",
        ) from error
    if version != SCHEMA_VERSION:
        raise GrueError(
            f"the store has schema version {version}, this GRUE Bench writes {SCHEMA_VERSION}",
            source=str(source),
            fix=f"open it once with this version to migrate it (`grue runs --store {source}`), then merge",
        )


def _copy_run(reader: sqlite3.Connection, writer: sqlite3.Connection, run: sqlite3.Row) -> None:
    columns = [name for name in run.keys() if name != "id"]  # noqa: SIM118 (a Row iterates values)
    run_id = writer.execute(_insert("runs", columns), [run[name] for name in columns]).lastrowid
    for table in RUN_ROW_TABLES:
        rows = reader.execute(f"SELECT * FROM {table} WHERE run_id = ?", [run["id"]]).fetchall()
        if rows:
            columns = list(rows[0].keys())
            values = [[run_id if name == "run_id" else row[name] for name in columns] for row in rows]
            writer.executemany(_insert(table, columns), values)


def _insert(table: str, columns: list[str]) -> str:
    names = ", ".join(f'"{name}"' for name in columns)
    return f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' for _ in columns)})"
