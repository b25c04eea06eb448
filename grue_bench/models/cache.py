"""Cache entries for base LMs: a folder that counts only once its marker file is written.

An entry is built in a staging folder beside its final place and renamed into place at the
end, with the marker written last, so a crash (or a concurrent run) never leaves a folder that
looks complete but holds half a model. Building leaves the caller's random states as they were
(a model built from its config draws its first weights): the first run on a machine, which
builds, draws what every later run, which loads, draws.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grue_bench.random_states import random_states_kept

logger = logging.getLogger(__name__)

MARKER = "grue_model.json"
"""Written last into a finished entry: what was built and how."""


def content_hash(payload: Any) -> str:
    """A short stable hash of JSON-serialisable ``payload``."""
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_entry(path: Path) -> dict[str, Any] | None:
    """The marker of a complete entry at ``path``, or None when it is missing or half-written."""
    marker = path / MARKER
    if not marker.is_file():
        return None
    try:
        return json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_entry(path: Path, build: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """Run ``build(staging_dir)`` (returns the marker's content) and move the result to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-{os.getpid()}-", dir=path.parent))
    try:
        with random_states_kept():
            record = build(staging)
        (staging / MARKER).write_text(json.dumps(record, indent=2, sort_keys=True), encoding="utf-8")
        if path.exists() and read_entry(path) is None:
            logger.warning("removing incomplete cache entry %s", path)
            shutil.rmtree(path)
        try:
            staging.rename(path)
        except OSError:
            if read_entry(path) is None:
                raise
            # Another process finished the same entry first; its copy is equivalent.
            logger.info("cache entry %s was written concurrently; using that one", path)
        return read_entry(path) or record
    finally:
        shutil.rmtree(staging, ignore_errors=True)
