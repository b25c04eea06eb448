"""Base-LM cache entries: built once in a staging folder, and building draws nothing from the caller."""

import random

import numpy as np
import torch

from grue_bench.models.cache import read_entry, write_entry


def _draws() -> tuple:
    return torch.rand(4), random.random(), np.random.rand()


def _seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


def test_building_an_entry_leaves_the_callers_random_states(tmp_path):
    _seed_all(3)
    expected = _draws()

    def build(staging):
        torch.nn.Linear(8, 8)  # a model built from its config draws its first weights
        _draws()
        (staging / "weights.bin").write_bytes(b"\0")
        return {"kind": "test"}

    _seed_all(3)
    record = write_entry(tmp_path / "entry", build)
    got = _draws()
    assert record == read_entry(tmp_path / "entry") == {"kind": "test"}
    assert (tmp_path / "entry" / "weights.bin").is_file()
    assert torch.equal(got[0], expected[0]) and got[1:] == expected[1:]
