"""One module per ``grue`` subcommand: ``add_arguments(parser)`` and ``run(args) -> int``."""

import argparse


def add_override_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--set key.path=value`` option shared by the commands that read configs."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. --set alg.args.learning_rate=1e-5 (repeatable)",
    )
