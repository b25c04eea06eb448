"""Saving and restoring an RL run mid-way: policy (with value head), masking model, optimizer,
KL coefficient and iteration. Files are this tool's own, loaded with ``weights_only=True``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch

STATE_FILE = "state.pt"
META_FILE = "meta.json"


def save_checkpoint(directory: Path, algorithm: Any, rng_state: Any) -> None:
    """Write the algorithm's state atomically (a temporary folder renamed into place)."""
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    state = {
        "policy": algorithm.unwrapped.state_dict(),
        "optimizer": algorithm.optimizer.state_dict(),
    }
    masker = getattr(algorithm, "masker", None)
    if masker is not None:
        state["mask_model"] = masker.model.state_dict()
    torch.save(state, tmp / STATE_FILE)
    meta = {
        "iteration": algorithm.iteration,
        "kl_coef": algorithm.kl.value,
        "rng_state": _jsonable(rng_state),
    }
    (tmp / META_FILE).write_text(json.dumps(meta))
    shutil.rmtree(directory, ignore_errors=True)
    tmp.rename(directory)


def load_checkpoint(directory: Path, algorithm: Any) -> tuple | None:
    """Restore the algorithm from ``directory``; returns the saved sampler RNG state (None if absent)."""
    if not (directory / META_FILE).is_file():
        return None
    meta = json.loads((directory / META_FILE).read_text())
    state = torch.load(directory / STATE_FILE, map_location=algorithm.device, weights_only=True)
    algorithm.unwrapped.load_state_dict(state["policy"])
    algorithm.optimizer.load_state_dict(state["optimizer"])
    if "mask_model" in state:
        algorithm.masker.model.load_state_dict(state["mask_model"])
    algorithm.iteration = meta["iteration"]
    algorithm.kl.value = meta["kl_coef"]
    return _tupled(meta["rng_state"])


def _jsonable(value: Any) -> Any:
    return [_jsonable(v) for v in value] if isinstance(value, (tuple, list)) else value


def _tupled(value: Any) -> Any:
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value
