"""Check run-config or task files (RL4LMs schema plus GRUE Bench keys); print the resolved config."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from grue_bench.commands import add_override_argument

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, help="config YAML files or task.yaml files")
    parser.add_argument(
        "--kind",
        choices=["auto", "config", "task"],
        default="auto",
        help="what the files are (auto: files named task.yaml are tasks)",
    )
    add_override_argument(parser)
    parser.add_argument("--dump", action="store_true", help="print the resolved config as YAML")


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.errors import GrueError
    from grue_bench.resolve import load_config, load_task

    failed: list[GrueError] = []
    for path in args.files:
        is_task = args.kind == "task" or (args.kind == "auto" and path.name == "task.yaml")
        try:
            if is_task:
                task = load_task(path)
                print(f"ok: {path} (task '{task.id}' v{task.version})")
            else:
                config = load_config(path, args.overrides)
                print(f"ok: {path} (config hash {config.hash()})")
                if args.dump:
                    print(config.to_yaml(), end="")
        except GrueError as exc:
            failed.append(exc)
    if len(failed) == 1:
        raise failed[0]
    if failed:
        raise GrueError("\n".join(exc.render() for exc in failed), fix="correct the files above")
    return 0
