"""Where bundled folders (tasks, the crowdsourcing page) are, installed or in a checkout."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def bundled_dir(name: str) -> Path:
    """The top-level folder ``name``: inside the wheel when installed, else the repository's."""
    installed = PACKAGE_DIR / "_bundled" / name
    return installed if installed.is_dir() else PACKAGE_DIR.parent / name


def task_dirs() -> list[Path]:
    """Folders holding task plugins: the bundled one, then any in ``GRUE_TASKS_PATH``."""
    extra = [Path(p) for p in os.environ.get("GRUE_TASKS_PATH", "").split(os.pathsep) if p]
    return [bundled_dir("tasks"), *extra]


def cache_dir() -> Path:
    """Where trained offline assets (tokenizers, tiny models, classifiers) are cached."""
    root = os.environ.get("GRUE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")), "grue_bench"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_dir(root: Path, task: str, alg: str, seed: int, config_hash: str) -> Path:
    """Where a run's artifacts go, under the output folder ``root``."""
    return root / task / alg / f"seed{seed}-{config_hash}"
