"""A real headless Chromium driven over the Chrome DevTools Protocol, Python only.

Chromium's ``--remote-debugging-pipe`` speaks CDP over file descriptors 3 (commands in) and
4 (replies and events out), one NUL-terminated JSON message each: no websocket, no port,
no client library. :class:`Browser` opens a page, records every network request, console
message and uncaught exception, evaluates JavaScript and takes screenshots.

Debian's ``chromium`` package is what CI installs (``.ci/run``); ``chromium_path`` finds it.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions", "--no-first-run",
         "--no-default-browser-check", "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe",
         "--disable-features=Translate,MediaRouter,OptimizationHints")


def _high(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 100)
    os.close(fd)
    return moved


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One headless Chromium; ``open(path)`` returns a :class:`Page`."""

    def __init__(self, profile: Path, timeout: float = 60.0) -> None:
        executable = chromium_path()
        if executable is None:
            raise RuntimeError("chromium is not installed (apt-get install chromium)")
        self.timeout = timeout
        commands_r, self._commands_w = os.pipe()
        self._events_r, events_w = os.pipe()
        # move the child's ends above 3 and 4, so the redirections below cannot clobber them
        commands_r, events_w = (_high(fd) for fd in (commands_r, events_w))
        # bash (dash takes one-digit descriptors only) puts our pipe ends on 3 and 4 for Chromium
        script = f'exec "$@" 3<&{commands_r} 4>&{events_w}'
        profile.mkdir(parents=True, exist_ok=True)
        self.log = profile / "chromium.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                ["bash", "-c", script, "bash", executable, *FLAGS, f"--user-data-dir={profile}",
                 "about:blank"],
                pass_fds=(commands_r, events_w), stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        os.close(commands_r)
        os.close(events_w)
        self._next = 0
        self._replies: dict[int, queue.Queue] = {}
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._events_r, "rb", buffering=0) as stream:
            while True:
                chunk = stream.read(1 << 16)
                if not chunk:
                    return
                buffer += chunk
                while b"\0" in buffer:
                    raw, buffer = buffer.split(b"\0", 1)
                    message = json.loads(raw)
                    if "id" in message:
                        with self._lock:
                            box = self._replies.get(message["id"])
                        if box is not None:
                            box.put(message)
                    else:
                        with self._lock:
                            self.events.append(message)

    def send(self, method: str, params: dict[str, Any] | None = None, *,
             session: str | None = None) -> dict[str, Any]:
        with self._lock:
            self._next += 1
            ident = self._next
            box: queue.Queue = queue.Queue()
            self._replies[ident] = box
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        try:
            os.write(self._commands_w, json.dumps(message).encode() + b"\0")
        except BrokenPipeError:
            raise RuntimeError(f"chromium has exited: {self.log.read_text()[-2000:]}") from None
        try:
            reply = box.get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError(f"no reply to {method} in {self.timeout} s") from None
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def wait_for(self, method: str, session: str, since: int) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            with self._lock:
                for event in self.events[since:]:
                    if event.get("method") == method and event.get("sessionId") == session:
                        return event
            time.sleep(0.02)
        raise TimeoutError(f"no {method} in {self.timeout} s")

    def open(self, path: Path, *, width: int = 1280, height: int = 900, dark: bool = False) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                          "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        self.send("Emulation.setEmulatedMedia", {"features": [
            {"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]}, session=session)
        with self._lock:
            since = len(self.events)
        url = path.resolve().as_uri()
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired", session, since)
        return Page(self, session, url, since)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands_w)


class Page:
    def __init__(self, browser: Browser, session: str, url: str, since: int) -> None:
        self.browser, self.session, self.url, self.since = browser, session, url, since

    def _events(self) -> list[dict[str, Any]]:
        with self.browser._lock:
            return [e for e in self.browser.events[self.since:] if e.get("sessionId") == self.session]

    def requests(self) -> list[str]:
        """Every URL the page asked for (its own document included)."""
        return [e["params"]["request"]["url"] for e in self._events()
                if e["method"] == "Network.requestWillBeSent"]

    def problems(self) -> list[str]:
        """Console errors and warnings, log errors (a CSP violation is one), exceptions."""
        out = []
        for e in self._events():
            p = e["params"]
            if e["method"] == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('text')}")
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning",
                                                                                "assert"):
                out.append(f"console.{p['type']}: {p.get('args')}")
            elif e["method"] == "Log.entryAdded" and p["entry"].get("level") in ("error", "warning"):
                out.append(f"log {p['entry']['level']}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return out

    def evaluate(self, expression: str) -> Any:
        result = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                   session=self.session)
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"])
        return result["result"].get("value")

    def screenshot(self, path: Path, *, full: bool = True, max_height: int = 12000) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full:
            size = self.browser.send("Page.getLayoutMetrics", session=self.session)["cssContentSize"]
            height = min(size["height"], max_height)
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": height, "scale": 1})
        data = self.browser.send("Page.captureScreenshot", params, session=self.session)["data"]
        path.write_bytes(base64.b64decode(data))
        return path


# every element carrying data-* attributes, with its chart's and its report's
DATA_JS = """JSON.stringify(Array.from(document.querySelectorAll('*'))
  .filter(el => el.dataset && Object.keys(el.dataset).length)
  .map(el => { const chart = el.parentElement && el.parentElement.closest('svg.chart');
    const art = el.closest('article');
    return {tag: el.tagName.toLowerCase(), data: Object.assign({}, el.dataset),
            chart: chart ? Object.assign({}, chart.dataset) : null,
            report: art ? Number(art.dataset.report) : null}; }))"""
