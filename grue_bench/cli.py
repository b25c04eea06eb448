"""The ``grue`` command. Subcommands live in ``grue_bench.commands``; heavy imports happen
inside each command's ``run`` so that ``grue --help`` answers fast."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from types import ModuleType

from grue_bench import __version__
from grue_bench.commands import (
    backfill,
    compare,
    crowd,
    export,
    ls,
    merge,
    report,
    run,
    runs,
    submit,
    validate,
)
from grue_bench.commands import eval as eval_command
from grue_bench.errors import GrueError

log = logging.getLogger("grue_bench")

SUBCOMMANDS: dict[str, tuple[ModuleType, str]] = {
    "run": (run, "train and evaluate tasks x algorithms x seeds into a results store"),
    "runs": (runs, "list the runs in a results store"),
    "merge": (merge, "copy the finished runs of other stores into one (a grid split across machines)"),
    "backfill": (backfill, "per-sample scores for stored runs, from their generations (older stores)"),
    "ls": (ls, "list what is registered: tasks, datapools, rewards, metrics, algorithms, policies"),
    "validate": (validate, "check config or task files and show the resolved config"),
    "eval": (eval_command, "score a predictions file with a task's metric suite"),
    "report": (report, "build the HTML leaderboard from a results store"),
    "crowd": (crowd, "human evaluation: MTurk templates, batch export and results ingest"),
    "submit": (submit, "validate, re-score and record a baseline submission"),
    "compare": (compare, "reference baselines beside the RL4LMs paper's numbers, with the ordering checks"),
    "export": (export, "a finished run's model as a Hugging Face model folder with its card; --push-to-hub"),
}
"""Each ``grue`` subcommand: its module (``add_arguments``, ``run``) and its one-line help."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grue",
        description="GRUE Bench: RL fine-tuning of language models on natural-language generation.",
    )
    parser.add_argument("--version", action="version", version=f"grue-bench {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="logging level"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in SUBCOMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=module.__doc__)
        module.add_arguments(command)
        command.set_defaults(handler=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``grue`` console script; returns the exit status."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    args.argv = argv  # a command that starts itself again (grue run --num-processes) passes it on
    logging.basicConfig(
        level=logging.DEBUG if args.debug else getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    try:
        return int(args.handler(args) or 0)
    except GrueError as exc:
        if args.debug:
            raise
        print(f"grue {args.command}: error: {exc.render()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"grue {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
