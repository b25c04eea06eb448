"""Train and evaluate tasks x algorithms x seeds into a SQLite store; resumes unfinished runs.

With only --task, --alg and --seeds it runs on the embedded offline default (the tiny profile).
A --config alone says its task (through its datapool) and its algorithm (alg.id).
Finished runs are skipped, unfinished ones resume from their last checkpoint (--force starts over).
A run another live `grue run` holds (same store and key) is left to it and listed; the exit status
is 1 if a run failed, else 3 if runs were left to other processes, else 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from grue_bench.commands import add_override_argument

if TYPE_CHECKING:
    from grue_bench.resolve.grid import RunSpec

log = logging.getLogger(__name__)

DEFAULT_STORE = "grue_results.sqlite"
DEFAULT_OUTPUT = "grue_runs"
LEFT_TO_OTHERS = 3
"""The exit status when no run failed but some were left to other live processes: their results
are not in the store yet (0 says every run of the grid is done)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--task",
        help="all (the seven GRUE tasks, default) or ids, comma-separated; with --config, the config's task",
    )
    parser.add_argument(
        "--alg",
        help="ids or chains, comma-separated: ppo (default),nlpo,supervised+ppo; with --config, its alg.id",
    )
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--seeds", type=int, default=1, help="run seeds 0..N-1 (default 1)")
    seeds.add_argument("--seed-list", help="explicit seeds, comma-separated")
    parser.add_argument(
        "--profile",
        help="tiny (offline, default), small or paper (default with --config: its profile key); "
        "tiny or small given with --config replaces every hub model the config names by an offline one",
    )
    parser.add_argument(
        "--config", type=Path, help="a config YAML (RL4LMs schema) merged over the task defaults"
    )
    add_override_argument(parser)
    parser.add_argument("--store", type=Path, default=Path(DEFAULT_STORE), help="SQLite results store")
    parser.add_argument("--output-dir", type=Path, default=Path(DEFAULT_OUTPUT), help="run artifacts folder")
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="runs in parallel as local processes (default: 2, or 1 on a one-core machine)",
    )
    parser.add_argument("--executor", choices=["local", "ray"], default="local", help="where runs execute")
    parser.add_argument("--ray-address", help="an existing Ray cluster (default: start a local Ray)")
    parser.add_argument(
        "--force", action="store_true", help="run every run again from the start, finished or not"
    )
    parser.add_argument(
        "--report-to",
        metavar="TRACKERS",
        help="experiment trackers each run also logs to, comma-separated: tensorboard, wandb, mlflow, "
        "trackio, all (the installed ones) or none; sets the config's report_to "
        "(pip install 'grue-bench[trackers]')",
    )
    parser.add_argument(
        "--precision",
        choices=["bf16", "fp16", "fp32"],
        help="the forward passes' precision (sets alg.args.bf16/fp16, Hugging Face's names): bf16 on a "
        "GPU or a CPU with bfloat16 instructions, fp16 on a GPU, fp32 everywhere (the default; the small "
        "profile's is bf16 where the machine has it)",
    )
    parser.add_argument(
        "--num-processes",
        type=int,
        help="train each run in N processes through accelerate (one per GPU; CPU processes without "
        "CUDA), their gradients averaged; the runs go one after another",
    )


def run(args: argparse.Namespace) -> int:
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.errors import GrueError
    from grue_bench.rl.precision import check_supported, default_device
    from grue_bench.runner.assemble import run_precision
    from grue_bench.runner.executor import GridExecutor
    from grue_bench.runner.processes import check_launch, launched, relaunch, run_launched
    from grue_bench.runner.trackers import check_installed
    from grue_bench.store import Store

    if args.jobs < 1:
        raise GrueError(f"--jobs must be at least 1, got {args.jobs}", source="--jobs", fix="e.g. --jobs 2")
    if args.num_processes is not None and args.num_processes < 1:
        raise GrueError(
            f"--num-processes must be at least 1, got {args.num_processes}",
            source="--num-processes",
            fix="e.g. --num-processes 2",
        )
    if args.precision is not None:
        check_supported(args.precision, default_device(), "--precision")
    specs = grid_specs(args)
    for spec in specs:
        check_installed(spec.config.report_to)
        run_precision(spec.config, default_device())  # a half precision this machine lacks stops the grid
    if launched() or (args.num_processes or 1) > 1:
        check_launch(specs, args.num_processes, args.executor)
        if not launched():
            return relaunch(args.argv, args.num_processes)
    started = time.perf_counter()
    if launched():  # runs one after another, each across the launch's processes
        report = run_launched(specs, args.store, args.output_dir, args.force)
        if report is None:  # not the first process: it records nothing
            return 0
    else:
        with Store(args.store) as store:
            report = GridExecutor(store, args.output_dir, force=args.force).run(
                specs, jobs=args.jobs, executor=args.executor, ray_address=args.ray_address
            )
    elapsed = time.perf_counter() - started
    print(
        f"{len(specs)} run(s): {len(report.finished)} finished, {len(report.skipped)} already done, "
        f"{len(report.failed)} failed, {len(report.elsewhere)} running in other processes, in {elapsed:.1f} s"
    )
    print(f"store: {args.store}   artifacts: {args.output_dir}")
    for label, error in report.failed.items():
        print(f"FAILED {label}: {error.splitlines()[0] if error else ''}")
    for label, holder in report.elsewhere.items():
        print(f"RUNNING ELSEWHERE {label}: in {holder}, which writes its results to this store")
    if report.failed:
        return 1
    return LEFT_TO_OTHERS if report.elsewhere else 0


def grid_specs(args: argparse.Namespace) -> list[RunSpec]:
    """The runs ``grue run``'s arguments ask for: tasks x algorithm chains x seeds, each with its
    resolved config."""
    # start-up time: `grue <command> --help` imports this module (cli.py)
    from grue_bench.resolve.grid import build_specs, resolve_grid, resolve_seeds

    overrides = [*args.overrides, *([f"report_to={args.report_to}"] if args.report_to is not None else [])]
    if args.precision is not None:
        overrides += [f"alg.args.{half}={args.precision == half}" for half in ("bf16", "fp16")]
    tasks, algs = resolve_grid(args.task, args.alg, args.config, overrides)
    return build_specs(
        tasks,
        algs,
        resolve_seeds(args.seeds, args.seed_list),
        args.profile,
        args.config,
        overrides,
        offline=args.profile is not None,
    )
