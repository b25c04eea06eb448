"""The submission format: ``submission.yaml`` as a strict typed schema, the folder layout and the limits.

A submission is a folder ``baselines/<name>/`` holding ``submission.yaml`` and one JSONL file of
test-split generations (``{"id": ..., "text": ...}`` per line) per task and seed, by default
``<task>/seed<k>.jsonl``. ``baselines/README.md`` documents every key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, NonNegativeInt, PositiveInt

from grue_bench.schema import Strict

FORMAT_VERSION = 1
METADATA_FILE = "submission.yaml"
OPTIONAL_FILES = frozenset({"README.md"})
"""Files a submission folder may hold besides its metadata and its generations."""
GENERATIONS_SUFFIX = ".jsonl"
MIN_SEEDS = 3
MAX_SEEDS = 20
MAX_TASKS = 20

# Size limits: checked on the file sizes before anything is read, and again while reading.
MAX_METADATA_BYTES = 1_000_000
"""submission.yaml: 1 MB."""
MAX_FILE_BYTES = 20_000_000
"""One generations file: 20 MB."""
MAX_TOTAL_BYTES = 200_000_000
"""The whole folder: 200 MB."""
MAX_ENTRIES = 1_000
"""Files and folders in a submission folder."""
MAX_TEXT_CHARS = 20_000
"""One generated text."""
MAX_CONFIG_DEPTH = 20

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,62}$"
LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._+()-]{0,63}$"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
"""Control, zero-width and bidirectional-override characters: never in a name or label."""
_CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
"""The same for free text, where tabs and line breaks are fine."""


def plain_line(value: str) -> str:
    """A one-line plain string: no control characters and no markup brackets."""
    if _CONTROL.search(value):
        raise ValueError("must not contain control, zero-width or bidirectional-override characters")
    if "<" in value or ">" in value:
        raise ValueError("must be plain text, without '<' or '>'")
    if value != value.strip():
        raise ValueError("must not start or end with spaces")
    return value


def plain_text(value: str) -> str:
    """Free text: no control characters other than tabs and line breaks."""
    if _CONTROL_IN_TEXT.search(value):
        raise ValueError("must not contain control or bidirectional-override characters")
    return value


def web_link(value: str) -> str:
    """An http(s) address without spaces."""
    if not re.match(r"^https?://[^\s/?#]+\.[^\s/?#]+(?:[/?#]\S*)?$", value):
        raise ValueError("must be an http:// or https:// address")
    return plain_line(value)


def contact_address(value: str) -> str:
    """An e-mail address or an http(s) address."""
    if re.match(r"^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$", value):
        return plain_line(value)
    return web_link(value)


Line = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(plain_line)]
Link = Annotated[str, Field(max_length=500), AfterValidator(web_link)]
Contact = Annotated[str, Field(max_length=200), AfterValidator(contact_address)]
Text = Annotated[str, Field(max_length=10_000), AfterValidator(plain_text)]


class StrictModel(Strict):
    """Strict: unknown keys are errors and no value is coerced from another type."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Author(StrictModel):
    """One author of the submission."""

    name: Line
    affiliation: Line | None = None
    contact: Contact | None = None


class TaskEntry(StrictModel):
    """What was submitted for one task."""

    task_version: PositiveInt
    """The task's version (``grue ls tasks``); a submission for another version is refused."""
    seeds: list[NonNegativeInt] = Field(max_length=MAX_SEEDS)
    """The training seeds; at least 3, each with its own generations file."""
    model: Line | None = None
    """The model for this task, when it differs from the submission's ``model``."""
    files: dict[NonNegativeInt, Annotated[str, Field(min_length=1, max_length=300)]] | None = None
    """Seed -> generations file relative to the folder (default ``<task>/seed<k>.jsonl``)."""
    scores: dict[NonNegativeInt, dict[Annotated[str, Field(max_length=200)], float]] | None = None
    """Seed -> metric key -> the number the submitters computed; checked, never trusted."""
    config: dict[str, Any] | None = None
    """The training config for this task (replaces the submission's ``config``)."""


class Submission(StrictModel):
    """The contents of ``submission.yaml``."""

    format: Literal[1]
    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    """Lower-case letters, digits, '.', '_', '-'; the submission folder's name."""
    algorithm: Annotated[str, Field(pattern=LABEL_PATTERN), AfterValidator(plain_line)]
    """The label on the leaderboard's algorithm column."""
    authors: list[Author] = Field(min_length=1, max_length=50)
    contact: Contact
    link: Link
    """Code or paper, http(s)."""
    model: Line
    profile: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")] = "other"
    """tiny, small, paper, or another word for an own setting."""
    description: Text
    config: dict[str, Any] | None = None
    """The training config shared by every task (a task's own ``config`` replaces it)."""
    tasks: dict[Annotated[str, Field(max_length=100)], TaskEntry] = Field(min_length=1, max_length=MAX_TASKS)

    def task_config(self, task: str) -> dict[str, Any]:
        """The training config recorded with this task's runs."""
        entry = self.tasks[task]
        return dict(entry.config if entry.config is not None else self.config or {})

    def task_model(self, task: str) -> str:
        """The model recorded with this task's runs."""
        return self.tasks[task].model or self.model

    def card(self) -> dict[str, Any]:
        """What the leaderboard shows with each submitted run (name, link, authors, contact)."""
        return {
            "name": self.name,
            "algorithm": self.algorithm,
            "link": self.link,
            "contact": self.contact,
            "authors": [author.model_dump(exclude_none=True) for author in self.authors],
        }


def default_file(task: str, seed: int) -> str:
    """Where a seed's generations live when ``files`` does not say: ``<task>/seed<k>.jsonl``."""
    return f"{task}/seed{seed}{GENERATIONS_SUFFIX}"


def generation_files(tasks: Mapping[str, TaskEntry]) -> dict[tuple[str, int], str]:
    """(task, seed) -> the declared relative path of its generations file."""
    out = {}
    for task, entry in tasks.items():
        for seed in entry.seeds:
            out[(task, seed)] = (entry.files or {}).get(seed, default_file(task, seed))
    return out
