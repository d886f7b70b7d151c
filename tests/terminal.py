"""Running a program on a real pseudo-terminal from a test, through pexpect: what a terminal would show of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pexpect


@dataclass(frozen=True)
class TerminalRun:
    """How a program run on a terminal ended, and every byte it wrote there (stdout and stderr together)."""

    exit_status: int | None
    raw: bytes

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace").replace("\r\n", "\n")


def run_on_terminal(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 60.0,
                    size: tuple[int, int] = (100, 30)) -> TerminalRun:
    """Run `argv` on a `size` (columns, rows) pseudo-terminal until it exits and return what it wrote; fail
    with what it wrote so far if it runs past `timeout` seconds."""
    child: pexpect.spawn[bytes] = pexpect.spawn(argv[0], list(argv[1:]), cwd=str(cwd), env=dict(env),
                                                dimensions=(size[1], size[0]), timeout=timeout)  # no encoding: bytes
    try:
        child.expect(pexpect.EOF)
    except pexpect.TIMEOUT as exc:
        child.terminate(force=True)
        raise AssertionError(f"{argv[:3]} still ran after {timeout:g} s; it wrote: {child.before!r}") from exc
    raw = child.before or b""
    child.close()
    return TerminalRun(child.exitstatus, raw)
