"""Where a run comes from: Python, platform, package versions and the git commit of the checkout."""

from __future__ import annotations

import logging
import platform
from contextlib import suppress
from importlib import metadata
from pathlib import Path
from typing import Any

from grue_bench import __version__

log = logging.getLogger(__name__)


def environment_info(cwd: str | Path | None = None) -> dict[str, Any]:
    """Python, platform, installed versions of key packages and the git commit of ``cwd``."""

    info: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    for package in ("torch", "transformers", "datasets"):
        with suppress(metadata.PackageNotFoundError):
            info[package] = metadata.version(package)
    info["grue_bench"] = __version__
    info["git_commit"] = git_commit(Path.cwd() if cwd is None else Path(cwd))
    return info


def git_commit(folder: Path) -> str | None:
    """The commit checked out in the git work tree holding ``folder``, or None (read from .git)."""
    try:
        for candidate in (folder.resolve(), *folder.resolve().parents):
            dot_git = candidate / ".git"
            if dot_git.is_dir():
                return _head_commit(dot_git)
            if dot_git.is_file():  # a worktree or submodule: ".git" names the real git dir
                text = dot_git.read_text().strip()
                if not text.startswith("gitdir:"):
                    return None
                return _head_commit((candidate / text.removeprefix("gitdir:").strip()).resolve())
    except OSError as error:
        log.debug("no git commit for %s: %s", folder, error)
    return None


def _head_commit(git_dir: Path) -> str | None:
    head = (git_dir / "HEAD").read_text().strip()
    if not head.startswith("ref:"):
        return head or None  # detached HEAD
    ref = head.removeprefix("ref:").strip()
    common = git_dir
    if (git_dir / "commondir").is_file():
        common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
    for base in (git_dir, common):
        if (base / ref).is_file():
            return (base / ref).read_text().strip()
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text().splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha
    return None  # an unborn branch, or refs in a format we do not read (reftable)
