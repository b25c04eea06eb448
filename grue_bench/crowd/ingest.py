"""``grue crowd ingest``: read MTurk's batch results CSV, map each answer back to the system behind
its item (the batch's mapping in the store), drop workers who fail attention checks, store ratings.

All or nothing: the whole file is checked first (columns, batch and item ids, every answer within
its axis, one row per assignment) and any problem rejects it, listing the problems, with the store
untouched; then every rating is written in one transaction. Rows MTurk marks ``Rejected`` are
skipped. Pairwise answers are stored per system on the axis ``win_rate``: 1 for the preferred
output, 0 for the other, 0.5 each for a tie, so a system's mean is its win rate.
"""

from __future__ import annotations

import csv
import logging
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grue_bench.crowd.checks import passes
from grue_bench.crowd.templates import Axis
from grue_bench.errors import GrueError, Problem
from grue_bench.store import CrowdBatch, CrowdItem, HumanRating, Store

log = logging.getLogger(__name__)

REQUIRED = ("AssignmentId", "WorkerId", "Input.batch_id", "Input.item_id")
"""Columns every results file needs (MTurk writes them; Input.* come from the batch CSV)."""
WIN_RATE = "win_rate"
TIE = "tie"
MAX_LISTED = 20
"""Problems listed in full when a file is rejected; the rest are counted."""
FIX_RESULTS = "use the results CSV that MTurk's 'Download CSV' gives for the batch, unedited"


@dataclass(frozen=True)
class Assignment:
    """One validated results row: who answered which item, and how."""

    line: int
    assignment_id: str
    worker_id: str
    batch: CrowdBatch
    slots: list[CrowdItem]
    answers: dict[str, str]
    work_time_s: float | None

    @property
    def is_check(self) -> bool:
        """Whether the item is an attention check."""
        return self.slots[0].kind == "check"


@dataclass(frozen=True)
class IngestReport:
    """What an ingest read, dropped and stored."""

    path: Path
    batch_ids: list[str]
    n_rows: int
    n_skipped: int
    """Rows of assignments MTurk marks Rejected."""
    n_ratings: int
    n_workers: int
    dropped: dict[str, tuple[int, int]]
    """Workers dropped for failed attention checks: (checks failed, checks answered)."""
    unchecked: list[str]
    """Workers who answered no attention check (kept)."""
    n_checks: int
    """Attention checks answered, and failed (by any worker, dropped or kept)."""
    n_failed_checks: int
    median_work_time_s: float | None


def ingest_results(store: Store, path: str | Path, *, max_check_failures: int = 0) -> IngestReport:
    """Validate the results file, drop workers failing more than ``max_check_failures`` checks, and
    store the ratings of the others in one transaction."""
    path = Path(path)
    header, rows = _read(path)
    assignments, skipped = _validate(store, path, header, rows)
    checks = _check_results(assignments)
    dropped = {worker: tally for worker, tally in checks.items() if tally[0] > max_check_failures}
    ratings = [
        rating
        for assignment in assignments
        if assignment.worker_id not in dropped and not assignment.is_check
        for rating in _ratings(assignment)
    ]
    stored = store.add_human_ratings(ratings) if ratings else 0
    workers = sorted({a.worker_id for a in assignments})
    times = [a.work_time_s for a in assignments if a.work_time_s is not None]
    report = IngestReport(
        path=path,
        batch_ids=sorted({a.batch.batch_id for a in assignments}),
        n_rows=len(rows),
        n_skipped=skipped,
        n_ratings=stored,
        n_workers=len(workers),
        dropped=dropped,
        unchecked=[worker for worker in workers if worker not in checks],
        n_checks=sum(total for _, total in checks.values()),
        n_failed_checks=sum(failed for failed, _ in checks.values()),
        median_work_time_s=statistics.median(times) if times else None,
    )
    log.info("%s: %d ratings stored, %d workers dropped", path, stored, len(dropped))
    return report


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    if not path.is_file():
        raise GrueError("results file not found", source=str(path), fix="give the CSV downloaded from MTurk")
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            header = list(reader.fieldnames or [])
    except (UnicodeDecodeError, csv.Error) as error:
        raise GrueError(f"is not a UTF-8 CSV file: {error}", source=str(path), fix=FIX_RESULTS) from error
    missing = [column for column in REQUIRED if column not in header]
    if missing:
        problems = [Problem("missing column", key=column, fix=FIX_RESULTS) for column in missing]
        raise GrueError.many(problems, source=str(path))
    return header, rows


def _validate(
    store: Store, path: Path, header: list[str], rows: list[dict[str, str]]
) -> tuple[list[Assignment], int]:
    """Every row checked against the store's batches; any problem rejects the whole file."""
    validator = _Validator(store, header)
    assignments, skipped = [], 0
    for line, row in enumerate(rows, start=2):
        if (row.get("AssignmentStatus") or "").strip() == "Rejected":
            skipped += 1
            continue
        assignment = validator.row(line, row)
        if assignment is not None:
            assignments.append(assignment)
    problems = [
        Problem("missing column (the template's answer field)", key=column, fix=FIX_RESULTS)
        for column in sorted(validator.missing_columns)
    ] + validator.problems
    if problems:
        raise GrueError.many(_capped(problems), source=str(path))
    return assignments, skipped


