"""The report in a real browser: headless Chromium, driven over the Chrome DevTools Protocol, opens
the pages from disk and checks: no console errors, no network, tables with rows, sorting on a
header click, plots that load, and run strings that never run as script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import Browser, requires_chromium

pytestmark = requires_chromium


def column(browser: Browser, table: str, header: str, text: bool = False) -> list[str]:
    """One column's sort values (or its text), top to bottom."""
    value = "cell.textContent.trim()" if text else "cell.getAttribute('data-sort')"
    return browser.js(
        f"""(() => {{
            const table = document.getElementById({json.dumps(table)});
            const index = Array.from(table.tHead.rows[0].cells)
                .findIndex(th => th.textContent.trim().startsWith({json.dumps(header)}));
            return Array.from(table.tBodies[0].rows).map(row => {{
                const cell = row.cells[index];
                return {value};
            }});
        }})()"""
    )


def header_selector(browser: Browser, table: str, header: str) -> str:
    index = browser.js(
        f"Array.from(document.getElementById({json.dumps(table)}).tHead.rows[0].cells)"
        f".findIndex(th => th.textContent.trim().startsWith({json.dumps(header)}))"
    )
    assert index >= 0, header
    return f"#{table} thead th:nth-child({index + 1}) button"


@pytest.mark.parametrize(
    ("report", "page"),
    [
        ("three_seed_report", "index.html"),
        ("three_seed_report", "task-imdb.html"),
        ("three_seed_report", "task-commongen.html"),
        ("one_seed_report", "index.html"),
        ("one_seed_report", "task-imdb.html"),
    ],
)
def test_page_loads_from_disk_cleanly(
    browser: Browser, request: pytest.FixtureRequest, report: str, page: str
):
    folder: Path = request.getfixturevalue(report)
    browser.open((folder / page).as_uri())
    assert browser.errors() == []
    assert all(url.startswith("file://") for url in browser.requested()), browser.requested()
    # The stylesheet applied (the header bar is dark) and the script ran (headers got listeners).
    assert (
        browser.js("getComputedStyle(document.querySelector('header')).backgroundColor") == "rgb(29, 35, 48)"
    )
    tables = browser.js(
        "Array.from(document.querySelectorAll('table')).map(t => [t.id, t.tBodies[0].rows.length])"
    )
    assert tables and all(rows > 0 for _, rows in tables), tables
    images = browser.js(
        "Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])"
    )
    assert images, "no plots on the page"
    assert all(complete and width > 0 for _, complete, width in images), images


def test_clicking_a_header_sorts_the_rows(browser: Browser, three_seed_report: Path):
    browser.open((three_seed_report / "index.html").as_uri())
    before = column(browser, "leaderboard-tiny", "Algorithm", text=True)
    browser.click(header_selector(browser, "leaderboard-tiny", "Overall IQM"))
    ascending = [float(value) for value in column(browser, "leaderboard-tiny", "Overall IQM") if value]
    assert ascending == sorted(ascending)
    assert column(browser, "leaderboard-tiny", "Algorithm", text=True) != before  # it was best-first
    assert browser.js(
        "document.querySelector('#leaderboard-tiny th[aria-sort=ascending]').textContent"
    ).startswith("Overall IQM")
    browser.click(header_selector(browser, "leaderboard-tiny", "Overall IQM"))
    descending = [float(value) for value in column(browser, "leaderboard-tiny", "Overall IQM") if value]
    assert descending == sorted(ascending, reverse=True)
    assert column(browser, "leaderboard-tiny", "Algorithm", text=True) == before
    assert browser.errors() == []


def test_sorting_by_text_and_by_a_lower_is_better_metric(browser: Browser, three_seed_report: Path):
    browser.open((three_seed_report / "task-imdb.html").as_uri())
    names = column(browser, "naturalness-tiny", "Algorithm")
    browser.click(header_selector(browser, "naturalness-tiny", "Algorithm"))
    assert column(browser, "naturalness-tiny", "Algorithm") == sorted(names)
    browser.click(header_selector(browser, "naturalness-tiny", "Algorithm"))
    assert column(browser, "naturalness-tiny", "Algorithm") == sorted(names, reverse=True)
    browser.click(header_selector(browser, "naturalness-tiny", "Perplexity"))
    perplexity = [float(value) for value in column(browser, "naturalness-tiny", "Perplexity") if value]
    assert perplexity == sorted(perplexity)
    assert browser.errors() == []


@pytest.mark.parametrize("page", ["index.html", "task-imdb.html"])
def test_markup_from_runs_never_runs(browser: Browser, evil_report: Path, page: str):
    browser.open((evil_report / page).as_uri())
    assert browser.errors() == []
    assert browser.js("typeof window.__pwned") == "undefined"
    assert browser.js("document.querySelectorAll('script').length") == 1
    assert browser.js("document.querySelectorAll('a[href^=\"javascript:\" i]').length") == 0
    assert all(url.startswith("file://") for url in browser.requested()), browser.requested()
    text = browser.js("document.body.innerText")
    assert "<script>window.__pwned = 1</script>" in text  # shown to the reader as text


def test_each_profile_has_its_section_with_floor_rows_and_collapse_marks(
    browser: Browser, profiles_report: Path
):
    browser.open((profiles_report / "index.html").as_uri())
    headings = browser.js(
        "Array.from(document.querySelectorAll('section h2')).map(h => h.textContent.trim())"
    )
    assert headings[:2] == ["Profile: small", "Profile: tiny"]
    smoke = browser.js(
        "Array.from(document.querySelectorAll('section')).filter(s => s.querySelector('h2') "
        "&& s.innerText.includes('A smoke profile')).map(s => s.querySelector('h2').textContent.trim())"
    )
    assert smoke == ["Profile: tiny"]  # labelled: its numbers are no evidence
    for profile in ("small", "tiny"):
        names = column(browser, f"leaderboard-{profile}", "Algorithm", text=True)
        assert names[-3:] == ["floor:copy", "floor:empty", "ceiling:human"], names
    small = column(browser, "leaderboard-small", "Algorithm", text=True)
    assert small[:2] == ["nlpo", "ppo"]  # algorithms of small only: tiny's are not in its ranking
    flags = browser.js(
        "Array.from(document.querySelectorAll('#leaderboard-small .flag'))"
        ".map(f => [f.textContent.trim(), f.closest('td').title])"
    )
    reasons = "seed 1: 100% empty outputs, 0.25 distinct outputs per input, length 0.00× the references'"
    assert flags == [["collapsed", f"collapsed, not ranked: {reasons}"]]
    assert browser.js("document.querySelectorAll('#leaderboard-tiny .flag').length") == 0
    ranks = column(browser, "leaderboard-small", "Mean rank", text=True)
    assert ranks[small.index("ppo")].startswith("—")  # flagged: not ranked
    assert browser.errors() == []
