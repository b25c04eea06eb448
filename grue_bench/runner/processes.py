"""One run across several processes (GPUs, or CPU processes with gloo): ``grue run
--num-processes N`` starts itself again under accelerate's launcher, or the user runs
``accelerate launch -m grue_bench run ...``.

Every launched process executes the same runs in the same order, one at a time. The algorithm's
``Accelerator`` joins the launch: the policy is wrapped for DDP, so the processes' gradients are
averaged, while each process samples its own prompts (``runner.callbacks.AcrossProcesses``). The
first process alone opens the store, decides which runs to execute (and tells the others),
records, evaluates and saves checkpoints and the final model; evaluation holds no collective
operation, so the others go on to their next rollout meanwhile and wait at its gradient average.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import torch
from accelerate import PartialState
from accelerate.utils import broadcast_object_list
from tqdm.auto import tqdm

from grue_bench.errors import GrueError
from grue_bench.resolve.grid import RunSpec
from grue_bench.runner.executor import GridExecutor, GridReport
from grue_bench.runner.prepare import prepare_here
from grue_bench.runner.run import execute
from grue_bench.runner.world import world_size
from grue_bench.store import Store

log = logging.getLogger(__name__)


def launched() -> bool:
    """Whether this process is one of several started by a distributed launcher."""
    return world_size() > 1


def launch_command(target: Sequence[str], processes: int) -> list[str]:
    """``target`` (a script and its arguments, or ``-m`` a module and its arguments) under
    accelerate's launcher with ``processes`` processes on this machine, run by this interpreter."""
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        str(processes),
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        *target,
    ]


def relaunch(argv: Sequence[str], processes: int) -> int:
    """Run ``argv`` in ``processes`` processes (one per GPU; CPU processes with gloo on a machine
    without CUDA); returns the launcher's exit status."""
    env = dict(os.environ)
    if not torch.cuda.is_available():
        env["ACCELERATE_USE_CPU"] = "1"
    command = launch_command(["-m", "grue_bench", *argv], processes)
    log.info("launching %d processes: %s", processes, " ".join(command))
    return subprocess.run(command, env=env, check=False).returncode


def check_launch(specs: Sequence[RunSpec], processes: int | None, executor: str) -> None:
    """Refuse what a run across several processes cannot do."""
    world = world_size()
    if launched() and processes is not None and processes != world:
        raise GrueError(
            f"--num-processes {processes} in a launch of {world} processes",
            source="--num-processes",
            fix="leave --num-processes out under `accelerate launch`",
        )
    if executor == "ray":
        raise GrueError(
            "several processes per run and Ray do not combine",
            source="--executor",
            fix="use --executor local with --num-processes (Ray spreads a grid's runs over machines)",
        )
    chains = sorted({spec.alg for spec in specs if spec.warm_start or spec.alg == "supervised"})
    if chains:
        raise GrueError(
            f"a supervised stage ({', '.join(chains)}) runs in one process only",
            source="--alg",
            fix="run supervised chains without --num-processes or `accelerate launch`",
        )


def run_launched(
    specs: Sequence[RunSpec], store_path: Path, output_root: Path, force: bool
) -> GridReport | None:
    """This process's part of a launch: the first process's report, None in the others."""
    state = PartialState(cpu=not torch.cuda.is_available())
    if not state.is_main_process:
        labels = broadcast_object_list([None])[0]
        for spec in specs:
            if spec.label in labels:
                execute(spec, None, output_root)
        return None
    with Store(store_path) as store:
        grid = GridExecutor(store, output_root, force=force)
        with grid.holding(), tqdm(desc="grid", unit="run") as bar:
            todo = grid.claim(specs)
            bar.reset(total=len(todo))
            # base models and metrics built once, here, while the others wait for the list
            todo = grid.set_up(todo, prepare_here(todo), bar)
            broadcast_object_list([[spec.label for spec in todo]])
            for spec in todo:
                if not grid.execute_here(spec):
                    # the other processes are inside this run's collectives: the launch stops
                    log.error("%s failed: stopping the %d processes", spec.label, state.num_processes)
                    break
                bar.update(1)
    return grid.report
