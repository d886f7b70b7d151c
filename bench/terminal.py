"""A full-screen program on a real pseudo-terminal (through pexpect), read as it writes.

The program gets a pty of a fixed size, so Textual runs its Linux driver as in a terminal emulator. What it
writes is read as it comes: `since` keeps the raw bytes since the caller last emptied it (for key echoes),
`recent` the last bytes with escape sequences dropped (for markers) — no screen-scraping poll interval, a
text counts as shown the moment the program has written it. Keys are written to the terminal as bytes.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pexpect

ESCAPES = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|P[^\x1b]*\x1b\\|[ -Z\\-~])")
"""CSI, OSC, DCS and two-byte escape sequences: what a terminal interprets rather than shows."""
RECENT_BYTES = 200_000
MAX_SEQUENCE = 512
"""Longer than any escape sequence a TUI writes: an escape this far from the end of a read is not awaited."""


class TerminalProgram:
    """`argv` running on a `size` (columns, rows) pseudo-terminal, as `TERM=xterm-256color` with true colour."""

    def __init__(self, argv: Sequence[str], *, env: dict[str, str], cwd: Path,
                 size: tuple[int, int] = (120, 40)) -> None:
        env = {**env, "TERM": "xterm-256color", "COLORTERM": "truecolor", "COLUMNS": str(size[0]),
               "LINES": str(size[1])}
        self.started = time.perf_counter()
        self.child: pexpect.spawn[bytes] = pexpect.spawn(argv[0], list(argv[1:]), env=env, cwd=str(cwd),
                                                         dimensions=(size[1], size[0]))  # no encoding: bytes
        self.child.delaybeforesend = None  # pexpect sleeps 50 ms before each write unless told not to
        self.recent = b""
        """The last bytes read, escape sequences dropped."""
        self.since = b""
        """Every byte read since the caller last emptied it (raw)."""
        self._partial = b""

    @property
    def pid(self) -> int:
        pid: int = self.child.pid
        return pid

    def exited(self) -> bool:
        return not self.child.isalive()

    def pump(self, timeout: float) -> bytes:
        """Read what the program wrote within `timeout` seconds (b"" if nothing); fail if it is gone."""
        try:
            chunk: bytes = self.child.read_nonblocking(1 << 16, timeout=timeout)
        except pexpect.TIMEOUT:
            return b""
        except pexpect.EOF as error:
            self.child.close()
            raise RuntimeError(f"the program exited ({self.child.exitstatus}, signal {self.child.signalstatus}); "
                               f"last output: {self.tail()!r}") from error
        self.since += chunk
        self.recent = (self.recent + ESCAPES.sub(b"", self._whole_sequences(chunk)))[-RECENT_BYTES:]
        return chunk

    def _whole_sequences(self, chunk: bytes) -> bytes:
        """`chunk` after what an earlier read left over, less an escape sequence cut off at its end (kept for
        the next read): a sequence split across two reads would otherwise pass for text."""
        data, self._partial = self._partial + chunk, b""
        last = data.rfind(b"\x1b")
        if last != -1 and len(data) - last < MAX_SEQUENCE and not ESCAPES.match(data, last):
            data, self._partial = data[:last], data[last:]
        return data

    def tail(self, chars: int = 1500) -> str:
        return self.recent[-chars:].decode("utf-8", errors="replace")

    def shows(self, text: str) -> bool:
        return text.encode() in self.recent

    def wait(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.perf_counter() + timeout
        while not predicate():
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{what}: not seen within {timeout:g} s; last output: {self.tail()!r}")
            self.pump(0.02)

    def settle(self, seconds: float) -> None:
        """Keep reading for `seconds` (a program whose output is not read blocks on its next write)."""
        deadline = time.perf_counter() + seconds
        while (left := deadline - time.perf_counter()) > 0:
            self.pump(min(0.05, left))

    def type(self, text: str) -> None:
        self.child.send(text.encode())

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def close(self, *, grace: float = 5.0) -> None:
        """ctrl+q, then up to `grace` seconds to quit (its output still read, or a blocked write keeps it
        from exiting); then its process group is killed."""
        deadline = time.perf_counter() + grace
        try:
            self.type("\x11")
            while self.child.isalive() and time.perf_counter() < deadline:
                self.pump(0.05)
        except (OSError, RuntimeError):
            pass
        if self.child.isalive():
            try:
                os.killpg(self.pid, signal.SIGKILL)  # pexpect makes the program a session (and group) leader
            except ProcessLookupError:
                pass
        self.child.close(force=True)
