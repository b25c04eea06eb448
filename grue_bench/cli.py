"""The ``grue`` command. Subcommands live in ``grue_bench.commands``, one module each, imported
only when named: ``grue --help`` imports none of them, ``grue run ...`` the run command's alone."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from grue_bench import __version__
from grue_bench.errors import GrueError

log = logging.getLogger("grue_bench")

SUBCOMMANDS: dict[str, str] = {
    "run": "train and evaluate tasks x algorithms x seeds into a results store",
    "runs": "list the runs in a results store",
    "merge": "copy the finished runs of other stores into one (a grid split across machines)",
    "backfill": "per-sample scores for stored runs, from their generations (older stores)",
    "ls": "list what is registered: tasks, datapools, rewards, metrics, algorithms, policies",
    "validate": "check config or task files and show the resolved config",
    "eval": "score a predictions file with a task's metric suite",
    "report": "build the HTML leaderboard from a results store",
    "crowd": "human evaluation: MTurk templates, batch export and results ingest",
    "submit": "validate, re-score and record a baseline submission",
    "compare": "reference baselines beside the RL4LMs paper's numbers, with the ordering checks",
    "export": "a finished run's model as a Hugging Face model folder with its card; --push-to-hub",
}
"""Each ``grue`` subcommand and its one-line help; its module ``grue_bench.commands.<name>`` has
``add_arguments(parser)`` and ``run(args)``."""


def command_named(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is one (the global options' values,
    ``--log-level DEBUG``, are not)."""
    return next((word for word in argv if word in SUBCOMMANDS), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``grue`` parser: every subcommand listed, ``command``'s arguments added (its module
    imported); the others parse nothing (``command_named`` picks the one a command line names)."""
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
    for name, help_text in SUBCOMMANDS.items():
        if name != command:
            sub.add_parser(name, help=help_text)
            continue
        module = importlib.import_module(f"grue_bench.commands.{name}")
        chosen = sub.add_parser(name, help=help_text, description=module.__doc__)
        module.add_arguments(chosen)
        chosen.set_defaults(handler=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``grue`` console script; returns the exit status."""
    try:
        status = run_command(argv)
        sys.stdout.flush()  # a reader that stopped early (``grue runs | head``) fails here, not at exit
        return status
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 141  # as a command stopped by SIGPIPE


def run_command(argv: Sequence[str] | None) -> int:
    """The command that ``argv`` names, run; its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(command_named(argv)).parse_args(argv)
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
