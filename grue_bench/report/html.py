"""Render leaderboard pages to static HTML with jinja2 (autoescape on), plus their CSS and JS.

The pages work opened from disk: no CDN, no inline script, every asset is a relative file.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from grue_bench.report.pages import Page

TEMPLATES = Path(__file__).resolve().parent / "templates"
ASSETS = ("style.css", "sortable.js")


def environment() -> Environment:
    """The jinja2 environment: every value escaped unless a template says otherwise (none does)."""
    return Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_pages(
    pages: Sequence[Page], out_dir: Path, *, template_for: dict[str, str], nav: Sequence[tuple[str, str]]
) -> list[Path]:
    """Write each page (``template_for`` maps a filename to its template) and copy the assets."""
    out_dir.mkdir(parents=True, exist_ok=True)
    env = environment()
    written = []
    for page in pages:
        template = env.get_template(template_for.get(page.filename, "task.html.j2"))
        path = out_dir / page.filename
        path.write_text(template.render(page=page, nav=nav), encoding="utf-8")
        written.append(path)
    for name in ASSETS:
        shutil.copyfile(TEMPLATES / name, out_dir / name)
    return written
