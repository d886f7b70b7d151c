"""yeetui's private tmux server: where subagents in `tmux` mode run, one window each.

The server is `tmux -L yeetui-<hash of the data dir>` started with `-f /dev/null`, so nothing in the user's
tmux.conf (a `destroy-unattached`, a hook, a shell that exits) can kill agents' sessions, and the user's own
servers are never touched. Windows keep their pane after the command ends (`remain-on-exit`) so a crash
stays readable (how many, and for how long, is yeetui.subagents.panes's to say: `close_dead_windows`,
`wind_down`); names are reduced to `[A-Za-z0-9_-]` and never reused while a window of that name exists.
When yeetui's last window is closed the server exits (`exit-empty on`): nothing of yeetui's lingers in the
process list between uses. The socket file stays behind (tmux leaves it), so `running()` can say yes for a
server that has gone; the next command simply starts a new one.
Secrets never appear on a tmux command line: the child reads its environment from a 0600 file.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

MIN_VERSION = (3, 2)
SESSION = "yeetui"
HISTORY_LIMIT = 10_000
_VERSION = re.compile(r"(\d+)\.(\d+)")
_NO_SESSION = re.compile(r"can't find session|no such session|no server running|error connecting")
_SERVER_GOING = re.compile(r"server exited unexpectedly|lost server|no server running|error connecting")
"""What a command says when it reached a server that was exiting (its last window had just closed)."""
_PANE_FORMAT = "#{pane_id} #{pane_pid}"
OPEN_ATTEMPTS = 5
"""Tries to open a window while other processes make (or end) the session at the same moment."""


class TmuxError(Exception):
    """tmux is missing, too old, or refused a command; the message says which."""


@dataclass(frozen=True)
class Pane:
    server: str
    window: str
    """The window's name (unique on the server while it exists)."""
    pane_id: str
    pid: int

    @property
    def target(self) -> str:
        return f"{SESSION}:{self.window}"

    def attach_command(self) -> str:
        """What a user types to watch it: `tmux -L yeetui-… attach -t yeetui:oracle-1`."""
        return f"tmux -L {self.server} attach -t {shlex.quote(self.target)}"


def server_name(data_dir: Path) -> str:
    return "yeetui-" + hashlib.sha256(str(data_dir).encode()).hexdigest()[:10]


