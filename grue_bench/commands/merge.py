"""Copy the finished runs of other stores into one store (a grid split across machines or sessions)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="+", type=Path, metavar="SOURCE", help="stores to copy runs from")
    parser.add_argument(
        "--store",
        type=Path,
        default=Path("grue_results.sqlite"),
        help="the store to copy them into (created if missing)",
    )


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue --help` imports every command module (cli.py)
    from grue_bench.store import Store
    from grue_bench.store.merge import merge_runs

    with Store(args.store) as store:
        for source in args.sources:
            result = merge_runs(store, source)
            print(
                f"{source}: {len(result.copied)} run(s) copied, {len(result.present)} already in "
                f"{args.store}, {len(result.unfinished)} not finished (left out)"
            )
            for key in result.present:
                log.info("already in %s, left as it is there: %s", args.store, key)
    return 0
