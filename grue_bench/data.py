"""Samples and data pools, in RL4LMs's shape: ``prepare(split, **args)`` returns a pool of samples."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grue_bench.errors import GrueError


@dataclass(frozen=True)
class Sample:
    """One input with its references (field names as in RL4LMs)."""

    id: str
    prompt_or_input_text: str
    references: list[str]
    meta_data: dict[str, Any] = field(default_factory=dict)


class TextGenPool(Sequence[Sample]):
    """A list of samples; subclasses implement ``prepare``."""

    def __init__(self, samples: list[Sample]) -> None:
        self._samples = samples

    @classmethod
    def prepare(cls, split: str, **args: Any) -> TextGenPool:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._samples)

    def __getitem__(self, index):  # type: ignore[override]
        return self._samples[index]

    def __iter__(self) -> Iterator[Sample]:
        return iter(self._samples)


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read JSON Lines; a bad line is an error naming the file and line."""
    path = Path(path)
    if not path.is_file():
        raise GrueError("file not found", source=str(path), fix="check the path")
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise GrueError(
                    f"line {number} is not valid JSON: {exc.msg}", source=str(path), fix="fix that line"
                ) from exc
            if not isinstance(row, dict):
                raise GrueError(
                    f"line {number} is not a JSON object", source=str(path), fix="write one object per line"
                )
            rows.append(row)
    return rows
