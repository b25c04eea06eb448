"""Give the runs of a store per-sample scores, from their stored generations: for stores written
before the store kept them (schema version 5). The leaderboard's and `grue compare`'s intervals over
test samples need them; a run without them is reported with intervals over seeds only, marked as
such. Nothing is trained and no policy is loaded; logged corpus scores are kept, and any that the
re-scoring does not confirm is listed."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stores", nargs="+", type=Path, metavar="STORE", help="results stores to backfill")
    parser.add_argument("--split", default="test", help="the split whose evaluations to score (default test)")
    parser.add_argument(
        "--iterations",
        choices=["all", "final"],
        default="all",
        help="every stored evaluation of the split, or each run's last one only (default all)",
    )


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.errors import GrueError
    from grue_bench.store import Store
    from grue_bench.submit.backfill import backfill

    for path in args.stores:
        if not path.is_file():
            raise GrueError("results store not found", source=str(path), fix="check the path")
        with Store(path) as store:
            result = backfill(store, args.split, iterations=args.iterations)
        print(
            f"{path}: {len(result.scored)} evaluation(s) scored per sample, {result.complete} already "
            f"complete, {len(result.differ)} logged score(s) not confirmed"
        )
        for line in result.differ:
            print(f"  not confirmed: {line}")
    return 0
