"""MTurk HTML templates: find them, read their ``${column}`` placeholders and rating axes, fill them.

A template declares its rating axes in its markup: each axis is a ``<fieldset data-axis="NAME">``
holding radio buttons ``name="NAME"``, whose values are the allowed answers; ``data-check-max="2"``
marks an axis on which an attention check's distractor must be rated at most 2. Filling a template
replaces each ``${column}`` with the row's value, HTML-escaped, as MTurk does with batch values.
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

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
PAIRWISE = "pairwise"
"""The name of the A/B template, usable for any task."""


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
    """The folder of templates and example CSVs (inside the wheel when installed)."""
    return bundled_dir("crowdsourcing")


def available() -> list[str]:
    """Names of the templates shipped (file stems)."""
    return sorted(path.stem for path in templates_dir().glob("*.html"))


def load_template(name: str) -> Template:
    """The template ``<name>.html``; an unknown name is an error listing the available ones."""
    path = templates_dir() / f"{name}.html"
    if not path.is_file():
        raise GrueError(
            f"no crowdsourcing template '{name}'",
            source=str(templates_dir()),
            key="--task",
            fix=f"choose one of: {', '.join(available())}; for any other task use --pairwise",
        )
    text = path.read_text(encoding="utf-8")
    return Template(name, path, text, placeholders(text), parse_axes(text, source=str(path)))


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
    """The example input CSV shipped next to template ``name``."""
    return templates_dir() / f"{name}.csv"


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
