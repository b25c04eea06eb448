"""The report in a real browser: headless Chromium, driven over the Chrome DevTools Protocol, opens
the pages from disk and checks: no console errors, no network, tables with rows, sorting on a
header click, plots that load, and run strings that never run as script."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (make system-deps installs it)",
)


class Browser:
    """One headless Chromium with one page, spoken to over the DevTools websocket."""

    def __init__(self) -> None:
        import websocket  # websocket-client, from the test extra

        self.profile = Path(tempfile.mkdtemp(prefix="grue-chromium-"))
        self.process = subprocess.Popen(
            [
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--no-default-browser-check",
                "--window-size=1400,1000",
                f"--user-data-dir={self.profile}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port = self._port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
            targets = json.load(response)
        page = next(target for target in targets if target["type"] == "page")
        self.socket = websocket.create_connection(
            page["webSocketDebuggerUrl"], timeout=30, suppress_origin=True
        )
        self.events: list[dict[str, Any]] = []
        self._id = 0
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def _port(self) -> int:
        """The port Chromium chose, from the DevToolsActivePort file it writes."""
        active = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if active.is_file() and active.read_text().strip():
                return int(active.read_text().split()[0])
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.process.returncode}")
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port within 30 s")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command and return its result; events that arrive meanwhile are kept."""
        self._id += 1
        self.socket.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, event: str, timeout: float = 30) -> None:
        """Block until an event named ``event`` has arrived."""
        deadline = time.monotonic() + timeout
        while not any(message.get("method") == event for message in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {event} within {timeout} s")
            self.events.append(json.loads(self.socket.recv()))

    def open(self, path: Path) -> None:
        """Load a file and wait for its load event (deferred scripts have run by then)."""
        self.events.clear()
        self.call("Page.navigate", url=path.as_uri())
        self.wait_for("Page.loadEventFired")

    def js(self, expression: str) -> Any:
        """Evaluate JavaScript in the page and return its value."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element."""
        box = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries (failed loads, CSP) so far."""
        found = []
        for message in self.events:
            method, params = message.get("method"), message.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(details.get("exception", {}).get("description") or details.get("text", ""))
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                found.append(
                    " ".join(str(arg.get("value", arg.get("description"))) for arg in params["args"])
                )
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(f"{params['entry']['text']} {params['entry'].get('url', '')}")
        return found

    def requested(self) -> list[str]:
        """URLs the page asked for."""
        return [
            message["params"]["request"]["url"]
            for message in self.events
            if message.get("method") == "Network.requestWillBeSent"
        ]

    def close(self) -> None:
        """Close the socket, stop Chromium and remove its profile."""
        self.socket.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    opened = Browser()
    try:
        yield opened
    finally:
        opened.close()


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
    browser.open(folder / page)
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
    browser.open(three_seed_report / "index.html")
    before = column(browser, "leaderboard", "Algorithm", text=True)
    browser.click(header_selector(browser, "leaderboard", "Overall IQM"))
    ascending = [float(value) for value in column(browser, "leaderboard", "Overall IQM")]
    assert ascending == sorted(ascending)
    assert column(browser, "leaderboard", "Algorithm", text=True) != before  # it was best-first
    assert browser.js(
        "document.querySelector('#leaderboard th[aria-sort=ascending]').textContent"
    ).startswith("Overall IQM")
    browser.click(header_selector(browser, "leaderboard", "Overall IQM"))
    descending = [float(value) for value in column(browser, "leaderboard", "Overall IQM")]
    assert descending == sorted(ascending, reverse=True)
    assert column(browser, "leaderboard", "Algorithm", text=True) == before
    assert browser.errors() == []


def test_sorting_by_text_and_by_a_lower_is_better_metric(browser: Browser, three_seed_report: Path):
    browser.open(three_seed_report / "task-imdb.html")
    names = column(browser, "naturalness", "Algorithm")
    browser.click(header_selector(browser, "naturalness", "Algorithm"))
    assert column(browser, "naturalness", "Algorithm") == sorted(names)
    browser.click(header_selector(browser, "naturalness", "Algorithm"))
    assert column(browser, "naturalness", "Algorithm") == sorted(names, reverse=True)
    browser.click(header_selector(browser, "naturalness", "Perplexity"))
    perplexity = [float(value) for value in column(browser, "naturalness", "Perplexity")]
    assert perplexity == sorted(perplexity)
    assert browser.errors() == []


@pytest.mark.parametrize("page", ["index.html", "task-imdb.html"])
def test_markup_from_runs_never_runs(browser: Browser, evil_report: Path, page: str):
    browser.open(evil_report / page)
    assert browser.errors() == []
    assert browser.js("typeof window.__pwned") == "undefined"
    assert browser.js("document.querySelectorAll('script').length") == 1
    assert browser.js("document.querySelectorAll('a[href^=\"javascript:\" i]').length") == 0
    assert all(url.startswith("file://") for url in browser.requested()), browser.requested()
    text = browser.js("document.body.innerText")
    assert "<script>window.__pwned = 1</script>" in text  # shown to the reader as text
