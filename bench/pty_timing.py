"""Time a full-screen program in a pseudo-terminal until given texts appear in what it writes.

The program gets a real pty (so Textual runs its Linux driver, as in a terminal) of a fixed size. Its
output is read as it comes; escape sequences are dropped and each marker is looked for in the remaining
text, so a marker counts as shown when the program has written it to the terminal — no screen-scraping
poll interval. Optionally text is typed as soon as a given marker shows, and the time until that text is
echoed back is a marker too (does the input really take keys, or is the event loop still busy?). Then
ctrl+q is sent and the program is given a few seconds to quit before it is killed.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

FIRST_TEXT = "first text"
_ESCAPES = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|P[^\x1b]*\x1b\\|[ -Z\\-~])")


def time_to_markers(argv: list[str], *, markers: list[str], env: dict[str, str], cwd: Path,
                    size: tuple[int, int] = (120, 40), timeout: float = 60.0,
                    type_after: dict[str, str] | None = None) -> dict[str, float]:
    """Seconds from starting `argv` to each marker first appearing on its terminal; the key "first text"
    is when the first visible (non-blank) character was written — the first frame, for any program.
    `type_after` maps a marker to text typed the moment it shows; that text (which should appear nowhere
    else) is then a marker as well: the time its echo was written."""
    type_after = dict(type_after or {})
    markers = [*markers, *(text for text in type_after.values() if text not in markers)]
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    env = {**env, "TERM": "xterm-256color", "COLORTERM": "truecolor", "COLUMNS": str(size[0]),
           "LINES": str(size[1])}
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                            start_new_session=True, close_fds=True)
    os.close(slave)
    found: dict[str, float] = {}
    raw = b""
    try:
        deadline = start + timeout
        while len(found) < len(markers) + 1 and time.perf_counter() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            now = time.perf_counter()
            raw += chunk
            text = _ESCAPES.sub(b"", raw).decode("utf-8", errors="replace")
            if FIRST_TEXT not in found and any(c.isprintable() and not c.isspace() for c in text):
                found[FIRST_TEXT] = now - start
            for marker in markers:
                if marker not in found and marker in text:
                    found[marker] = now - start
                    if marker in type_after:
                        os.write(master, type_after.pop(marker).encode())
        if len(found) < len(markers) + 1:
            tail = _ESCAPES.sub(b"", raw[-3000:]).decode("utf-8", errors="replace")
            missing = [m for m in [FIRST_TEXT, *markers] if m not in found]
            raise RuntimeError(f"{argv} never showed {missing} within {timeout:g} s (exit code "
                               f"{proc.poll()}); last output: {tail!r}")
        return found
    finally:
        _quit(proc, master)


def _quit(proc: subprocess.Popen, master: int) -> None:
    try:
        os.write(master, b"\x11")  # ctrl+q
    except OSError:
        pass
    deadline = time.perf_counter() + 5.0
    while proc.poll() is None and time.perf_counter() < deadline:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                os.read(master, 65536)  # keep draining, or a blocked write keeps it from exiting
            except OSError:
                break
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    os.close(master)
