"""The crowd tables: exported batches with their blinded items, and the human ratings ingested."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from sqlite_utils import Database

from grue_bench.store.schema import timestamp, transaction

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


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


class CrowdTables:
    """The ``crowd_batches``, ``crowd_items`` and ``human_ratings`` tables (a mixin of ``Store``)."""

    db: Database

    def add_crowd_batch(self, batch: CrowdBatch, items: Sequence[CrowdItem]) -> bool:
        """Record an exported batch with its blinded item mapping; False if that batch is already stored."""
        with transaction(self.db):
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
        row = next(self.db["crowd_batches"].rows_where("batch_id = ?", [batch_id]), None)
        if row is None:
            return None
        return CrowdBatch(**{**row, "axes": json.loads(row["axes"]), "spec": json.loads(row["spec"])})

    def crowd_items(self, batch_id: str) -> list[CrowdItem]:
        """A batch's item rows (items and attention checks, each slot), by item id and slot."""
        rows = self.db["crowd_items"].rows_where("batch_id = ?", [batch_id], order_by="item_id, slot")
        return [
            CrowdItem(**{**row, "expected": None if row["expected"] is None else json.loads(row["expected"])})
            for row in rows
        ]

    def add_human_ratings(self, rows: Sequence[HumanRating]) -> int:
        """Write ratings in one transaction; a rating already stored for the same (assignment, sample,
        system, axis) is replaced, so re-ingesting a results file changes nothing. Returns the count."""
        columns = ("run_id", "task", "sample_id", "system", "worker_id", "assignment_id", "axis", "rating")
        created = timestamp()
        values = [[*(row[c] for c in columns), row["batch_id"], created] for row in rows]
        with transaction(self.db):
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
