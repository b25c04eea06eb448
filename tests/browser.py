"""A headless Chromium for tests, driven over the Chrome DevTools Protocol (websocket-client): open a
page, run JavaScript, click, and collect console errors and requested URLs."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from conftest import skip_unless_in_ci

CHROMIUM = Path("/usr/bin/chromium")

requires_chromium = skip_unless_in_ci(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (make system-deps installs it)",
)


class Browser:
    """One headless Chromium with one page."""

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
                "--window-size=1200,900",
                f"--user-data-dir={self.profile}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            port = self._port()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
                targets = json.load(response)
            page = next(target for target in targets if target["type"] == "page")
            self.socket = websocket.create_connection(
                page["webSocketDebuggerUrl"], timeout=30, suppress_origin=True
            )
        except BaseException:
            self._stop()
            raise
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

    def open(self, url: str) -> None:
        """Load a URL (``Path.as_uri()`` for a file, query allowed) and wait for its load event."""
        self.events.clear()
        self.call("Page.navigate", url=url)
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

    def screenshot(self, path: Path) -> None:
        """Save a PNG of the whole page (for looking at a page by hand)."""
        import base64

        data = self.call("Page.captureScreenshot", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        """Close the socket, stop Chromium and remove its profile."""
        self.socket.close()
        self._stop()

    def _stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)
