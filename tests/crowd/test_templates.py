"""The MTurk templates: each renders with its example CSV (every placeholder filled, none left), asks
the axes GRUE uses, takes the columns the export writes, and escapes values as MTurk does."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from grue_bench import paths
from grue_bench.crowd import templates
from grue_bench.crowd.templates import PAIRWISE, PLACEHOLDER, available, load_template, read_rows, render
from grue_bench.crowd.views import SampleInput, likert_columns, pairwise_columns
from grue_bench.errors import GrueError

LIKERT_AXES = {
    "imdb": ["sentiment", "fluency"],
    "commongen": ["plausibility", "fluency"],
    "cnn_dailymail": ["quality", "fluency"],
    "totto": ["correctness", "fluency"],
    "daily_dialog": ["coherence", "fluency"],
    "narrative_qa": ["correctness", "fluency"],
    "iwslt2017_en_de": ["adequacy", "fluency"],
}


def test_a_template_per_grue_task_and_a_pairwise_one():
    assert available() == sorted([*LIKERT_AXES, PAIRWISE])


@pytest.mark.parametrize("task", sorted(LIKERT_AXES))
def test_likert_templates_ask_the_grue_axes_on_a_1_to_5_scale(task: str):
    template = load_template(task)
    assert [axis.name for axis in template.axes] == LIKERT_AXES[task]
    assert all(axis.values == ("1", "2", "3", "4", "5") for axis in template.axes)
    # Attention checks are bounded on fluency everywhere; sentiment says nothing about attention.
    checked = {axis.name for axis in template.axes if axis.check_max == 2}
    assert checked == ({"fluency"} if task == "imdb" else set(LIKERT_AXES[task]))


def test_the_pairwise_template_asks_a_b_or_tie():
    (axis,) = load_template(PAIRWISE).axes
    assert (axis.name, axis.values, axis.check_max) == ("preference", ("A", "tie", "B"), None)


def export_columns(name: str) -> list[str]:
    """The columns ``grue crowd export`` writes for this template."""
    sample = SampleInput("s", "a prompt", ["a reference"], {})
    task = "totto" if name == PAIRWISE else name
    if name == PAIRWISE:
        return ["batch_id", "item_id", *pairwise_columns(task, "ToTTo", sample, "a", "b")]
    return ["batch_id", "item_id", *likert_columns(task, sample, "an output")]


@pytest.mark.parametrize("name", available())
def test_each_template_renders_every_example_row_completely(name: str):
    template = load_template(name)
    rows = read_rows(templates.example_csv(name))
    assert len(rows) >= 3
    assert list(rows[0]) == export_columns(name)  # the example looks like an export
    assert set(template.placeholders) == set(export_columns(name))  # every column shown, none unknown
    for row in rows:
        page = render(template.text, row)
        assert not PLACEHOLDER.search(page) and "${" not in page
        assert all(value.strip() for value in row.values())
    assert "<form" in template.text and 'action="https://www.mturk.com/mturk/externalSubmit"' in template.text
    assert 'name="feedback"' in template.text and 'name="time_on_task_s"' in template.text
    assert 'name="assignmentId"' in template.text
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", template.text)  # nothing from the network


def test_templates_share_their_style_and_submit_script():
    """The blocks every template carries are kept identical, so a fix reaches all of them."""
    for block in ("grue-style", "grue-submit"):
        pattern = re.compile(rf'<(style|script) id="{block}">.*?</\1>', re.DOTALL)
        found = {pattern.search(load_template(name).text).group(0) for name in available()}
        assert len(found) == 1, block
    cells = re.compile(r'<script id="grue-cells">.*?</script>', re.DOTALL)
    assert cells.search(load_template("totto").text).group(0) == cells.search(
        load_template(PAIRWISE).text
    ).group(0)


def test_render_escapes_values_like_mturk():
    page = render('<p>${a}</p><input value="${b}">', {"a": "<script>x()</script> & co", "b": 'say "hi"'})
    assert page == '<p>&lt;script&gt;x()&lt;/script&gt; &amp; co</p><input value="say &quot;hi&quot;">'
    # One pass: a value that looks like a placeholder is not filled again.
    assert render("${a}${b}", {"a": "${b}", "b": "B"}) == "${b}B"


def test_render_names_a_missing_column():
    with pytest.raises(GrueError) as caught:
        render("${a} ${b} ${c}", {"a": "1"}, source="batch.csv, row 3")
    text = caught.value.render()
    assert "batch.csv, row 3" in text and "${b}, ${c}" in text and "fix:" in text


def test_an_unknown_template_lists_the_available_ones():
    with pytest.raises(GrueError) as caught:
        load_template("dates")
    assert "imdb" in caught.value.render() and "--pairwise" in caught.value.render()


def test_a_broken_axis_is_named(tmp_path: Path):
    text = '<fieldset data-axis="fluency"><input type="radio" name="fluenc" value="1"></fieldset>'
    with pytest.raises(GrueError, match="axis 'fluency' has 0 radio button"):
        templates.parse_axes(text, source="t.html")


def test_an_installed_wheel_finds_the_bundled_templates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """pyproject.toml puts crowdsourcing/ and tasks/ into the wheel as grue_bench/_bundled/."""
    package = tmp_path / "site" / "grue_bench"
    bundled = package / "_bundled"
    shutil.copytree(templates.templates_dir(), bundled / "crowdsourcing")
    shutil.copytree(paths.bundled_dir("tasks") / "imdb", bundled / "tasks" / "imdb")
    (bundled / "crowdsourcing" / "page.html").write_text("<!-- grue:form -->\n")
    (bundled / "tasks" / "imdb" / "crowd.html").write_text(
        '<!-- grue:form -->\n<fieldset data-axis="x"><input type="radio" name="x" value="1">'
        '<input type="radio" name="x" value="2"></fieldset>${only_here}'
    )
    monkeypatch.setattr(paths, "PACKAGE_DIR", package)
    assert templates.templates_dir() == bundled / "crowdsourcing"
    assert load_template("imdb").placeholders == ("only_here",)
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"crowdsourcing" = "grue_bench/_bundled/crowdsourcing"' in pyproject
    assert '"tasks" = "grue_bench/_bundled/tasks"' in pyproject
