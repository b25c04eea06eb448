"""Fixtures for the crowd tests: a fresh store with finished CommonGen runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from grue_bench.store import Store

from .mturk import make_store


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A fresh store file with the finished runs."""
    return make_store(tmp_path / "grue.db")


@pytest.fixture
def store(store_path: Path):
    with Store(store_path) as opened:
        yield opened
