"""The benches' terminal (`bench.terminal`): a real program on a pty, its echo read as it comes, ctrl+q and a kill."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bench.terminal import TerminalProgram
from bench.tui_probe import INPUT_MARKER

ROOT = Path(__file__).resolve().parents[2]


def test_a_program_on_the_terminal_shows_its_screen_echoes_keys_and_is_gone_after_close(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    term = TerminalProgram([sys.executable, str(ROOT / "bench" / "tui_probe.py")], env=env, cwd=tmp_path,
                           size=(100, 30))
    try:
        term.wait(lambda: term.shows(INPUT_MARKER), 60, "the probe's input")
        term.since = b""
        term.type("ζ")
        term.wait(lambda: "ζ".encode() in term.since, 30, "the echo")
        assert b"\x1b[" not in term.recent  # escape sequences are dropped from what markers are read in
    finally:
        term.close()
    assert term.exited()
    assert not Path(f"/proc/{term.pid}").exists() or "zombie" in Path(f"/proc/{term.pid}/status").read_text()


def test_an_escape_sequence_split_between_two_reads_is_not_taken_for_text(tmp_path: Path) -> None:
    script = ("import sys, time\n"
              "sys.stdout.buffer.write(b'READY \\x1b[38;2;'); sys.stdout.flush(); time.sleep(0.3)\n"
              "sys.stdout.buffer.write(b'10;20;30mcolour\\n'); sys.stdout.flush(); time.sleep(30)\n")
    term = TerminalProgram([sys.executable, "-c", script], env=dict(os.environ), cwd=tmp_path)
    try:
        term.wait(lambda: term.shows("colour"), 30, "the second write")
        assert b"READY colour" in term.recent and b"10;20" not in term.recent
    finally:
        term.close(grace=0.5)
