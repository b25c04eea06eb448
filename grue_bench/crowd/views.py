"""What a worker sees of a task's sample: its input as labelled blocks, and what the output is called.

A task says it in its ``task.yaml`` (``crowd``: output label, pairwise question, and a hook giving
the blocks). A Likert template shows each block from its own CSV column (``Block.name``); the
pairwise template shows them all from one JSON column (``context_json``), so it serves any task. A
task without ``crowd`` (a synthetic task) is shown with its prompt as the input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grue_bench import plugins


@dataclass(frozen=True)
class SampleInput:
    """A test sample as the task ships it: raw prompt (without the task's prefix), references, meta."""

    sample_id: str
    prompt: str
    references: list[str]
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Block:
    """A labelled part of the input: text, or a table (rows of cells, ToTTo's format)."""

    name: str
    label: str
    text: str = ""
    table: list[list[dict[str, Any]]] | None = None

    def column_value(self) -> str:
        """The value of this block's column in a Likert batch CSV."""
        return self.text if self.table is None else json.dumps(self.table, ensure_ascii=False)

    def to_json(self) -> dict[str, Any]:
        """The form in the pairwise template's ``context_json``."""
        if self.table is None:
            return {"label": self.label, "text": self.text}
        return {"label": self.label, "table": self.table}


@dataclass(frozen=True)
class TaskView:
    """How one task is shown: the output's name, the pairwise question and the input blocks."""

    output_label: str
    criteria: str
    blocks: Callable[[SampleInput], list[Block]]


def clean(text: str) -> str:
    """Display text: IMDB's ``<br />`` line breaks become real ones."""
    return re.sub(r"\s*<br\s*/?>\s*", "\n", text).strip()


def _generic(sample: SampleInput) -> list[Block]:
    return [Block("input", "Input", clean(sample.prompt))]


GENERIC = TaskView(
    "Output", "Which output is better: more appropriate for the input, correct and fluent?", _generic
)


def view(task: str) -> TaskView:
    """The task's view (its ``crowd`` hook), or the generic one (the prompt as input)."""

    spec = plugins.TASKS.get(task) if task in plugins.TASKS else None
    if spec is None or spec.crowd is None:
        return GENERIC
    hook = spec.resolve(spec.crowd.blocks)
    return TaskView(
        spec.crowd.output_label,
        spec.crowd.criteria,
        lambda sample: [block_from_json(block) for block in hook(sample.prompt, sample.meta)],
    )


def block_from_json(data: Mapping[str, Any]) -> Block:
    """A block as a task's hook gives it, its text cleaned for display."""
    return Block(data["name"], data["label"], clean(data.get("text", "")), data.get("table"))


def likert_columns(task: str, sample: SampleInput, output: str) -> dict[str, str]:
    """A Likert row's task columns: each input block, then ``output``."""
    return {**{b.name: b.column_value() for b in view(task).blocks(sample)}, "output": clean(output)}


def pairwise_columns(task: str, task_name: str, sample: SampleInput, a: str, b: str) -> dict[str, str]:
    """A pairwise row's task columns: the question, the input as JSON blocks and the two outputs."""
    shown = view(task)
    blocks = [block.to_json() for block in shown.blocks(sample)]
    return {
        "task_name": task_name,
        "criteria": shown.criteria,
        "output_label": shown.output_label,
        "context_json": json.dumps(blocks, ensure_ascii=False),
        "output_a": clean(a),
        "output_b": clean(b),
    }


def sample_from_row(row: Mapping[str, Any]) -> SampleInput:
    """A shipped JSONL row as a ``SampleInput``."""
    return SampleInput(
        str(row["id"]),
        str(row.get("prompt", "")),
        list(row.get("references") or []),
        dict(row.get("meta") or {}),
    )
