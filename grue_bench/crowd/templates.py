"""MTurk HTML templates: find them, read their ``${column}`` placeholders and rating axes, fill them.

A template is a form wrapped in the page every form shares (``crowdsourcing/page.html``: style,
submit script). A task's Likert form is ``tasks/<id>/crowd.html`` (example rows ``crowd.csv``); the
pairwise form is ``crowdsourcing/pairwise.html`` (``pairwise.csv``). A form is a list of sections,
each opened by a line ``<!-- grue:NAME -->``; the page has a ``<!-- grue:NAME -->`` slot for each.

A template declares its rating axes in its markup: each axis is a ``<fieldset data-axis="NAME">``
holding radio buttons ``name="NAME"``, whose values are the allowed answers (a form may write a
1-5 scale as ``<div class="scale" data-likert="label 1|...|label 5"></div>``, expanded into its
buttons); ``data-check-max="2"`` marks an axis on which an attention check's distractor must be
rated at most 2. Filling a template replaces each ``${column}`` with the row's value, HTML-escaped,
as MTurk does with batch values.
"""

from __future__ import annotations

import csv
import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from grue_bench.errors import GrueError
from grue_bench.paths import bundled_dir
from grue_bench.tasks import discover_tasks

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
PAIRWISE = "pairwise"
"""The name of the A/B template, usable for any task."""
FORM_FILE = "crowd.html"
"""A task's Likert form, in its task folder."""
SECTION_LINE = re.compile(r"^<!-- grue:([a-z]+) -->\n", re.MULTILINE)
SLOT = re.compile(r"<!-- grue:([a-z]+) -->")
OPTIONAL_SECTIONS = frozenset({"script"})
"""Sections a form may leave out (a form without a script of its own)."""
LIKERT_SCALE = re.compile(
    r'(<fieldset class="axis" data-axis="(?P<axis>[^"]+)"[^>]*>\n(?:.*\n)*?)'
    r'(?P<indent> *)<div class="scale" data-likert="(?P<labels>[^"]*)"></div>\n'
)


@dataclass(frozen=True)
class Axis:
    """A rating question: its answer field, allowed answers and attention-check bound."""

    name: str
    values: tuple[str, ...]
    check_max: int | None = None
    """An attention check's distractor passes when rated at most this (None: not checked)."""

    def to_json(self) -> dict[str, Any]:
        """The form stored with a batch."""
        return {"name": self.name, "values": list(self.values), "check_max": self.check_max}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Axis:
        """Inverse of ``to_json``."""
        return cls(data["name"], tuple(data["values"]), data.get("check_max"))

    def low_answers(self) -> list[str]:
        """The answers an attentive worker gives a distractor on this axis."""
        if self.check_max is None:
            return []
        return [value for value in self.values if value.isdigit() and int(value) <= self.check_max]


@dataclass(frozen=True)
class Template:
    """One template file with what it asks for."""

    name: str
    path: Path
    text: str
    placeholders: tuple[str, ...]
    axes: tuple[Axis, ...]


def templates_dir() -> Path:
    """The folder of the shared page and the pairwise form (inside the wheel when installed)."""
    return bundled_dir("crowdsourcing")


def task_forms() -> dict[str, Path]:
    """The Likert form of each task folder that has one, by task id."""
    found = {task: task_yaml.parent / FORM_FILE for task, task_yaml in discover_tasks().items()}
    return {task: path for task, path in found.items() if path.is_file()}


def available() -> list[str]:
    """Names of the templates: the tasks with a Likert form, and the pairwise one."""
    return sorted([*task_forms(), PAIRWISE])


def form_path(name: str) -> Path:
    """The form of template ``name``; an unknown name is an error listing the available ones."""
    path = templates_dir() / f"{PAIRWISE}.html" if name == PAIRWISE else task_forms().get(name)
    if path is None or not path.is_file():
        raise GrueError(
            f"no crowdsourcing template '{name}'",
            source=str(path or templates_dir()),
            key="--task",
            fix=f"choose one of: {', '.join(available())}; for any other task use --pairwise",
        )
    return path


def load_template(name: str) -> Template:
    """Template ``name``: its form wrapped in the shared page."""
    path = form_path(name)
    text = wrap(path.read_text(encoding="utf-8"), source=str(path))
    return Template(name, path, text, placeholders(text), parse_axes(text, source=str(path)))


