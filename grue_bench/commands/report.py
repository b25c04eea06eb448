"""Build the HTML leaderboard from a results store: an overview page, one page per task, plots, and
the same tables as CSV and JSON. Only finished and submitted runs count."""

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


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue --help` imports every command module (cli.py)
    from grue_bench.errors import GrueError
    from grue_bench.report import build_report

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
    index = build_report(args.store, args.out, args.schema)
    print(index)
    return 0
