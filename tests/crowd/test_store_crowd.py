"""The store's crowd tables: created with a new store, migrated into one made before them, and the
ratings API (replace on re-ingest, filters)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from grue_bench.store import SCHEMA_VERSION, CrowdBatch, CrowdItem, HumanRating, Store


def batch(batch_id: str = "b1") -> CrowdBatch:
    axes = [{"name": "fluency", "values": ["1", "2", "3", "4", "5"], "check_max": 2}]
    return CrowdBatch(batch_id, "imdb", "likert", "imdb", axes, {"algs": ["ppo"]}, "2024-01-01T00:00:00")


ITEMS = [
    CrowdItem("b1", "i1", "", "item", "s1", "ppo", None, "an output", None),
    CrowdItem("b1", "i2", "", "check", "s2", "distractor", None, "scrambled", {"fluency": ["1", "2"]}),
]


def rating(assignment: str, value: float, *, system: str = "ppo", task: str = "imdb") -> HumanRating:
    return HumanRating(
        run_id=None,
        task=task,
        sample_id="s1",
        system=system,
        worker_id="W1",
        assignment_id=assignment,
        axis="fluency",
        rating=value,
        batch_id="b1",
    )


def test_a_new_store_has_the_crowd_tables(tmp_path: Path):
    with Store(tmp_path / "grue.db") as store:
        assert {"crowd_batches", "crowd_items", "human_ratings"} <= set(store.db.table_names())
        assert store.add_crowd_batch(batch(), ITEMS) is True
        assert store.add_crowd_batch(batch(), ITEMS) is False  # stored once
        assert store.crowd_batch("b1") == batch()
        assert store.crowd_items("b1") == ITEMS
        assert store.crowd_batch("nope") is None and store.crowd_items("nope") == []


def test_a_store_made_before_the_crowd_tables_gets_them_by_migration(tmp_path: Path):
    path = tmp_path / "grue.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:  # as a version-3 store written before crowd batches existed
        conn.execute("DROP TABLE crowd_items")
        conn.execute("DROP TABLE crowd_batches")
        conn.execute("ALTER TABLE runs DROP COLUMN skipped_metrics")
        conn.execute("DROP TABLE sample_scores")  # came with version 5
        conn.execute("UPDATE schema_version SET version = 3")
    conn.close()
    with Store(path) as store:
        assert store.db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert store.crowd_batch("b1") is None and store.crowd_items("b1") == []
        assert store.add_crowd_batch(batch(), ITEMS)
        assert store.crowd_items("b1") == ITEMS


def test_ratings_are_replaced_not_duplicated_and_filtered(tmp_path: Path):
    with Store(tmp_path / "grue.db") as store:
        assert store.add_human_ratings([rating("A1", 3), rating("A2", 4)]) == 2
        store.add_human_ratings([rating("A1", 5), rating("A3", 2, task="totto")])
        ratings = store.human_ratings()
        stored = dict(zip(ratings["assignment_id"], ratings["rating"], strict=True))
        assert stored == {"A1": 5, "A2": 4, "A3": 2}
        assert list(store.human_ratings(task="totto")["assignment_id"]) == ["A3"]
        assert len(store.human_ratings(batch_ids=["b1"])) == 3 and store.human_ratings(batch_ids=["x"]).empty
        assert set(ratings.columns) >= {
            "task",
            "system",
            "axis",
            "rating",
            "worker_id",
            "run_id",
            "created_at",
        }