def wrap(form: str, *, source: str) -> str:
    """The shared page with each ``<!-- grue:NAME -->`` slot filled with the form's section NAME."""
    page_path = templates_dir() / "page.html"
    page = page_path.read_text(encoding="utf-8")
    slots = set(SLOT.findall(page))
    sections = _sections(form, source=source)
    unknown = sorted(set(sections) - slots)
    if unknown:
        raise GrueError(
            f"unknown section(s) {', '.join(unknown)}",
            source=source,
            fix=f"use the slots of {page_path}: {', '.join(sorted(slots))}",
        )
    missing = sorted(slots - set(sections) - OPTIONAL_SECTIONS)
    if missing:
        raise GrueError(
            f"missing section(s) {', '.join(missing)}",
            source=source,
            fix="add a <!-- grue:NAME --> line for each",
        )
    whole_lines = SECTION_LINE.sub(lambda match: sections.get(match.group(1), ""), page)
    return expand_scales(SLOT.sub(lambda match: sections[match.group(1)].strip(), whole_lines))


def expand_scales(text: str) -> str:
    """Each ``data-likert`` scale of an axis as radio buttons valued 1, 2, ... with their labels."""

    def buttons(match: re.Match[str]) -> str:
        indent, axis = match.group("indent"), match.group("axis")
        labels = [
            f'{indent}  <label><input type="radio" name="{axis}" value="{value}" required>{value}'
            f"<span>{label}</span></label>\n"
            for value, label in enumerate(match.group("labels").split("|"), start=1)
        ]
        return f'{match.group(1)}{indent}<div class="scale">\n{"".join(labels)}{indent}</div>\n'

    return LIKERT_SCALE.sub(buttons, text)


def _sections(form: str, *, source: str) -> dict[str, str]:
    """A form's sections by name, each the text between its ``<!-- grue:NAME -->`` line and the next."""
    before, *parts = SECTION_LINE.split(form)
    if before.strip():
        raise GrueError(
            "text before the first section",
            source=source,
            fix="open the form with a line <!-- grue:title -->",
        )
    names, texts = parts[0::2], parts[1::2]
    if len(set(names)) != len(names):
        raise GrueError(f"a section is given twice: {', '.join(names)}", source=source, fix="keep one")
    return dict(zip(names, texts, strict=True))


def placeholders(text: str) -> tuple[str, ...]:
    """The ``${column}`` names of a template, in order of first use."""
    return tuple(dict.fromkeys(PLACEHOLDER.findall(text)))


def render(text: str, row: Mapping[str, Any], *, source: str | None = None) -> str:
    """Fill every ``${column}`` with the row's HTML-escaped value; a missing column is an error."""
    missing = [name for name in placeholders(text) if name not in row]
    if missing:
        raise GrueError(
            f"the template uses {', '.join('${' + name + '}' for name in missing)} but the row has no "
            "such column",
            source=source,
            fix="add the column(s) to the batch CSV (see crowdsourcing/README.md)",
        )
    return PLACEHOLDER.sub(lambda match: html.escape(str(row[match.group(1)]), quote=True), text)


def example_csv(name: str) -> Path:
    """The example input CSV shipped next to template ``name``'s form."""
    path = form_path(name)
    return path.with_suffix(".csv")


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a batch CSV (UTF-8, a byte order mark allowed)."""
    if not path.is_file():
        raise GrueError("file not found", source=str(path), fix="check the path")
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def write_rows(path: Path, columns: Sequence[str], rows: Sequence[Mapping[str, str]]) -> None:
    """Write a batch CSV that MTurk accepts (UTF-8, a header row, every field quoted as needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns))
        writer.writeheader()
        writer.writerows(rows)


class _AxisParser(HTMLParser):
    """Collects ``fieldset[data-axis]`` attributes and radio buttons (name, value)."""

    def __init__(self) -> None:
        super().__init__()
        self.fieldsets: list[dict[str, str | None]] = []
        self.radios: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "fieldset" and found.get("data-axis"):
            self.fieldsets.append(found)
        elif tag == "input" and (found.get("type") or "").lower() == "radio":
            self.radios.append((found.get("name") or "", found.get("value") or ""))


def parse_axes(text: str, *, source: str | None = None) -> tuple[Axis, ...]:
    """The rating axes a template declares, in page order."""
    parser = _AxisParser()
    parser.feed(text)
    parser.close()
    axes = []
    for fieldset in parser.fieldsets:
        name = str(fieldset["data-axis"])
        values = tuple(dict.fromkeys(value for radio, value in parser.radios if radio == name))
        if len(values) < 2:
            raise GrueError(
                f"axis '{name}' has {len(values)} radio button(s) named '{name}'",
                source=source,
                key=f"fieldset[data-axis={name}]",
                fix="give each axis its answers as <input type=radio name=AXIS value=...> buttons",
            )
        bound = fieldset.get("data-check-max")
        if bound is not None and not bound.isdigit():
            raise GrueError(
                f"data-check-max is {bound!r}", source=source, key=name, fix="give a whole number"
            )
        axes.append(Axis(name, values, None if bound is None else int(bound)))
    return tuple(axes)
