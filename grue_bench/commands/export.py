"""Export a finished run's final model as a Hugging Face model folder: its weights and tokenizer
with a model card (README.md: the run's test scores in the hub's model-index format, its config,
seed and base model), ready to load with transformers or to upload (--push-to-hub)."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "key", metavar="RUN_KEY", help="the run's key, or a unique prefix (as `grue runs` shows)"
    )
    parser.add_argument(
        "--store", type=Path, default=Path("grue_results.sqlite"), help="SQLite results store"
    )
    parser.add_argument("--out", type=Path, help="new folder for the model (needed unless --push-to-hub)")
    parser.add_argument(
        "--push-to-hub", metavar="REPO_ID", help="upload the folder to this hub repo (user/name)"
    )
    parser.add_argument("--private", action="store_true", help="with --push-to-hub: create the repo private")


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.errors import GrueError
    from grue_bench.runner.export import check_hub_access, export_model, push_to_hub

    if not args.store.is_file():
        raise GrueError(
            "store not found",
            source=str(args.store),
            key="--store",
            fix="give --store, or run `grue run` first",
        )
    if args.out is None and args.push_to_hub is None:
        raise GrueError(
            "nowhere to export to", key="--out", fix="give --out DIR, --push-to-hub REPO_ID, or both"
        )
    if args.push_to_hub is not None:
        check_hub_access()  # before anything is written
    with tempfile.TemporaryDirectory() as staging:  # the folder uploaded when no --out is given
        folder = export_model(args.store, args.key, args.out or Path(staging) / "model")
        if args.out is not None:
            print(folder)
        if args.push_to_hub is not None:
            print(push_to_hub(folder, args.push_to_hub, args.private))
    return 0
