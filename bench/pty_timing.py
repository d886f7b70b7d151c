"""Time a full-screen program in a pseudo-terminal until given texts appear in what it writes.

The program runs on a real pty of a fixed size (`bench.terminal.TerminalProgram`, through pexpect). Its
output is read as it comes; escape sequences are dropped and each marker is looked for in the remaining
text, so a marker counts as shown when the program has written it to the terminal — no screen-scraping
poll interval. Optionally text is typed as soon as a given marker shows, and the time until that text is
echoed back is a marker too (does the input really take keys, or is the event loop still busy?). Then
ctrl+q is sent and the program is given a few seconds to quit before it is killed.
"""

from __future__ import annotations

import time
from pathlib import Path

from bench.terminal import ESCAPES, TerminalProgram

FIRST_TEXT = "first text"


def time_to_markers(argv: list[str], *, markers: list[str], env: dict[str, str], cwd: Path,
                    size: tuple[int, int] = (120, 40), timeout: float = 60.0,
                    type_after: dict[str, str] | None = None) -> dict[str, float]:
    """Seconds from starting `argv` to each marker first appearing on its terminal; the key "first text"
    is when the first visible (non-blank) character was written — the first frame, for any program.
    `type_after` maps a marker to text typed the moment it shows; that text (which should appear nowhere
    else) is then a marker as well: the time its echo was written."""
    type_after = dict(type_after or {})
    markers = [*markers, *(text for text in type_after.values() if text not in markers)]
    term = TerminalProgram(argv, env=env, cwd=cwd, size=size)
    start = term.started
    found: dict[str, float] = {}
    raw = b""
    try:
        deadline = start + timeout
        while len(found) < len(markers) + 1 and time.perf_counter() < deadline:
            try:
                chunk = term.pump(0.05)
            except RuntimeError:
                break
            if not chunk:
                continue
            now = time.perf_counter()
            raw += chunk
            text = ESCAPES.sub(b"", raw).decode("utf-8", errors="replace")
            if FIRST_TEXT not in found and any(c.isprintable() and not c.isspace() for c in text):
                found[FIRST_TEXT] = now - start
            for marker in markers:
                if marker not in found and marker in text:
                    found[marker] = now - start
                    if marker in type_after:
                        term.type(type_after.pop(marker))
        if len(found) < len(markers) + 1:
            tail = ESCAPES.sub(b"", raw[-3000:]).decode("utf-8", errors="replace")
            missing = [m for m in [FIRST_TEXT, *markers] if m not in found]
            raise RuntimeError(f"{argv} never showed {missing} within {timeout:g} s (exited: "
                               f"{term.exited()}); last output: {tail!r}")
        return found
    finally:
        term.close()
