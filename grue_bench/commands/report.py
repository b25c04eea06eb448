"""Build the HTML leaderboard from a results store: an overview page with one leaderboard per profile,
one page per task, plots, and the same tables as CSV and JSON. Only finished and submitted runs
count. Every task's floors and human ceiling (floor:empty, floor:copy, floor:constant,
floor:other-reference, ceiling:human) are scored on its test split and shown as rows (cached after
the first report); --no-floors leaves them out."""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_STORE = "grue_results.sqlite"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", type=Path, default=Path(DEFAULT_STORE), help="SQLite results store")
    parser.add_argument(
        "--out", type=Path, default=Path("reports"), help="folder for the pages (default reports/)"
    )
    parser.add_argument(
        "--schema", type=Path, help="leaderboard schema YAML (default: the one shipped with GRUE Bench)"
    )
    parser.add_argument(
        "--no-floors",
        action="store_true",
        help="leave out the floor and ceiling rows (and so the overall score, which is anchored on them)",
    )


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.errors import GrueError
    from grue_bench.report import build_report
    from grue_bench.submit.floors import floor_rows

    if not args.store.is_file():
        raise GrueError(
            "results store not found" if not args.store.exists() else "not a file",
            source=str(args.store),
            key="--store",
            fix="give --store PATH, or run `grue run` first",
        )
    if args.out.exists() and not args.out.is_dir():
        raise GrueError(
            "is a file, not a folder", source=str(args.out), key="--out", fix="give a folder for the pages"
        )
    index = build_report(args.store, args.out, args.schema, None if args.no_floors else floor_rows)
    print(index)
    return 0
