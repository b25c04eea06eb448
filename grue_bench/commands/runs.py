"""List the runs in a results store (task, algorithm, seed, profile, status, duration, error), with
each done run's collapse flag on its final test generations (empty, repeated or identical outputs;
the thresholds are README's); or, with ``--totals``, the recorded time per task and algorithm: the
runs, their total and the longest run (every attempt of a resumed run counted)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grue_bench.store import RunRecord


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store", type=Path, default=Path("grue_results.sqlite"), help="SQLite results store"
    )
    parser.add_argument("--task", help="only this task")
    parser.add_argument("--alg", help="only this algorithm")
    parser.add_argument("--status", choices=["queued", "running", "finished", "failed", "submitted"])
    parser.add_argument(
        "--totals",
        action="store_true",
        help="the recorded time per task and algorithm (runs, total, longest) instead of one line a run",
    )


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.errors import GrueError
    from grue_bench.report.collapse import final_test_stats
    from grue_bench.store import DONE, Store

    if not args.store.is_file():
        raise GrueError(
            "store not found", source=str(args.store), fix="give --store, or run `grue run` first"
        )

    with Store(args.store, reader=True) as store:
        records = store.runs(task=args.task, alg=args.alg, status=args.status)
        if args.totals:
            print(format_totals(records))
            return 0
        flags = {}
        for record in records:
            stats = final_test_stats(store, record.id) if record.status in DONE else None
            if stats is not None:
                flags[record.id] = "; ".join(stats.reasons()) or "-"
        print(format_runs(records, flags))
    return 0


def format_runs(records: Sequence[RunRecord], collapse: Mapping[int, str] | None = None) -> str:
    """A plain text table of runs for ``grue runs``; ``collapse``: run id -> its flag's reasons."""
    if not records:
        return "no runs"
    collapse = collapse or {}
    header = ("key", "task", "alg", "seed", "profile", "status", "duration", "collapse", "error")
    rows = [
        (
            r.key[:10],
            r.task,
            r.alg,
            str(r.seed),
            r.profile,
            r.status,
            _format_duration(r.duration_s),
            collapse.get(r.id, ""),
            _truncate(_first_line(r.error), 60),
        )
        for r in records
    ]
    return _table(header, rows)


def format_totals(records: Sequence[RunRecord]) -> str:
    """Per (task, alg), then for all: the runs, their recorded time added up, and the longest run
    with its seed; runs with no recorded time (never started) count as runs, not as time."""
    if not records:
        return "no runs"
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for record in records:
        groups.setdefault((record.task, record.alg), []).append(record)
    header = ("task", "alg", "runs", "total", "longest", "longest run")
    rows = [_totals_row(task, alg, group) for (task, alg), group in sorted(groups.items())]
    rows.append(_totals_row("all", "", records))
    return _table(header, rows)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns, two spaces apart."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    )


def _totals_row(task: str, alg: str, records: Sequence[RunRecord]) -> tuple[str, ...]:
    timed = [r for r in records if r.duration_s is not None]
    total = sum(r.duration_s for r in timed) if timed else None
    longest = max(timed, key=lambda r: r.duration_s, default=None)
    where = "" if longest is None else f"seed {longest.seed}"
    if longest is not None and not alg:  # the row of all runs names the run
        where = f"{longest.task} {longest.alg} {where}"
    return (
        task,
        alg,
        str(len(records)),
        _format_duration(total),
        _format_duration(longest.duration_s if longest else None),
        where,
    )


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


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def _truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
