"""Checking one generations file: size, UTF-8, JSON lines of ``{id, text}``, every test id exactly once.

The file is read once (bounded, without following links); those exact bytes are hashed and given to
``grue_bench.scoring.load_predictions``, the reader of ``grue eval``.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grue_bench.data import Sample
from grue_bench.errors import GrueError, Problem
from grue_bench.scoring import load_predictions
from grue_bench.submit import files
from grue_bench.submit.format import MAX_FILE_BYTES, MAX_TEXT_CHARS
from grue_bench.submit.problems import shorten

MAX_PROBLEMS_PER_FILE = 20
PREDICTION_KEYS = frozenset({"id", "text"})


@dataclass
class SeedGenerations:
    """One seed's generations file, checked: its texts in the order of the task's test samples."""

    seed: int
    path: str
    sha256: str
    texts: list[str]


def check_generations(
    root: Path,
    rel: str,
    seed: int,
    samples: Sequence[Sample],
    listing: files.Listing,
    problems: list[Problem],
) -> SeedGenerations | None:
    """One generations file: size, UTF-8, JSON lines of ``{id, text}``, every test id exactly once."""

    if rel not in listing.files:
        if not listing.is_refused(rel):
            problems.append(
                Problem(
                    f"is missing: no generations for seed {seed}",
                    rel,
                    f'write one JSON line {{"id", "text"}} per test sample to {rel}',
                )
            )
        return None
    if listing.files[rel] > MAX_FILE_BYTES:
        problems.append(
            Problem(
                f"holds {listing.files[rel]:,} bytes, more than the limit of {MAX_FILE_BYTES:,} per file",
                rel,
                "generations for the test split are far smaller; check what the file holds",
            )
        )
        return None
    try:
        data = files.read_bounded(root, rel, MAX_FILE_BYTES)
    except OSError as error:
        problems.append(Problem(f"cannot be read safely: {error}", rel, "give a regular file"))
        return None
    issues = _check_lines(data, rel)
    if issues is None:  # not text at all: load_predictions cannot read it
        problems.append(Problem("is not UTF-8 text", rel, "write the file as UTF-8 JSON lines"))
        return None
    if issues:
        problems += _capped(issues, rel)
        return None
    with tempfile.TemporaryDirectory(prefix="grue-submit-") as folder:
        copy = Path(folder) / "generations.jsonl"
        copy.write_bytes(data)  # exactly the bytes checked and hashed
        try:
            texts = load_predictions(copy, samples)
        except GrueError as error:
            issues = [Problem(p.message, f"{rel} {p.key}".strip(), p.fix) for p in error.problems]
            problems += _capped(issues, rel)
            return None
    return SeedGenerations(seed, rel, hashlib.sha256(data).hexdigest(), texts)


def _check_lines(data: bytes, rel: str) -> list[Problem] | None:
    """What ``load_predictions`` does not check: extra keys, text length, nesting. None: unreadable."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    problems = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # load_predictions reports it with its line
        except RecursionError:
            problems.append(Problem("is nested too deeply", f"{rel} line {number}", 'write {"id", "text"}'))
            return problems  # load_predictions would fail on it too
        if not isinstance(row, dict):
            continue
        extra = sorted(set(row) - PREDICTION_KEYS)
        if extra:
            problems.append(
                Problem(
                    f"has key(s) {', '.join(repr(k[:40]) for k in extra[:5])} besides 'id' and 'text'",
                    f"{rel} line {number}",
                    'write exactly {"id": ..., "text": ...}',
                )
            )
        if isinstance(row.get("text"), str) and len(row["text"]) > MAX_TEXT_CHARS:
            problems.append(
                Problem(
                    f"text is {len(row['text']):,} characters long, over the limit of {MAX_TEXT_CHARS:,}",
                    f"{rel} line {number}",
                    "submit the generation as the model produced it for the test split",
                )
            )
    return problems


def _capped(problems: list[Problem], rel: str) -> list[Problem]:
    """At most ``MAX_PROBLEMS_PER_FILE`` problems of single lines, and every problem of the whole file."""
    lines = [p for p in problems if " line " in p.key]
    whole = [p for p in problems if " line " not in p.key]
    kept = lines[:MAX_PROBLEMS_PER_FILE]
    if len(lines) > len(kept):
        kept.append(Problem(f"... and {len(lines) - len(kept)} more line(s) with problems", rel))
    return [shorten(p) for p in kept + whole]