def window_name(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", label).strip("-")[:40] or "agent"


def parse_version(text: str) -> tuple[int, int] | None:
    """`tmux 3.3a` → (3, 3); `tmux next-3.4` → (3, 4); `tmux master` → None (unknown: treated as new)."""
    match = _VERSION.search(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


TERMINAL_SIZE_ENV = ("COLUMNS", "LINES")
"""Variables that override a terminal's real size for programs that read them (Python's
`shutil.get_terminal_size`, hence Textual; curses; less)."""


class TmuxServer:
    """One private tmux server, driven through the `tmux` command."""

    def __init__(self, name: str, *, executable: str | None = None, env: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.executable = executable or shutil.which("tmux")
        self.env = dict(os.environ if env is None else env)
        self.env.pop("TMUX", None)  # a command sent from inside the user's tmux must still reach our server
        for name in TERMINAL_SIZE_ENV:  # a window has its own size; a size exported in the user's shell would lie
            self.env.pop(name, None)
        self._opening = asyncio.Lock()

    async def problem(self) -> str | None:
        """Why tmux mode cannot run here (not installed, older than 3.2), or None."""
        if self.executable is None:
            return "tmux is not installed (not found on PATH)"
        rc, out, err = await self._run("-V", server=False)
        if rc != 0:
            return f"`tmux -V` failed: {(err or out).strip() or rc}"
        version = parse_version(out)
        if version is not None and version < MIN_VERSION:
            return f"tmux {version[0]}.{version[1]} is too old; yeetui needs tmux 3.2 or newer"
        return None

    async def open_window(self, label: str, argv: Sequence[str], *, cwd: Path) -> Pane:
        """Run `argv` in a new window named after `label` (made unique); its pane and process id.

        Safe to call concurrently: in this process the windows are opened one at a time (so two never pick the
        same name); another process that creates the session meanwhile is no failure — the window then opens
        in the session it made (and one whose last window closed meanwhile is made again)."""
        async with self._opening:
            names = await self.window_names()
            base = window_name(label)
            name, n = base, 1
            while name in names:
                n += 1
                name = f"{base}-{n}"
            for attempt in range(OPEN_ATTEMPTS):
                if await self._has_session():
                    rc, out, err = await self._new_window(name, argv, cwd=cwd)
                    if rc != 0 and _NO_SESSION.search(err) and not await self._has_session():
                        continue  # its last window was closed meanwhile, and the session with it
                else:
                    rc, out, err = await self._new_session(name, argv, cwd=cwd)
                    if rc != 0 and "duplicate session" in err and await self._has_session():
                        continue  # another process made it meanwhile: open the window in theirs
                    if rc != 0 and _SERVER_GOING.search(err):
                        # The server was exiting (its last window closed a moment ago) when this reached it:
                        # once it is gone, the next try starts a new one.
                        await asyncio.sleep(0.05 * (attempt + 1))
                        continue
                break
        if rc != 0:
            raise TmuxError(f"tmux could not open a window for {label}: {(err or out).strip() or rc}")
        pane_id, _, pid = out.strip().splitlines()[-1].partition(" ")
        return Pane(self.name, name, pane_id, int(pid))

    async def _new_window(self, name: str, argv: Sequence[str], *, cwd: Path) -> tuple[int, str, str]:
        return await self._run("new-window", "-d", "-P", "-F", _PANE_FORMAT, "-t", f"{SESSION}:", "-n", name,
                               "-c", str(cwd), "--", *argv)

    async def _new_session(self, name: str, argv: Sequence[str], *, cwd: Path) -> tuple[int, str, str]:
        """The first window starts the server and the session, with our options set before it runs anything.
        `exit-empty` is set explicitly (it is tmux's default): the server goes when its last window is closed."""
        return await self._run(
            "start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
            "set-option", "-g", "history-limit", str(HISTORY_LIMIT), ";", "set-option", "-g", "exit-empty", "on",
            ";", "new-session", "-d", "-P", "-F", _PANE_FORMAT, "-s", SESSION, "-n", name, "-x", "160", "-y", "48",
            "-c", str(cwd), "--", *argv)

    async def window_names(self) -> set[str]:
        rc, out, _ = await self._run("list-windows", "-t", SESSION, "-F", "#{window_name}")
        return set(out.split()) if rc == 0 else set()

    async def pane_alive(self, pane_id: str) -> bool:
        """Whether the pane exists and its command still runs (a dead pane stays for its output)."""
        rc, out, _ = await self._run("display-message", "-p", "-t", pane_id, "#{pane_dead}")
        return rc == 0 and out.strip() == "0"

    async def has_pane(self, pane_id: str) -> bool:
        rc, out, _ = await self._run("display-message", "-p", "-t", pane_id, "#{pane_id}")
        return rc == 0 and out.strip() == pane_id

    async def capture(self, pane_id: str, lines: int = 200) -> str:
        rc, out, _ = await self._run("capture-pane", "-p", "-J", "-t", pane_id, "-S", f"-{lines}")
        return out if rc == 0 else ""

    def running(self) -> bool:
        """Whether the server's socket exists (checked without starting tmux)."""
        base = self.env.get("TMUX_TMPDIR") or "/tmp"  # noqa: S108 - where tmux itself puts its socket folder
        return os.path.exists(os.path.join(base, f"tmux-{os.getuid()}", self.name))

    async def close_dead_windows(self, keep: int = 0) -> int:
        """Close the windows whose command has ended (kept for reading until now) but the `keep` that ended last;
        how many were closed."""
        dead = [window for window, _, is_dead in await self._panes() if is_dead]
        for window_id in dead[:max(len(dead) - keep, 0)]:
            await self._run("kill-window", "-t", window_id)
        return max(len(dead) - keep, 0)

    async def wind_down(self) -> None:
        """Nobody is left to read ended windows: close them, and have each live one close as its command ends
        (`remain-on-exit off`, on its pane alone: windows opened later keep theirs). The server exits with the
        last window (`exit-empty`)."""
        for window_id, pane_id, is_dead in await self._panes():
            if is_dead:
                await self._run("kill-window", "-t", window_id)
            else:
                await self._run("set-option", "-p", "-t", pane_id, "remain-on-exit", "off")
        # A command that ended meanwhile kept its window: it was live when listed, and dead before its option
        # was set.
        await self.close_dead_windows()

    async def _panes(self) -> list[tuple[str, str, bool]]:
        """(window id, pane id, whether its command has ended) of each window, those that ended longest ago first.
        One whose end tmux has not timed yet (it does so a moment later; tmux before 3.3 never does) counts as
        ended now; those of the same time are in the order they were opened."""
        if not self.running():
            return []
        rc, out, _ = await self._run("list-panes", "-s", "-t", SESSION, "-F",
                                     "#{window_id} #{pane_id} #{pane_dead} #{pane_dead_time}")
        found = []
        for line in out.splitlines() if rc == 0 else ():
            window_id, pane_id, dead, *ended = line.split()
            when = int(ended[0]) if ended and ended[0].isdigit() else sys.maxsize
            found.append((when, int(window_id.lstrip("@") or 0), window_id, pane_id, dead == "1"))
        return [(window_id, pane_id, dead) for *_, window_id, pane_id, dead in sorted(found)]

    async def kill_window(self, window: str) -> None:
        await self._run("kill-window", "-t", f"{SESSION}:{window}")

    async def kill_server(self) -> None:
        await self._run("kill-server")

    async def _has_session(self) -> bool:
        rc, _, _ = await self._run("has-session", "-t", SESSION)
        return rc == 0

    async def _run(self, *args: str, server: bool = True) -> tuple[int, str, str]:
        if self.executable is None:
            raise TmuxError("tmux is not installed (not found on PATH)")
        argv = [self.executable, *(("-L", self.name, "-f", "/dev/null") if server else ()), *args]
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                    env=self.env)
        out, err = await proc.communicate()
        return proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
