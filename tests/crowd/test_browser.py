"""The templates in a real browser (headless Chromium over the DevTools protocol): each example row
loads without console errors or network requests, shows its rating controls and submit button, and
the form posts to MTurk or its sandbox with the answers and the time on task."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from browser import Browser, requires_chromium

from grue_bench.crowd.preview import preview
from grue_bench.crowd.templates import PAIRWISE, available, example_csv, load_template, read_rows, render

pytestmark = requires_chromium

PAGES = [(name, number) for name in available() for number in range(1, len(read_rows(example_csv(name))) + 1)]


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every template rendered with every example row, as `grue crowd preview` writes them."""
    out = tmp_path_factory.mktemp("preview")
    written = preview(available(), out)
    assert len(written) == len(PAGES)
    return out


@pytest.mark.parametrize(("name", "number"), PAGES, ids=[f"{n}-{i}" for n, i in PAGES])
def test_an_example_page_loads_cleanly_with_its_controls(
    browser: Browser, pages: Path, name: str, number: int
):
    browser.open((pages / f"{name}-{number}.html").as_uri())
    assert browser.errors() == []
    assert all(url.startswith("file://") for url in browser.requested()), browser.requested()
    for axis in load_template(name).axes:
        radios = browser.js(
            f"Array.from(document.querySelectorAll('#mturk_form input[type=radio][name={axis.name}]'))"
            ".map(r => [r.value, r.required, r.getBoundingClientRect().width > 0])"
        )
        assert radios == [[value, True, True] for value in axis.values]
    assert browser.js(
        "(() => { const b = document.getElementById('submitButton');"
        " return [b.type, b.disabled, b.form.id, b.getBoundingClientRect().height > 0]; })()"
    ) == ["submit", False, "mturk_form", True]
    assert browser.js("document.querySelector('textarea[name=feedback]').required") is False
    assert browser.js("document.getElementById('mode-notice').textContent").startswith("Local preview")
    row = read_rows(example_csv(name))[number - 1]
    shown = browser.js("Array.from(document.querySelectorAll('.output')).map(e => e.textContent)")
    expected = [row["output_a"], row["output_b"]] if name == PAIRWISE else [row["output"]]
    assert [text.strip() for text in shown] == [text.strip() for text in expected]
    if name == PAIRWISE:
        blocks = json.loads(row["context_json"])
        headings = browser.js("Array.from(document.querySelectorAll('#context h2')).map(h => h.textContent)")
        assert headings == [block["label"] for block in blocks]
    if name == "totto" or (name == PAIRWISE and '"table"' in row["context_json"]):
        highlighted = json.dumps(json.loads(row.get("table_json") or row["context_json"])).count(
            '"highlighted": true'
        )
        assert (
            browser.js("document.querySelectorAll('table.cells td.hl, table.cells th.hl').length")
            == highlighted
        )
        assert highlighted > 0


@pytest.mark.parametrize(
    ("submit_to", "action"),
    [
        ("https://workersandbox.mturk.com", "https://workersandbox.mturk.com/mturk/externalSubmit"),
        ("https://www.mturk.com", "https://www.mturk.com/mturk/externalSubmit"),
        ("https://evil.example/", "https://www.mturk.com/mturk/externalSubmit"),
    ],
)
def test_the_form_submits_to_mturk_or_its_sandbox(browser: Browser, pages: Path, submit_to: str, action: str):
    query = f"?assignmentId=ASG1&hitId=HIT1&workerId=W1&turkSubmitTo={submit_to}"
    browser.open((pages / "totto-1.html").as_uri() + query)
    assert browser.errors() == []
    assert browser.js("document.getElementById('mturk_form').action") == action
    assert browser.js("document.getElementById('mturk_form').method") == "post"
    assert browser.js("document.getElementById('assignmentId').value") == "ASG1"
    assert browser.js("document.getElementById('submitButton').disabled") is False
    assert browser.js("document.getElementById('mode-notice').hidden") is True


def test_mturk_preview_disables_submit(browser: Browser, pages: Path):
    query = "?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=HIT1&turkSubmitTo=https://www.mturk.com"
    browser.open((pages / "imdb-1.html").as_uri() + query)
    assert browser.js("document.getElementById('submitButton').disabled") is True
    assert "accept the HIT" in browser.js("document.getElementById('mode-notice').textContent")


@pytest.mark.parametrize("name", ["commongen", PAIRWISE])
def test_answers_are_required_and_sent_with_the_time_on_task(browser: Browser, pages: Path, name: str):
    browser.open((pages / f"{name}-1.html").as_uri())
    browser.click("#submitButton")
    assert browser.js("document.getElementById('local-answers').hidden") is True  # nothing answered yet
    axes = load_template(name).axes
    for axis in axes:
        browser.click(f"input[name={axis.name}][value='{axis.values[1]}']")
    browser.js("document.getElementById('feedback').value = 'clear task'")
    time.sleep(0.3)
    browser.click("#submitButton")
    assert browser.js("document.getElementById('local-answers').hidden") is False
    sent = json.loads(browser.js("document.getElementById('local-answers').textContent"))
    assert {axis.name: sent[axis.name] for axis in axes} == {axis.name: axis.values[1] for axis in axes}
    assert sent["feedback"] == "clear task" and sent["assignmentId"] == ""
    assert float(sent["time_on_task_s"]) >= 0.2
    assert browser.errors() == []


def test_model_output_is_shown_as_text_never_run(browser: Browser, tmp_path: Path):
    template = load_template("imdb")
    row = {
        "batch_id": "b",
        "item_id": "i",
        "review_start": '"><img src=x onerror="window.__pwned=1">',
        "output": "<script>window.__pwned = 1</script> and ${output}",
    }
    page = tmp_path / "evil.html"
    page.write_text(render(template.text, row), encoding="utf-8")
    browser.open(page.as_uri())
    assert browser.js("typeof window.__pwned") == "undefined"
    assert browser.js("document.querySelector('.output').textContent") == row["output"]
    assert all(url.startswith("file://") for url in browser.requested())
