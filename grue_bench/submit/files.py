"""Reading a submission folder safely: nothing outside it, no symlinks, no special files, bounded sizes.

The folder is listed once without following links; a file is then opened with ``O_NOFOLLOW`` and read
up to its limit, so a link or a growing file planted after the listing cannot slip through.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grue_bench.errors import Problem
from grue_bench.submit.format import MAX_ENTRIES, MAX_TOTAL_BYTES


@dataclass
class Listing:
    """The regular files of a submission folder (relative POSIX path -> size) and what is wrong."""

    root: Path
    files: dict[str, int] = field(default_factory=dict)
    refused: set[str] = field(default_factory=set)
    """Links and special files: reported, never read."""
    problems: list[Problem] = field(default_factory=list)

    def is_refused(self, rel: str) -> bool:
        """Whether ``rel`` or a folder above it is a refused link or special file."""
        return any(rel == refused or rel.startswith(refused + "/") for refused in self.refused)

    @property
    def total_bytes(self) -> int:
        """The size of every regular file together."""
        return sum(self.files.values())


def list_folder(root: Path) -> Listing:
    """Every entry under ``root``; symlinks, special files and too many entries are problems."""
    listing = Listing(root)
    seen = 0
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError as error:
            listing.problems.append(Problem(f"cannot be listed: {error.strerror}", _rel(root, folder)))
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                listing.problems.append(
                    Problem(
                        f"holds more than {MAX_ENTRIES} files and folders",
                        fix="keep only submission.yaml, README.md and the generations files",
                    )
                )
                return listing
            rel = _rel(root, Path(entry.path))
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                listing.refused.add(rel)
                listing.problems.append(_link_problem(root, Path(entry.path), rel))
            elif stat.S_ISDIR(info.st_mode):
                pending.append(Path(entry.path))
            elif stat.S_ISREG(info.st_mode):
                listing.files[rel] = info.st_size
            else:
                listing.refused.add(rel)
                listing.problems.append(
                    Problem("is not a regular file (a device, pipe or socket)", rel, "remove it")
                )
    if listing.total_bytes > MAX_TOTAL_BYTES:
        listing.problems.append(
            Problem(
                f"the folder holds {listing.total_bytes:,} bytes, more than the limit of {MAX_TOTAL_BYTES:,}",
                fix="submit fewer or shorter generations",
            )
        )
    return listing


def check_relative(path: str) -> str | None:
    """Why ``path`` cannot name a file inside the submission folder, or None when it can."""
    if "\\" in path or "\x00" in path:
        return "must use '/' as separator and no special characters"
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith("~"):
        return "must be relative to the submission folder, not absolute"
    if any(part in ("..", ".") for part in path.split("/")) or "" in path.split("/"):
        return "must not contain '..', '.' or empty components: it has to stay inside the submission folder"
    return None


def read_bounded(root: Path, rel: str, limit: int) -> bytes:
    """The bytes of ``root/rel``; OSError when it is a link, not a regular file, or over ``limit``."""
    folder_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        parts = rel.split("/")
        fd = folder_fd
        for part in parts[:-1]:  # walk down without following any link
            fd = _open_at(part, fd, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, close=fd != folder_fd)
        fd = _open_at(parts[-1], fd, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, close=fd != folder_fd)
    finally:
        os.close(folder_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{rel} is not a regular file")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > limit:
                raise OSError(f"{rel} is larger than {limit:,} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _open_at(name: str, folder_fd: int, flags: int, *, close: bool) -> int:
    try:
        return os.open(name, flags, dir_fd=folder_fd)
    finally:
        if close:
            os.close(folder_fd)


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else "."


def _link_problem(root: Path, path: Path, rel: str) -> Problem:
    try:
        target = path.resolve()
        inside = target.is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a loop of links
        inside = False
    where = "inside the folder" if inside else "outside the submission folder"
    return Problem(
        f"is a symbolic link (leading {where}); links are never followed",
        rel,
        "replace the link by the file itself",
    )
