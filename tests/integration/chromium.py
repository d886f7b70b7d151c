"""Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: JSON messages ended
by a NUL byte, commands on the browser's fd 3, answers and events on its fd 4), so a test reads what a real
browser rendered without a WebSocket client or a browser download. One browser, one tab, page after page."""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# No network of its own: no background requests, updates, sync, QUIC or proxy; only what a page asks for.
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
    "--disable-dev-shm-usage", "--no-proxy-server", "--remote-debugging-pipe",
)

# What the page shows: the main content's rendered text outside its headings, every link the browser resolved,
# and every id on the page (the targets a `#fragment` may name).
_LOOK = """(() => {
  const main = document.querySelector(".md-content article") || document.querySelector("article");
  const body = main ? [...main.children].filter(e => !/^H[1-6]$/.test(e.tagName)).map(e => e.innerText) : [];
  return {
    has_main: main !== null,
    body_text: body.join(" ").trim(),
    links: [...document.querySelectorAll("a[href]")].map(a => a.href),
    ids: [...document.querySelectorAll("[id]")].map(e => e.id),
  };
})()"""


class ChromiumError(RuntimeError):
    """The browser failed, quit, or did not answer in time."""


@dataclass(frozen=True)
class Response:
    url: str
    status: int


@dataclass(frozen=True)
class Rendered:
    """One page as the browser left it after its load event."""

    url: str
    has_main: bool
    body_text: str
    links: list[str]
    ids: set[str]
    requested: list[str]
    """Every URL the page asked for by its load event (the page itself, its styles, scripts, images)."""
    responses: list[Response]
    failed: list[str]
    """Requests that got no response at all, with the browser's reason."""


def chromium_path() -> str | None:
    return shutil.which("chromium")


def _above_protocol_fds(fd: int) -> int:
    """`fd` moved to a number above 9, so putting the pipe ends on 3 and 4 cannot clobber one of them."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Chromium:
    def __init__(self, proc: subprocess.Popen[bytes], commands: int, answers: int, log: Path) -> None:
        self._proc = proc
        self._commands = commands
        self._answers = answers
        self._log = log
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self._tab = ""

    @classmethod
    @contextmanager
    def launch(cls, profile: Path) -> Iterator[Chromium]:
        """A headless Chromium with its profile (and its stderr, for the error when it fails) in `profile`;
        quit and reaped on exit."""
        executable = chromium_path()
        if executable is None:
            raise ChromiumError("no chromium on PATH")
        to_browser, commands = os.pipe()
        answers, from_browser = os.pipe()
        to_browser, from_browser = _above_protocol_fds(to_browser), _above_protocol_fds(from_browser)
        log = profile / "stderr.log"
        # bash puts the pipe ends where the protocol wants them (3 and 4) and closes the originals (dash takes
        # single-digit fds only).
        remap = f'exec "$@" 3<&{to_browser} 4>&{from_browser} {to_browser}<&- {from_browser}>&-'
        try:
            with log.open("wb") as stderr:
                proc = subprocess.Popen(
                    ["bash", "-c", remap, "bash", executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                    pass_fds=(to_browser, from_browser), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=stderr, start_new_session=True,
                )
        except OSError:
            os.close(commands)
            os.close(answers)
            raise
        finally:
            os.close(to_browser)
            os.close(from_browser)
        browser = cls(proc, commands, answers, log)
        try:
            browser.call("Browser.getVersion", timeout=30)
            browser._tab = browser._open_tab()
            yield browser
        finally:
            browser._quit()

    def render(self, url: str, timeout: float = 15) -> Rendered:
        """Open `url` in the browser's tab, wait for that document's load event, and read what it rendered."""
        self._events.clear()
        navigated = self.call("Page.navigate", {"url": url}, session=self._tab, timeout=timeout)
        if "errorText" in navigated:
            raise ChromiumError(f"{url}: {navigated['errorText']}")
        loader = navigated["loaderId"]
        loaded = self._wait_event(timeout, "its load event", lambda e: e["method"] == "Page.lifecycleEvent"
                         and e["params"]["name"] == "load" and e["params"]["loaderId"] == loader)
        look = self.call("Runtime.evaluate", {"expression": _LOOK, "returnByValue": True}, session=self._tab)
        if "exceptionDetails" in look:
            raise ChromiumError(f"{url}: {look['exceptionDetails']}")
        seen = look["result"]["value"]
        # This page's own requests up to its load event: a request the page before it left in flight carries that
        # page's loader, and what the browser asks for after the load (a favicon.ico nobody named) is not the page's.
        until_load = self._events[:loaded]
        events = [e for e in until_load if e["params"].get("loaderId") == loader]
        requests = {e["params"]["requestId"]: e["params"]["request"]["url"]
                    for e in events if e["method"] == "Network.requestWillBeSent"}
        return Rendered(
            url=url, has_main=seen["has_main"], body_text=seen["body_text"], links=seen["links"],
            ids=set(seen["ids"]), requested=list(requests.values()),
            responses=[Response(e["params"]["response"]["url"], e["params"]["response"]["status"])
                       for e in events if e["method"] == "Network.responseReceived"],
            failed=[f"{requests[e['params']['requestId']]}: {e['params']['errorText']}"
                    for e in until_load
                    if e["method"] == "Network.loadingFailed" and e["params"]["requestId"] in requests],
        )

    def _open_tab(self) -> str:
        """A tab of its own, attached, reporting its page and network events; its session id."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session: str = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", session=session)
        self.call("Page.setLifecycleEventsEnabled", {"enabled": True}, session=session)
        self.call("Network.enable", session=session)
        # Each page fetches all it needs itself, so a resource it cannot load is reported on that page.
        self.call("Network.setCacheDisabled", {"cacheDisabled": True}, session=session)
        return session

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 10) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        try:
            os.write(self._commands, json.dumps(message).encode() + b"\0")
        except BrokenPipeError:
            raise ChromiumError(f"chromium quit before {method}{self._stderr_tail()}") from None
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read(deadline, method)
            if answer.get("id") == message["id"]:
                if "error" in answer:
                    raise ChromiumError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer["result"]
                return result
            if "method" in answer:
                self._events.append(answer)

    def _wait_event(self, timeout: float, what: str, wanted: Callable[[dict[str, Any]], bool]) -> int:
        """Read on until the tab has sent an event `wanted` picks (seen already counts); its index in the events."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for index in range(seen, len(self._events)):
                if self._events[index].get("sessionId") == self._tab and wanted(self._events[index]):
                    return index
            seen = len(self._events)
            answer = self._read(deadline, what)
            if "method" in answer:
                self._events.append(answer)

    def _read(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        """The next message from the browser, read by the deadline."""
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._answers], [], [], left)[0]:
                raise ChromiumError(f"no answer to {waiting_for} in time{self._stderr_tail()}")
            chunk = os.read(self._answers, 1 << 16)
            if not chunk:
                raise ChromiumError(f"chromium quit while waiting for {waiting_for}{self._stderr_tail()}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        if "method" in parsed:
            parsed.setdefault("params", {})  # an event, whose params may be left out when empty
        return parsed

    def _stderr_tail(self) -> str:
        return "; its stderr ends:\n" + "\n".join(self._log.read_text(errors="replace").splitlines()[-20:])

    def _quit(self) -> None:
        """Ask the browser to close; whatever of its process group still runs after that is killed."""
        try:
            self.call("Browser.close", timeout=5)
        except (ChromiumError, OSError):
            pass  # it may quit before it answers; the wait below tells
        os.close(self._commands)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        with suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
        os.close(self._answers)
