"""What a worker sees of a task's sample: its input as labelled blocks, and what the output is called.

A Likert template shows each block from its own CSV column (``Block.name``); the pairwise template
shows them all from one JSON column (``context_json``), so it serves any task. A task without a view
here (a plugin, a synthetic task) is shown with its prompt as the input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


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


def _imdb(sample: SampleInput) -> list[Block]:
    return [Block("review_start", "Beginning of the review", clean(sample.prompt))]


def _commongen(sample: SampleInput) -> list[Block]:
    concepts = sample.meta.get("concepts") or sample.prompt.split()
    return [Block("concepts", "Concepts", ", ".join(concepts))]


def _cnn_dailymail(sample: SampleInput) -> list[Block]:
    return [Block("article", "News article", clean(sample.prompt))]


def _narrative_qa(sample: SampleInput) -> list[Block]:
    question, summary = sample.meta.get("question"), sample.meta.get("summary")
    if not (question and summary):  # not from the shipped data: split the formatted prompt
        match = re.match(r"question:\s*(.*?)\s*context:\s*(.*)", sample.prompt, re.DOTALL)
        question, summary = match.groups() if match else ("", sample.prompt)
    return [Block("summary", "Story summary", clean(summary)), Block("question", "Question", question)]


def _iwslt(sample: SampleInput) -> list[Block]:
    return [Block("source", "English sentence", sample.prompt)]


def _daily_dialog(sample: SampleInput) -> list[Block]:
    turns = [turn.strip() for turn in sample.prompt.split("<EOU>") if turn.strip()]
    # The response is A's: the speakers alternate back from B's last turn.
    speakers = ["B" if (len(turns) - index) % 2 else "A" for index in range(len(turns))]
    history = "\n".join(f"{speaker}: {turn}" for speaker, turn in zip(speakers, turns, strict=True))
    return [Block("history", "Conversation so far", history)]


def _totto(sample: SampleInput) -> list[Block]:
    meta = sample.meta
    if "table" in meta:
        marked = {(cell["row"], cell["col"]) for cell in meta.get("highlighted_cell_details", [])}
        marked |= {tuple(pair) for pair in meta.get("highlighted_cells", [])}
        table = [
            [{**cell, "highlighted": (r, c) in marked} for c, cell in enumerate(row)]
            for r, row in enumerate(meta["table"])
        ]
        titles = meta.get("table_page_title", ""), meta.get("table_section_title", "")
    else:  # not from the shipped data: the highlighted cells from the linearized prompt
        table, titles = _cells_from_prompt(sample.prompt)
    return [
        Block("page_title", "Wikipedia page", titles[0]),
        Block("section_title", "Section", titles[1]),
        Block("table_json", TABLE_LABEL, table=table),
    ]


TABLE_LABEL = "Table (highlighted cells in yellow; scroll a long table to see it all)"


def _cells_from_prompt(prompt: str) -> tuple[list[list[dict[str, Any]]], tuple[str, str]]:
    """A header row and a value row of highlighted cells from ToTTo's linearized subtable."""

    def tag(name: str, text: str) -> str:
        found = re.search(rf"<{name}>(.*?)</{name}>", text, re.DOTALL)
        return found.group(1).strip() if found else ""

    headers, values = [], []
    for cell in re.findall(r"<cell>(.*?)</cell>", prompt, re.DOTALL):
        value = re.split(r"<(?:col|row)_header>", cell)[0].strip()
        header = " / ".join(re.findall(r"<(?:col|row)_header>(.*?)</", cell)) or ""
        headers.append({"value": header.strip(), "is_header": True, "column_span": 1, "row_span": 1})
        values.append({"value": value, "is_header": False, "highlighted": True})
    table = [headers, values] if values else [[{"value": prompt, "is_header": False}]]
    return table, (tag("page_title", prompt), tag("section_title", prompt))


def _generic(sample: SampleInput) -> list[Block]:
    return [Block("input", "Input", clean(sample.prompt))]


VIEWS: dict[str, TaskView] = {
    "imdb": TaskView(
        "Continuation",
        "Which continuation of the review is better: positive in sentiment, fluent, and coherent with "
        "the beginning of the review?",
        _imdb,
    ),
    "commongen": TaskView(
        "Sentence",
        "Which sentence is better: a plausible everyday scene that uses the concepts, written fluently?",
        _commongen,
    ),
    "cnn_dailymail": TaskView(
        "Summary",
        "Which summary is better: it states the article's key points accurately, without invented "
        "facts, in fluent English?",
        _cnn_dailymail,
    ),
    "totto": TaskView(
        "Sentence",
        "Which sentence is better: it states the highlighted cells correctly (nothing false or missing) "
        "in fluent English?",
        _totto,
    ),
    "narrative_qa": TaskView(
        "Answer",
        "Which answer is better: correct given the question and the summary, and fluently written?",
        _narrative_qa,
    ),
    "iwslt2017_en_de": TaskView(
        "German translation",
        "Which German translation is better: it keeps the meaning of the English sentence and reads as "
        "fluent German?",
        _iwslt,
    ),
    "daily_dialog": TaskView(
        "Next response (by A)",
        "Which response is better: it follows on coherently from the conversation and is fluent?",
        _daily_dialog,
    ),
}
GENERIC = TaskView(
    "Output", "Which output is better: more appropriate for the input, correct and fluent?", _generic
)


def view(task: str) -> TaskView:
    """The task's view, or the generic one (the prompt as input)."""
    return VIEWS.get(task, GENERIC)


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
