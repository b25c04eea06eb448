"""Saving and restoring an RL run mid-way, exactly: everything the next iteration depends on.

That is the policy (with value head), NLPO's masking model, the optimizer (RL keeps a constant
learning rate: there is no schedule to save), the KL coefficient, the iteration, the order the
prompts are drawn in (the run's data RNG), the update's minibatch order and the Python, NumPy
and torch (CPU and CUDA) random states that sampling and evaluation draw from. A run resumed
from a checkpoint repeats, bit for bit on CPU, what the uninterrupted run did after it. Files
are this tool's own, loaded with ``weights_only=True``. Frozen weights (an adapter's base) are
left out: the resumed run has them from the base model it starts from.

A run saves a checkpoint as *staged* (``checkpoint-<iteration>.staged``); the results store's
writer promotes it to ``checkpoint`` once it has stored every row the run sent before it. A
resume therefore never starts after rows the store does not have (a run in a worker process
can be ahead of the writer when both are killed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Protocol

import torch

from grue_bench.random_states import (
    as_lists,
    as_tuples,
    host_rng_state,
    set_host_rng_state,
    set_torch_rng_state,
    torch_rng_state,
)

STATE_FILE = "state.pt"
META_FILE = "meta.json"
CHECKPOINT = "checkpoint"


class Checkpointable(Protocol):
    """What a checkpoint saves and restores: an RL algorithm, or the supervised stage."""

    iteration: int

    def state_dict(self) -> dict[str, Any]:
        """Its state: tensors, numbers and lists (``torch.load``'s ``weights_only`` reads them)."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned."""


def staged_dir(run_dir: Path, iteration: int) -> Path:
    """Where a run stages the checkpoint of ``iteration``."""
    return run_dir / f"{CHECKPOINT}-{iteration}.staged"


def promote_checkpoint(run_dir: Path, iteration: int) -> bool:
    """Make the staged checkpoint of ``iteration`` the one a resume starts from; False when the
    run has already replaced it by a newer one (see ``discard_staged``)."""
    if not staged_dir(run_dir, iteration).is_dir():
        return False
    final, old = run_dir / CHECKPOINT, run_dir / f"{CHECKPOINT}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    staged_dir(run_dir, iteration).rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return True


def discard_staged(run_dir: Path, keep: int | None = None) -> None:
    """Remove staged checkpoints other than ``keep``'s: an earlier attempt's, or (when the
    writer promotes only after the run has ended, as for Ray tasks) the superseded ones."""
    for staged in run_dir.glob(f"{CHECKPOINT}-*.staged"):
        if keep is None or staged != staged_dir(run_dir, keep):
            shutil.rmtree(staged, ignore_errors=True)


def save_checkpoint(directory: Path, algorithm: Checkpointable, rng_state: Any) -> None:
    """Write the algorithm's state and the random states atomically (a temporary folder renamed
    into place)."""
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    torch.save({**algorithm.state_dict(), **torch_rng_state()}, tmp / STATE_FILE)
    meta = {
        "iteration": algorithm.iteration,
        "rng_state": as_lists(rng_state),
        **host_rng_state(),
    }
    (tmp / META_FILE).write_text(json.dumps(meta))
    shutil.rmtree(directory, ignore_errors=True)
    tmp.rename(directory)


def load_checkpoint(directory: Path, algorithm: Checkpointable) -> tuple | None:
    """Restore the algorithm from ``directory``; returns the saved sampler RNG state (None if absent)."""
    if not (directory / META_FILE).is_file():
        return None
    meta = json.loads((directory / META_FILE).read_text())
    # on the CPU, then copied into the parameters wherever they are: torch cannot map to the
    # device "cpu:0" that a process of a CPU launch has
    state = torch.load(directory / STATE_FILE, map_location="cpu", weights_only=True)
    if "kl_coef" in meta:  # a checkpoint written before 2026-11-27 kept it here
        state["kl_coef"] = meta["kl_coef"]
    algorithm.load_state_dict(state)
    algorithm.iteration = meta["iteration"]
    set_torch_rng_state(state)
    set_host_rng_state(meta)
    return as_tuples(meta["rng_state"])
