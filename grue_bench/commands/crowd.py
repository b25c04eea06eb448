"""Human evaluation: MTurk templates, batch export and results ingest."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from grue_bench.errors import NotAvailableError

    raise NotAvailableError(
        "'grue crowd' (human evaluation) is not available in this version yet",
        fix="see the README's roadmap; use 'grue ls' and 'grue validate' meanwhile",
    )