class _Validator:
    """Checks rows one by one, collecting problems; caches the batches it looks up."""

    def __init__(self, store: Store, header: list[str]):
        self.store = store
        self.header = set(header)
        self.problems: list[Problem] = []
        self.missing_columns: set[str] = set()
        self.batches: dict[str, tuple[CrowdBatch, dict[str, list[CrowdItem]]] | None] = {}
        self.first_line: dict[str, int] = {}

    def row(self, line: int, row: dict[str, str]) -> Assignment | None:
        """The row as an assignment, or None after recording why it is wrong."""
        where = f"row {line}"
        assignment_id, worker_id, batch_id, item_id = ((row.get(column) or "").strip() for column in REQUIRED)
        if not assignment_id or not worker_id:
            return self._problem(where, "AssignmentId or WorkerId is empty", FIX_RESULTS)
        if assignment_id in self.first_line:
            return self._problem(
                where,
                f"assignment {assignment_id} is also on row {self.first_line[assignment_id]}",
                "keep one row per assignment",
            )
        self.first_line[assignment_id] = line
        if batch_id not in self.batches:
            self.batches[batch_id] = _load_batch(self.store, batch_id)
        found = self.batches[batch_id]
        if found is None:
            return self._problem(
                where,
                f"unknown batch '{batch_id}' (Input.batch_id)",
                f"ingest into the store the batch was exported to (this is {self.store.path}): "
                "grue crowd ingest RESULTS.csv --store STORE",
            )
        batch, items = found
        if item_id not in items:
            return self._problem(
                where,
                f"unknown item '{item_id}' of batch {batch_id} (Input.item_id)",
                "use the results of the batch CSV that `grue crowd export` wrote, unedited",
            )
        answers = self._answers(where, row, [Axis.from_json(data) for data in batch.axes])
        return Assignment(line, assignment_id, worker_id, batch, items[item_id], answers, _seconds(row))

    def _answers(self, where: str, row: dict[str, str], axes: list[Axis]) -> dict[str, str]:
        answers = {}
        for axis in axes:
            column = f"Answer.{axis.name}"
            if column not in self.header:
                self.missing_columns.add(column)
                continue
            value = (row.get(column) or "").strip()
            if value not in axis.values:
                shown = f"{value!r} is out of range" if value else "is empty (no answer)"
                self._problem(
                    where,
                    f"{column} {shown}; allowed: {', '.join(axis.values)}",
                    "remove the row, or correct the answer to an allowed value",
                )
            answers[axis.name] = value
        return answers

    def _problem(self, where: str, message: str, fix: str) -> None:
        self.problems.append(Problem(message, key=where, fix=fix))


def _load_batch(store: Store, batch_id: str) -> tuple[CrowdBatch, dict[str, list[CrowdItem]]] | None:
    batch = store.crowd_batch(batch_id)
    if batch is None:
        return None
    items: dict[str, list[CrowdItem]] = defaultdict(list)
    for item in store.crowd_items(batch_id):
        items[item.item_id].append(item)
    return batch, dict(items)


def _seconds(row: dict[str, str]) -> float | None:
    try:
        return float(row.get("WorkTimeInSeconds") or "")
    except ValueError:
        return None


def _capped(problems: Sequence[Problem]) -> list[Problem]:
    if len(problems) <= MAX_LISTED:
        return list(problems)
    more = len(problems) - MAX_LISTED
    return [*problems[:MAX_LISTED], Problem(f"... and {more} more problems like these")]


def _check_results(assignments: Sequence[Assignment]) -> dict[str, tuple[int, int]]:
    """Per worker who answered attention checks: (failed, answered)."""
    tally: dict[str, tuple[int, int]] = {}
    for assignment in assignments:
        if assignment.is_check:
            failed, total = tally.get(assignment.worker_id, (0, 0))
            ok = passes(assignment.slots[0].expected or {}, assignment.answers)
            tally[assignment.worker_id] = (failed + (not ok), total + 1)
    return tally


def _ratings(assignment: Assignment) -> list[HumanRating]:
    """The rows to store for one answered item."""
    batch = assignment.batch

    def rating(item: CrowdItem, axis: str, value: float) -> HumanRating:
        return HumanRating(
            run_id=item.run_id,
            task=batch.task,
            sample_id=item.sample_id,
            system=item.system,
            worker_id=assignment.worker_id,
            assignment_id=assignment.assignment_id,
            axis=axis,
            rating=value,
            batch_id=batch.batch_id,
        )

    if batch.mode == "pairwise":
        choice = assignment.answers[batch.axes[0]["name"]]
        return [
            rating(item, WIN_RATE, 1.0 if choice == item.slot else 0.5 if choice == TIE else 0.0)
            for item in assignment.slots
        ]
    item = assignment.slots[0]
    return [rating(item, axis, float(value)) for axis, value in assignment.answers.items()]
