"""The global random states a run draws from (torch's on CPU and CUDA, Python's, NumPy's): read,
set, and kept around a block that must not change them. A checkpoint saves them, a shared fit
and a shared test restore them, and scoring and model conversion run inside ``random_states_kept``."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import Any

import numpy
import torch


def torch_rng_state() -> dict[str, Any]:
    """torch's global random states, CPU and CUDA (tensors, for ``torch.save``)."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
    return {"torch_rng": torch.get_rng_state(), "cuda_rng": cuda}


def set_torch_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch_rng"])
    if state["cuda_rng"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])


@contextlib.contextmanager
def random_states_kept() -> Iterator[None]:
    """Run the block, then put torch's, Python's and NumPy's global random states back as they
    were: what comes after draws as if the block had not run (scoring, a supervised run's
    validations)."""
    torch_state, host_state = torch_rng_state(), host_rng_state()
    try:
        yield
    finally:
        set_torch_rng_state(torch_state)
        set_host_rng_state(host_state)


def host_rng_state() -> dict[str, Any]:
    """Python's and NumPy's global random states (JSON)."""
    return {"python_rng": as_lists(random.getstate()), "numpy_rng": as_lists(_numpy_state())}


def set_host_rng_state(state: dict[str, Any]) -> None:
    random.setstate(as_tuples(state["python_rng"]))
    numpy.random.set_state(as_tuples(state["numpy_rng"]))


def _numpy_state() -> tuple:
    """NumPy's global random state with its key array as a list (JSON)."""
    name, keys, position, has_gauss, cached = numpy.random.get_state()
    return (name, keys.tolist(), position, has_gauss, cached)


def as_lists(value: Any) -> Any:
    """A random state's tuples as lists (JSON)."""
    return [as_lists(v) for v in value] if isinstance(value, (tuple, list)) else value


def as_tuples(value: Any) -> Any:
    """What ``as_lists`` gave, its lists as tuples again (what the generators take)."""
    return tuple(as_tuples(v) for v in value) if isinstance(value, list) else value
