"""Human evaluation on Mechanical Turk: export a blinded batch CSV of test prompts and run outputs
(with attention checks), ingest MTurk's results into the store (ratings per system, agreement, win
rates), and preview the HTML templates. Each task's form is tasks/<id>/crowd.html; the shared page, the
pairwise form and their docs are in crowdsourcing/."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grue_bench.store import Store

DEFAULT_STORE = "grue_results.sqlite"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="crowd_command", required=True)

    export = sub.add_parser("export", help="write a blinded batch CSV for MTurk from a store's runs")
    export.add_argument("--store", type=Path, default=Path(DEFAULT_STORE), help="SQLite results store")
    export.add_argument("--task", required=True, help="task id (see `grue ls tasks`)")
    export.add_argument(
        "--algs", required=True, help="comma-separated algorithms to rate ('reference': the references)"
    )
    export.add_argument("--n", type=int, default=100, help="test prompts to sample (default 100)")
    export.add_argument("--seed", type=int, default=0, help="random seed of the sampling and shuffling")
    export.add_argument("--pairwise", action="store_true", help="A/B comparisons instead of Likert ratings")
    export.add_argument(
        "--checks", type=int, help="attention-check items to add (default: 10%% of the items, at least 1)"
    )
    export.add_argument(
        "--out",
        type=Path,
        help="the batch CSV to write (default: <batch id>.csv); its page goes beside it (.html)",
    )

    ingest = sub.add_parser("ingest", help="store the ratings of an MTurk batch results CSV")
    ingest.add_argument("results", type=Path, help="the results CSV downloaded from MTurk")
    ingest.add_argument("--store", type=Path, default=Path(DEFAULT_STORE), help="SQLite results store")
    ingest.add_argument(
        "--max-check-failures",
        type=int,
        default=0,
        help="drop a worker who fails more attention checks than this (default 0: any failure)",
    )

    preview = sub.add_parser("preview", help="render the templates with example rows to HTML files")
    preview.add_argument("--task", default="all", help="a task id, or 'all' (default): every template")
    preview.add_argument("--csv", type=Path, help="rows to render instead of the template's example CSV")
    preview.add_argument("--pairwise", action="store_true", help="with --csv: use the pairwise template")
    preview.add_argument("--limit", type=int, help="render at most this many rows per template")
    preview.add_argument("--out", type=Path, default=Path("crowd_preview"), help="folder for the pages")


def run(args: argparse.Namespace) -> int:
    handlers = {"export": _export, "ingest": _ingest, "preview": _preview}
    return handlers[args.crowd_command](args)


def _open_store(path: Path) -> Store:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.errors import GrueError
    from grue_bench.store import Store

    if not path.is_file():
        raise GrueError(
            "results store not found", source=str(path), key="--store", fix="give --store, or run `grue run`"
        )
    return Store(path)


def _export(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.crowd.export import export_batch
    from grue_bench.crowd.templates import load_template, write_rows

    algs = [alg.strip() for alg in args.algs.split(",") if alg.strip()]
    with _open_store(args.store) as store:
        exported = export_batch(
            store,
            task=args.task,
            algs=algs,
            n=args.n,
            seed=args.seed,
            pairwise=args.pairwise,
            checks=args.checks,
        )
    out = args.out or Path(f"{exported.batch.batch_id}.csv")
    write_rows(out, exported.columns, exported.rows)
    # The page MTurk shows: the template's form wrapped in the shared page, as one file to upload.
    page = out.with_suffix(".html")
    page.write_text(load_template(exported.batch.template).text, encoding="utf-8")
    checks = f"{exported.n_checks} attention check{'' if exported.n_checks == 1 else 's'}"
    again = "" if exported.stored else "; this batch was already in the store"
    batch = exported.batch.batch_id
    print(f"batch {batch}: {len(exported.rows)} rows ({exported.n_prompts} prompts, {checks}){again}")
    print(f"wrote {out}; publish it with the page {page}")
    return 0


def _ingest(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.crowd.ingest import ingest_results
    from grue_bench.crowd.stats import format_summary

    with _open_store(args.store) as store:
        report = ingest_results(store, args.results, max_check_failures=args.max_check_failures)
        ratings = store.human_ratings(batch_ids=report.batch_ids)
    print(
        f"{report.path}: {report.n_rows} rows, {report.n_skipped} rejected assignments skipped, "
        f"{report.n_workers} workers, {report.n_ratings} ratings stored (batches: "
        f"{', '.join(report.batch_ids) or 'none'})"
    )
    print(f"attention checks: {report.n_checks} answered, {report.n_failed_checks} failed")
    for worker, (failed, total) in sorted(report.dropped.items()):
        print(f"dropped worker {worker}: failed {failed} of {total} attention checks")
    if report.unchecked:
        print(f"kept without an attention check answered: {', '.join(report.unchecked)}")
    if report.median_work_time_s is not None:
        print(f"median work time: {report.median_work_time_s:.0f} s per assignment")
    print()
    print(format_summary(ratings))
    return 0


def _preview(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.crowd.preview import preview
    from grue_bench.crowd.templates import PAIRWISE, available, load_template
    from grue_bench.errors import GrueError

    if args.csv is not None:
        if args.task == "all" and not args.pairwise:
            raise GrueError(
                "--csv renders one template", key="--task", fix="give --task ID, or --pairwise for A/B rows"
            )
        names = [PAIRWISE if args.pairwise else load_template(args.task).name]
    elif args.task == "all":
        names = available()
    else:
        names = [load_template(args.task).name, PAIRWISE]
    for page in preview(names, args.out, csv_path=args.csv, limit=args.limit):
        print(page)
    return 0
