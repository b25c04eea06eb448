"""``grue crowd preview``: render templates with example (or batch) rows to local HTML files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from grue_bench.crowd.templates import example_csv, load_template, read_rows, render
from grue_bench.errors import GrueError


def preview(
    names: Sequence[str], out: Path, *, csv_path: Path | None = None, limit: int | None = None
) -> list[Path]:
    """Write ``<out>/<template>-<row>.html`` for the rows of each template's example CSV (or of
    ``csv_path``), at most ``limit`` rows each; returns the files written."""
    written = []
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        template = load_template(name)
        source = csv_path or example_csv(name)
        rows = read_rows(source)[:limit]
        if not rows:
            raise GrueError("has no rows", source=str(source), fix="give a batch CSV with a header and rows")
        for number, row in enumerate(rows, start=1):
            page = out / f"{name}-{number}.html"
            page.write_text(render(template.text, row, source=f"{source}, row {number}"), encoding="utf-8")
            written.append(page)
    return written
