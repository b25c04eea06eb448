"""Build a classifier once and keep it under ``cache_dir()``, keyed by everything its weights depend on.

An entry that cannot be loaded (a half-copied or corrupt file, a format this code does not read) is
rebuilt, not trusted. Builders of one entry take turns: a second process waits for the first's entry
instead of fitting the same weights again (grids run several processes, tests several workers)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from grue_bench.paths import cache_dir

logger = logging.getLogger(__name__)


class Saveable(Protocol):
    def save(self, directory: Path) -> None: ...


Model = TypeVar("Model", bound=Saveable)


def cache_key(fingerprint: dict[str, Any]) -> str:
    """A hash of everything that changes the trained weights."""
    return hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def cached_path(name: str, fingerprint: dict[str, Any]) -> Path:
    """Where the classifier ``name`` with this fingerprint lives."""
    return cache_dir() / "classifiers" / f"{name}-{cache_key(fingerprint)}"


def file_digest(path: Path) -> str:
    """The SHA-256 of a file (a judge's training corpus stands in its fingerprint by this)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def _turn(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside ``path`` (where the platform has ``fcntl``)."""
    try:
        import fcntl
    except ImportError:  # Windows: concurrent builders then both fit; the rename keeps one copy
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f"{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _load_trusted(path: Path, load: Callable[[Path], Model]) -> Model | None:
    """The entry at ``path`` if it loads; a broken one is removed (and None returned)."""
    if not path.is_dir():
        return None
    try:
        model = load(path)
    except Exception as error:  # whatever is wrong with the files, the fix is a rebuild
        logger.warning(
            "cached classifier %s cannot be loaded (%s: %s); rebuilding it", path, type(error).__name__, error
        )
        shutil.rmtree(path, ignore_errors=True)
        return None
    logger.info("loaded cached classifier %s", path)
    return model


def load_or_build(
    name: str, fingerprint: dict[str, Any], build: Callable[[], Model], load: Callable[[Path], Model]
) -> Model:
    """The cached classifier if there is a sound one, else ``build()`` it now and cache it."""
    path = cached_path(name, fingerprint)
    with _turn(path):
        cached = _load_trusted(path, load)
        if cached is not None:
            return cached
        logger.info("building offline classifier %s (cached for later runs)", name)
        model = build()
        # Written beside the target and renamed, so a crash never leaves half a model behind.
        staging = path.with_name(f"{path.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        model.save(staging)
        try:
            staging.rename(path)
        except OSError:  # a builder without the lock (Windows) cached it first; its copy is identical
            shutil.rmtree(staging, ignore_errors=True)
        logger.info("cached classifier at %s", path)
    return model
