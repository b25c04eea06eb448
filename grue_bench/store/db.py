"""``Store``: one results store file, with its run, row and crowd tables."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from sqlite_utils import Database

from grue_bench.store.crowd import CrowdTables
from grue_bench.store.rows import RowTables
from grue_bench.store.runs import RunsTable
from grue_bench.store.schema import open_database, transaction


class Store(RunsTable, RowTables, CrowdTables):
    """A results store file; safe to open from several processes at once."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 30.0, reader: bool = False):
        """``reader``: opened to read, by a command that writes no run (it keeps the file's journal
        mode, so a committed store stays unchanged); writers switch it to WAL."""
        self.path = Path(path)
        self.db = open_database(self.path, busy_timeout_s=busy_timeout_s, wal=not reader)

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def transaction(self) -> AbstractContextManager[Database]:
        """One write transaction (``BEGIN IMMEDIATE``); nested blocks become savepoints."""
        return transaction(self.db)
