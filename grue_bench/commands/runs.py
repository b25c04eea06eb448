"""List the runs in a results store (task, algorithm, seed, profile, status, duration, error)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store", type=Path, default=Path("grue_results.sqlite"), help="SQLite results store"
    )
    parser.add_argument("--task", help="only this task")
    parser.add_argument("--alg", help="only this algorithm")
    parser.add_argument("--status", choices=["queued", "running", "finished", "failed", "submitted"])


def run(args: argparse.Namespace) -> int:
    from grue_bench.errors import GrueError
    from grue_bench.store import Store, format_runs

    if not args.store.is_file():
        raise GrueError(
            "store not found", source=str(args.store), fix="give --store, or run `grue run` first"
        )
    with Store(args.store) as store:
        print(format_runs(store.runs(task=args.task, alg=args.alg, status=args.status)))
    return 0
