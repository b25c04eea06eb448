"""Table data for the HTML pages: plain values and text, built before any rendering.

Cells hold raw strings; the templates escape them (jinja2 autoescape), so a string from a run or a
submission can never become markup. Links are kept only when relative or http(s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from urllib.parse import urlsplit

MISSING = "—"


@dataclass
class Cell:
    """One table cell: its text, the value it sorts by, and optional extras."""

    text: str = ""
    sort: float | str | None = None
    """Sort key (``data-sort``); None sorts last in both directions."""
    note: str = ""
    """A small second line, e.g. the interval."""
    href: str = ""
    badge: str = ""
    badge_href: str = ""
    title: str = ""
    pre: bool = False
    """Keep line breaks and spacing (generated text)."""
    details: str = ""
    """Long text folded under a 'show' toggle (configs)."""
    flag: str = ""
    """A warning mark shown after the text (``collapsed``); ``title`` says why."""


@dataclass
class Column:
    """A table header."""

    label: str
    title: str = ""
    numeric: bool = False


@dataclass
class Table:
    """A table ready to render, with notes and links to its CSV/JSON exports."""

    id: str
    caption: str
    columns: list[Column]
    rows: list[list[Cell]]
    sortable: bool = True
    notes: list[str] = field(default_factory=list)
    exports: list[tuple[str, str]] = field(default_factory=list)


def fmt(value: float | None, decimals: int = 3) -> str:
    """A number with fixed decimals; a missing one as a dash."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    return f"{value:.{decimals}f}"


def sort_key(value: float | None) -> float | None:
    """A finite number, else None (sorted last)."""
    if value is None or not math.isfinite(float(value)):
        return None
    return float(value)


def interval_note(low: float, high: float, n_seeds: int, decimals: int) -> str:
    """'95% CI [low, high], n=3', or says that the interval is not available."""
    if not (math.isfinite(low) and math.isfinite(high)):
        seeds = "1 seed" if n_seeds == 1 else f"{n_seeds} seeds"
        return f"interval not available ({seeds})"
    return f"95% CI [{fmt(low, decimals)}, {fmt(high, decimals)}], n={n_seeds}"


def safe_link(url: object) -> str:
    """``url`` when it is an http(s) address, else '' (never a javascript: or data: link)."""
    if not isinstance(url, str):
        return ""
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return ""
    return url.strip() if scheme in ("http", "https") else ""
