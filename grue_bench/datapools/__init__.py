"""Data pools: a task's shipped subset, the full hub dataset, or a local file; and task corpora.

``TaskPool.prepare(split, task=..., source=...)`` returns samples whose prompts are formatted
as the task defines (prefix, suffix, optional formatter hook). The RL4LMs datapool ids are
registered as thin aliases (see ``plugins.DATAPOOLS``) so RL4LMs configs run unchanged.
``task_corpus`` gives the texts a tiny base LM pretrains on for a task.
"""

from __future__ import annotations

import csv
import itertools
import logging
import random
import re
import string
from pathlib import Path
from typing import Annotated, Any

from pydantic import NonNegativeInt, PositiveInt

from grue_bench import plugins
from grue_bench.data import Sample, TextGenPool, read_jsonl
from grue_bench.errors import GrueError, MissingAssetError, Problem
from grue_bench.plugins.components import TaskId
from grue_bench.schema import ArgProblems, text_check
from grue_bench.tasks import SPLITS, TaskSpec

log = logging.getLogger(__name__)


DataSource = Annotated[
    str,
    text_check(
        lambda value: value in ("shipped", "hub") or Path(value).expanduser().exists(),
        lambda value: f"{value!r} is neither 'shipped', 'hub' nor an existing file or folder",
        fix="use shipped (the subset that ships), hub (the full dataset) or the path of a JSONL/CSV file "
        "or of a folder holding <split>.jsonl",
    ),
]
"""Where a task's samples come from: ``shipped``, ``hub`` or a local file or folder."""


def template_fields(template: str) -> list[str] | None:
    """The field names of a ``str.format`` template, or None when it is not one of plain names
    (``{summary}``; no positional ``{}``, attribute, index or conversion)."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError:
        return None
    fields = [name for _, name, spec, conversion in parts if name is not None]
    plain = all(name.isidentifier() for name in fields)
    bare = all(not spec and conversion is None for _, name, spec, conversion in parts if name is not None)
    return fields if fields and plain and bare else None


PromptTemplate = Annotated[
    str,
    text_check(
        lambda value: template_fields(value) is not None,
        lambda value: f"{value!r} is not a template of named fields",
        fix="name each row field in braces, e.g. 'Story: {summary} Question: {question}' (a brace of "
        "the text itself is written twice: '{{')",
    ),
]
"""A prompt layout over a row's fields (its ``prompt`` and the keys of its ``meta``)."""


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise GrueError(f"unknown split '{split}'", key="split", fix=f"use one of {', '.join(SPLITS)}")


def _read_local(path: Path, split: str) -> list[dict[str, Any]]:
    """Rows from a local JSONL/CSV file, or from ``<dir>/<split>.jsonl``."""
    if path.is_dir():
        path = path / f"{split}.jsonl"
    if path.suffix == ".csv":
        if not path.is_file():
            raise GrueError("file not found", source=str(path), fix="check the path")
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
        for row in rows:
            row["references"] = [row.pop("reference")] if "reference" in row else []
        return rows
    return read_jsonl(path)


def sample_subset(samples: list[Sample], max_samples: int | None, seed: int) -> list[Sample]:
    """``max_samples`` of ``samples`` drawn with ``seed`` (all of them when None or more)."""
    if max_samples is not None and max_samples < len(samples):
        return random.Random(seed).sample(samples, max_samples)
    return samples


def hub_split(path: str, name: str | None, split: str, key: str, fix: str) -> Any:
    """Split ``split`` of hub dataset ``path`` (config ``name``); MissingAssetError offline."""
    import datasets

    try:
        return datasets.load_dataset(path, name, split=split)
    except Exception as exc:  # the hub raises many types (ConnectionError, OfflineModeIsEnabled...)
        raise MissingAssetError(
            f"could not load dataset '{path}' ({name or 'default'}) from the hub: {exc}", key=key, fix=fix
        ) from exc


def _read_hub(task: TaskSpec, split: str) -> list[dict[str, Any]]:
    """Rows of the full dataset from the Hugging Face hub, converted by the task's hook."""
    hub = task.data.hub if task.data else None
    if hub is None:
        raise GrueError(
            f"task '{task.id}' has no hub source",
            key="datapool.args.source",
            fix="use source: shipped or a local file path",
        )
    dataset = hub_split(
        hub.path,
        hub.name,
        hub.splits.get(split, split),
        key="datapool.args.source",
        fix="without network use source: shipped (the real subset shipped with GRUE Bench) "
        "or source: /path/to/your.jsonl",
    )
    convert = task.resolve(hub.converter) if hub.converter else dict
    rows: list[dict[str, Any]] = []
    for index, row in enumerate(dataset):
        converted = convert(row, index)  # one row, or several (a dialogue gives one per turn)
        rows.extend(converted if isinstance(converted, list) else [converted])
    return rows


def first_words(text: str, limit: int | None) -> str:
    """``text`` up to the end of its ``limit``-th word (whitespace-separated; all of it when None),
    its own spacing and line breaks kept."""
    if limit is None:
        return text
    words = list(itertools.islice(re.finditer(r"\S+", text), limit))
    return text[: words[-1].end()] if len(words) == limit else text


