"""Copy the finished runs of other stores into one store (a grid split across machines or sessions),
or a chosen task, algorithm or seed of them (a run kept in a store of its own)."""

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
    parser.add_argument("--task", help="only this task's runs")
    parser.add_argument("--alg", help="only this algorithm's runs (e.g. supervised+ppo)")
    parser.add_argument("--seed", type=int, help="only this seed's runs")


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.store import Store
    from grue_bench.store.merge import merge_runs

    with Store(args.store) as store:
        for source in args.sources:
            result = merge_runs(store, source, task=args.task, alg=args.alg, seed=args.seed)
            print(
                f"{source}: {len(result.copied)} run(s) copied, {len(result.present)} already in "
                f"{args.store}, {len(result.unfinished)} not finished (left out)"
            )
            for key in result.present:
                log.info("already in %s, left as it is there: %s", args.store, key)
    return 0
