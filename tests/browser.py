"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
commands on fd 3, replies on fd 4, NUL-separated JSON), with no package beyond the standard
library. One browser per test session, a fresh profile folder, every process and folder
removed at the end.

    with Browser() as b:
        page = b.load("file:///tmp/x.html", screenshot=Path("x.png"))
        page.facts, page.errors, page.requests
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
)
TIMEOUT = 30.0


def chromium() -> str | None:
    """The Chromium binary (Debian's package installs ``chromium``)."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Loaded(NamedTuple):
    """What a page did in the browser."""

    facts: dict[str, Any]
    """What the layout script measured (``FACTS`` in the test)."""
    errors: list[str]
    """Script exceptions, console errors, log errors (CSP violations, failed loads)."""
    requests: list[str]
    """Every URL the page asked for, itself included."""


class Browser:
    """One headless Chromium; ``load`` opens pages in one tab, one after another."""

    def __init__(self, width: int = 1100, height: int = 900) -> None:
        binary = chromium()
        if binary is None:
            raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
        self.profile = tempfile.mkdtemp(prefix="kvconfig-chromium-")
        to_child, self._cmd = os.pipe()
        self._replies, from_child = os.pipe()

        def fds() -> None:  # in the child: the protocol's descriptors at 3 and 4
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child, from_child)]
            for fd, want in zip(high, (3, 4), strict=True):
                os.dup2(fd, want)
                os.set_inheritable(want, True)
                os.close(fd)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=fds,  # noqa: PLW1509 (no threads here)
            start_new_session=True,
            close_fds=False,
        )
        os.close(to_child)
        os.close(from_child)
        self._buffer = b""
        self._next = 0
        self._events: list[dict[str, Any]] = []
        try:
            self._open(width, height)
        except BaseException:
            self.close()
            raise

    def _open(self, width: int, height: int) -> None:
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(f"{domain}.enable", session=self.session)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=self.session,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its protocol pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        doc: dict[str, Any] = json.loads(message)
        return doc

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command; events that arrive meanwhile are kept for ``wait``."""
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            doc = self._read(deadline)
            if doc.get("id") == self._next:
                if "error" in doc:
                    raise RuntimeError(f"{method}: {doc['error']}")
                result: dict[str, Any] = doc.get("result", {})
                return result
            self._events.append(doc)

    def wait(self, method: str) -> list[dict[str, Any]]:
        """Read until event ``method`` arrives; returns every event up to it."""
        deadline = time.monotonic() + TIMEOUT
        while not any(e.get("method") == method for e in self._events):
            self._events.append(self._read(deadline))
        seen, self._events = self._events, []
        return seen

    def load(self, url: str, script: str, screenshot: Path | None = None) -> Loaded:
        """Open ``url``, run ``script`` (an expression giving JSON) in it once loaded."""
        self._events = []
        self.call("Page.navigate", session=self.session, url=url)
        events = self.wait("Page.loadEventFired")
        result = self.call(
            "Runtime.evaluate", session=self.session, expression=script, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"the layout script failed: {result['exceptionDetails']}")
        facts = json.loads(result["result"]["value"])
        if screenshot is not None:
            shot = self.call(
                "Page.captureScreenshot",
                session=self.session,
                format="png",
                captureBeyondViewport=True,
            )
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        events += self._events
        return Loaded(facts, _errors(events), _requests(events))

    def close(self) -> None:
        """End the browser and every process it started; remove its profile."""
        with contextlib.suppress(Exception):
            self.call("Browser.close")
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while alive(self.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        for fd in (self._cmd, self._replies):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def alive(group: int) -> bool:
    """Whether any process of process group ``group`` is still running."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _errors(events: list[dict[str, Any]]) -> list[str]:
    out = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            out.append(f"exception: {p['exceptionDetails'].get('text')}")
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append(f"console: {[a.get('value') for a in p.get('args', [])]}")
        elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
            out.append(f"log: {p['entry'].get('text')}")
        elif m == "Page.javascriptDialogOpening":
            out.append(f"dialog: {p.get('message')}")
    return out


def _requests(events: list[dict[str, Any]]) -> list[str]:
    return [
        e["params"]["request"]["url"]
        for e in events
        if e.get("method") == "Network.requestWillBeSent"
    ]
