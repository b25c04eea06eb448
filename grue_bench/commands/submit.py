"""Validate, re-score and record a baseline submission (a folder baselines/<name>/), or package one's
own finished runs as such a folder (--from-store).

Every problem of a submission is reported at once; submitted numbers are never trusted: the
generations are re-scored with each task's metric suite, exactly as `grue eval` scores them, and
recorded as runs marked 'submitted'. A rejected submission leaves the store unchanged.
The format is described in baselines/README.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_STORE = "grue_results.sqlite"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", type=Path, help="the submission folder (baselines/<name>/)")
    parser.add_argument("--store", type=Path, default=Path(DEFAULT_STORE), help="SQLite results store")
    parser.add_argument("--dry-run", action="store_true", help="validate and re-score, record nothing")
    parser.add_argument(
        "--replace", action="store_true", help="replace an earlier recording of the same submission name"
    )
    parser.add_argument(
        "--strict", action="store_true", help="refuse the submission when a stated number differs"
    )
    parser.add_argument(
        "--restate",
        action="store_true",
        help="with --dry-run: write the re-scored numbers over the stated ones in submission.yaml "
        "(a maintainer's step after a metric or its judge changes)",
    )
    package = parser.add_argument_group("packaging one's own runs (--from-store)")
    package.add_argument(
        "--from-store", action="store_true", help="write a submission folder from finished runs of --store"
    )
    package.add_argument("--name", help="the submission's name (lower case, digits, '.', '_', '-')")
    package.add_argument("--runs", help="run key prefixes as `grue runs` shows them, comma-separated")
    package.add_argument("--task", help="only runs of these tasks, comma-separated, or all (the seven)")
    package.add_argument("--alg", help="only runs of this algorithm")
    package.add_argument(
        "--stage",
        choices=["final", "zero-shot"],
        default="final",
        help="final: the test generations after training (default); zero-shot: before training (it. -1)",
    )
    package.add_argument(
        "--algorithm", help="the leaderboard label (default: the runs' algorithm or zero-shot)"
    )
    package.add_argument("--author", action="append", default=[], help="an author's name (repeatable)")
    package.add_argument("--contact", help="an e-mail or http(s) address for questions")
    package.add_argument("--link", help="http(s) link to the code or paper")
    package.add_argument("--description", help="what was trained and how (default: generated)")
    package.add_argument(
        "--out", type=Path, default=Path("baselines"), help="where <name>/ goes (baselines/)"
    )
    package.add_argument("--force", action="store_true", help="replace an existing <out>/<name>/ folder")


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.errors import GrueError

    if args.from_store:
        if args.path is not None:
            raise GrueError(
                "--from-store writes a folder; it takes no PATH", key="PATH", fix="use --out and --name"
            )
        return _package(args)
    if args.path is None:
        raise GrueError(
            "no submission folder given",
            key="PATH",
            fix="grue submit baselines/<name>/, or grue submit --from-store --name NAME ...",
        )
    return _submit(args)


def _submit(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.errors import GrueError, Problem
    from grue_bench.submit.record import check_store, record
    from grue_bench.submit.rescore import rescore
    from grue_bench.submit.restate import restate
    from grue_bench.submit.summary import render
    from grue_bench.submit.validate import validate

    if args.restate and not args.dry_run:
        raise GrueError("--restate rewrites the folder, not a store", key="--restate", fix="add --dry-run")
    submission = validate(args.path)
    if not args.dry_run:
        check_store(args.store, submission, replace=args.replace)
    rescored = rescore(submission)
    print(render(submission, rescored))
    if args.strict and rescored.mismatches:
        raise GrueError.many(
            [
                Problem(f"stated number differs: {d.describe()}", fix="state the re-scored numbers")
                for d in rescored.mismatches
            ],
            str(submission.root),
        )
    if args.dry_run:
        if args.restate:
            print(f"\nrestated {restate(submission, rescored)} number(s) in {submission.root}")
        print("\ndry run: nothing recorded")
        return 0
    run_ids = record(args.store, submission, rescored, replace=args.replace)
    print(
        f"\nrecorded {len(run_ids)} run(s) as submitted into {args.store}; "
        f"see `grue report --store {args.store}`"
    )
    return 0


def _package(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.errors import GrueError
    from grue_bench.resolve.grid import resolve_tasks
    from grue_bench.submit.package import PackageRequest, package

    missing = [
        flag
        for flag, value in (
            ("--name", args.name),
            ("--contact", args.contact),
            ("--link", args.link),
            ("--author", args.author),
        )
        if not value
    ]
    if missing:
        raise GrueError(
            f"--from-store needs {', '.join(missing)}",
            key=missing[0],
            fix="e.g. --name my-ppo --author 'Ada Lovelace' --contact ada@example.org --link https://github.com/me/code",
        )
    request = PackageRequest(
        store=args.store,
        name=args.name,
        out=args.out,
        authors=args.author,
        contact=args.contact,
        link=args.link,
        runs=_items(args.runs),
        tasks=resolve_tasks(args.task) if args.task else [],
        alg=args.alg,
        stage=args.stage,
        algorithm=args.algorithm,
        description=args.description,
        force=args.force,
    )
    folder = package(request)
    print(f"wrote {folder}; check it with `grue submit {folder} --dry-run`, then propose it as a change")
    return 0


def _items(text: str | None) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]
