"""Malformed results files are rejected with a message naming the row, the column and the fix, and
leave the store exactly as it was."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pytest

from grue_bench.crowd.export import export_batch
from grue_bench.crowd.ingest import ingest_results
from grue_bench.errors import GrueError
from grue_bench.store import Store

from .mturk import TASK, dump, write_results

Edit = Callable[[list[str], list[dict[str, str]]], tuple[list[str], list[dict[str, str]]]]


def drop_column(name: str) -> Edit:
    def edit(header, rows):
        return [c for c in header if c != name], [{k: v for k, v in r.items() if k != name} for r in rows]

    return edit


def set_value(row: int, column: str, value: str) -> Edit:
    def edit(header, rows):
        rows[row][column] = value
        return header, rows

    return edit


def duplicate_assignment(header, rows):
    rows[1]["AssignmentId"] = rows[0]["AssignmentId"]
    return header, rows


CASES = [
    (drop_column("WorkerId"), ["WorkerId: missing column"]),
    (drop_column("Input.item_id"), ["Input.item_id: missing column"]),
    (drop_column("Answer.fluency"), ["Answer.fluency: missing column (the template's answer field)"]),
    (set_value(2, "Input.item_id", "ffffffffff"), ["row 4: unknown item 'ffffffffff' of batch"]),
    (set_value(0, "Input.batch_id", "commongen-likert-0000000000"), ["row 2: unknown batch"]),
    (set_value(1, "Answer.plausibility", "7"), ["row 3: Answer.plausibility '7' is out of range"]),
    (set_value(1, "Answer.fluency", "0"), ["row 3: Answer.fluency '0' is out of range; allowed: 1, 2"]),
    (set_value(3, "Answer.fluency", ""), ["row 5: Answer.fluency is empty (no answer)"]),
    (set_value(3, "Answer.fluency", "4.5"), ["row 5: Answer.fluency '4.5' is out of range"]),
    (duplicate_assignment, ["row 3: assignment ASG-0000-W1 is also on row 2"]),
]


@pytest.fixture
def valid_results(store: Store, tmp_path: Path) -> Path:
    """A valid results file of a Likert batch, every worker answering 3 and 1 (checks pass)."""
    exported = export_batch(store, task=TASK, algs=["ppo", "nlpo"], n=2, seed=0, checks=1)
    return write_results(
        tmp_path / "results.csv",
        exported.rows,
        ["W1", "W2"],
        lambda worker, row: {"plausibility": "1", "fluency": "1"},
    )


def edited(path: Path, edit: Edit) -> Path:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        rows, header = list(reader), list(reader.fieldnames or [])
    header, rows = edit(header, rows)
    out = path.with_name("edited.csv")
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    return out


@pytest.mark.parametrize(("edit", "messages"), CASES)
def test_a_malformed_file_is_rejected_and_changes_nothing(
    store: Store, store_path: Path, valid_results: Path, edit: Edit, messages: list[str]
):
    bad = edited(valid_results, edit)
    before = dump(store_path)
    with pytest.raises(GrueError) as caught:
        ingest_results(store, bad)
    text = caught.value.render()
    assert str(bad) in text and "fix:" in text
    for message in messages:
        assert message in text
    assert dump(store_path) == before
    assert store.db.execute("SELECT count(*) FROM human_ratings").fetchone()[0] == 0


def test_every_problem_is_listed_at_once(store: Store, valid_results: Path):
    def many(header, rows):
        rows[0]["Answer.fluency"] = "9"
        rows[1]["Input.item_id"] = "nope"
        return header, rows

    with pytest.raises(GrueError) as caught:
        ingest_results(store, edited(valid_results, many))
    assert len(caught.value.problems) == 2
    assert caught.value.render().startswith("2 problems in ")


def test_a_long_list_of_problems_is_capped(store: Store, valid_results: Path):
    def all_bad(header, rows):
        rows = rows + [{**row, "AssignmentId": row["AssignmentId"] + "-2"} for row in rows]
        for row in rows:
            row["Answer.fluency"] = row["Answer.plausibility"] = "x"
        return header, rows

    with pytest.raises(GrueError) as caught:
        ingest_results(store, edited(valid_results, all_bad))
    problems = caught.value.problems
    assert len(problems) == 21 and problems[-1].message == "... and 20 more problems like these"


def test_rejected_assignments_are_skipped_not_errors(store: Store, valid_results: Path):
    report = ingest_results(store, edited(valid_results, set_value(0, "AssignmentStatus", "Rejected")))
    assert report.n_skipped == 1 and report.n_rows == 10


def test_a_missing_or_non_csv_file_is_named(store: Store, tmp_path: Path):
    with pytest.raises(GrueError, match="results file not found"):
        ingest_results(store, tmp_path / "nope.csv")
    binary = tmp_path / "results.csv"
    binary.write_bytes(b"\xff\xfe\x00garbage\x00\x81")
    with pytest.raises(GrueError, match="UTF-8"):
        ingest_results(store, binary)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(GrueError, match="missing column"):
        ingest_results(store, empty)