def _input_text(
    task: TaskSpec, row: dict[str, Any], template: str | None, max_input_words: int | None, where: str
) -> str:
    """The row's input: the task's prompt text cut to ``max_input_words``, or ``template`` filled
    with the row's fields, each cut to ``max_input_words``."""
    if template is None:
        text = task.resolve(task.prompt.formatter)(row) if task.prompt.formatter else row["prompt"]
        return first_words(text, max_input_words)
    fields = {"prompt": row.get("prompt"), **(row.get("meta") or {})}
    known = {name: value for name, value in fields.items() if isinstance(value, str)}
    names = template_fields(template) or []
    missing = [name for name in names if name not in known]
    if missing:
        raise GrueError(
            f"{where} has no text field {', '.join(map(repr, missing))} for prompt_template "
            f"(its fields: {', '.join(sorted(known)) or 'none'})",
            key="datapool.args.prompt_template",
            fix="name the row's 'prompt' or keys of its 'meta' in the template, or leave prompt_template "
            "unset for the task's prompt",
        )
    return template.format_map({name: first_words(known[name], max_input_words) for name in names})


def _format_prompt(
    task: TaskSpec,
    row: dict[str, Any],
    prefix: str | None,
    suffix: str | None,
    max_input_words: int | None,
    template: str | None,
    where: str,
) -> str:
    """The row's input (``_input_text``) between the prefix and suffix given, else the task's."""
    text = _input_text(task, row, template, max_input_words, where)
    before = task.prompt.prefix if prefix is None else prefix
    return f"{before}{text}{task.prompt.suffix if suffix is None else suffix}"


class TaskPool(TextGenPool):
    """The samples of a task's split, prompts formatted by the task."""

    @classmethod
    def prepare(
        cls,
        split: str,
        task: TaskId,
        source: DataSource = "shipped",
        prompt_prefix: str | None = None,
        max_samples: PositiveInt | None = None,
        seed: NonNegativeInt = 0,
        prompt_suffix: str | None = None,
        max_input_words: PositiveInt | None = None,
        prompt_template: PromptTemplate | None = None,
    ) -> TaskPool:
        """``source``: 'shipped' (offline subset), 'hub' (full dataset) or a local file/folder;
        ``prompt_prefix`` and ``prompt_suffix`` replace the task's (a profile's own prompt format,
        e.g. an instruction for a causal LM; RL4LMs's pools take a prefix only).
        ``max_input_words`` cuts each input (an article, a story) after that many words before the
        prefix and suffix go around it, so that a prompt cut to the model's length keeps its
        instruction: ``max_prompt_length`` cuts the whole prompt on one side.
        ``prompt_template`` lays the input out anew from the row's fields, its ``prompt`` and the keys
        of its ``meta`` (NarrativeQA's ``"Story: {summary}\\nQuestion: {question}"`` puts the question
        last); ``max_input_words`` then cuts each field."""

        check_split(split)
        spec = plugins.TASKS.get(task)
        if source == "shipped":
            rows = read_jsonl(spec.data_path(split))
        elif source == "hub":
            rows = _read_hub(spec, split)
        else:
            rows = _read_local(Path(source), split)
        samples = []
        for number, row in enumerate(rows, start=1):
            if "prompt" not in row and not spec.prompt.formatter:
                raise GrueError(
                    f"row {number} has no 'prompt'",
                    source=source,
                    key="prompt",
                    fix="give every row id, prompt and references",
                )
            samples.append(
                Sample(
                    id=str(row.get("id", f"{task}-{split}-{number}")),
                    prompt_or_input_text=_format_prompt(
                        spec,
                        row,
                        prompt_prefix,
                        prompt_suffix,
                        max_input_words,
                        prompt_template,
                        f"{split} row {number} of task '{task}' ({source})",
                    ),
                    references=list(row.get("references") or []),
                    meta_data={
                        **(row.get("meta") or {}),
                        **({"label": row["label"]} if "label" in row else {}),
                    },
                )
            )
        samples = sample_subset(samples, max_samples, seed)
        log.debug("task %s split %s: %d samples from %s", task, split, len(samples), source)
        return cls(samples)

    @staticmethod
    def check_args(args: Any) -> None:
        """The task must have the data ``source`` names."""
        spec = plugins.TASKS.get(args.task)
        if spec.data is None and args.source in ("shipped", "hub"):
            raise ArgProblems(
                Problem(
                    f"task '{args.task}' has no data files: its samples come from its own datapool",
                    key="task",
                    fix=f"leave datapool out and set task: {args.task}, or give source a local file",
                )
            )
        if args.source == "hub" and spec.data is not None and spec.data.hub is None:
            raise ArgProblems(
                Problem(
                    f"task '{args.task}' has no hub source",
                    key="source",
                    fix="use source: shipped or a local file",
                )
            )


class SyntheticPool(TextGenPool):
    """RL4LMs's ``dummy_pool``: the same prompt repeated, no references (synthetic rewards)."""

    @classmethod
    def prepare(cls, split: str, n_samples: PositiveInt = 100, prompt: str = "") -> SyntheticPool:
        check_split(split)
        return cls(
            [Sample(id=f"{split}-{i}", prompt_or_input_text=prompt, references=[]) for i in range(n_samples)]
        )


def task_corpus(task_id: str) -> list[str]:
    """LM pretraining texts for a task: its ``corpus`` hook's, or its train prompts and references."""

    spec = plugins.TASKS.get(task_id)
    if spec.corpus is not None:
        return list(spec.resolve(spec.corpus)())
    if spec.data is None:
        raise GrueError(
            f"task '{task_id}' has neither data files nor a corpus to pretrain a tiny LM on",
            source=str(spec.directory / "task.yaml"),
            key="corpus",
            fix="give the task a corpus hook (corpus: 'hooks:corpus', returning texts), or profile small",
        )
    pool = TaskPool.prepare("train", task=task_id)
    prompts = [sample.prompt_or_input_text for sample in pool]
    references = [reference for sample in pool for reference in sample.references]
    return [text for text in (*prompts, *references) if text.strip()]
