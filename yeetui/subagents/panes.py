"""Children that run in a pane: `yeetui agent run` workers in windows of yeetui's private tmux server.

A run in `tmux` mode is an ordinary run record executed by a worker process whose terminal is a tmux
window, so the user can watch it (`tmux -L … attach`, or the TUI's attach key). Everything else goes
through the store like any run another process executes: its result and inbox item, cancel/abort/steer
(`run_commands`), crash recovery. The worker's environment (keys included) reaches it in a 0600 file that it
reads and removes at once — never on a tmux command line, where other users' `ps` could see it.

A window stays after its run has ended, for reading, while some yeetui process uses the server: at most the
`ENDED_KEPT` that ended last (older ones are closed as windows open, as runs end, and by each worker as it
ends: `leave_window`), until yeetui next starts. Each process that opens a window or follows a pane's run
holds a shared lock on `<data dir>/agents/panes.lock` while it lives (`hold`). Whoever finds the lock free —
a process letting go of it (`close`), a pane's worker as it ends, or the watcher a holder starts (`hold`),
which wakes when the holder dies however it dies (`yeetui agent leave-panes`) — winds the server down: ended
windows close, live ones close as their worker ends, and the server exits with the last
(`TmuxServer.wind_down`). So a child still running when every yeetui process is gone finishes, and then
nothing of yeetui's stays in tmux.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
from collections.abc import Mapping
from pathlib import Path

from yeetui import paths
from yeetui.system.processes import yeetui_command
from yeetui.system.tmux import Pane, TmuxError, TmuxServer, server_name

__all__ = ["ENDED_KEPT", "Pane", "PaneHost", "TmuxError", "leave_panes", "leave_window", "read_env_file"]

ENDED_KEPT = 5
"""Windows of ended runs kept for reading (those that ended last) while a yeetui process uses the server."""
SECRET_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD")
"""What names the variables a holder's watcher is not given."""
LOCK_WAIT = 0.01
"""Seconds between tries for the users' lock while another process winds the server down (a few commands)."""


class PaneHost:
    def __init__(self, *, env: Mapping[str, str], project_dir: Path) -> None:
        self.env = dict(env)
        self.project_dir = project_dir
        self.server = TmuxServer(server_name(paths.data_dir(env)), env=self.env)
        self._problem: str | None = None
        self._asked = False
        self._users: int | None = None
        """The users' lock, held shared while this process uses the server."""
        self._watcher: tuple[asyncio.subprocess.Process, int] | None = None
        """While it is held: the process that winds the server down should this one die, and the write end of
        its pipe (this process's alone: its end of file is this process's death)."""

    async def problem(self) -> str | None:
        """Why panes cannot be used here (tmux missing or older than 3.2), or None; asked once."""
        if not self._asked:
            self._problem, self._asked = await self.server.problem(), True
        return self._problem

    async def start(self, run_id: str, label: str, *, resume: bool = False) -> Pane:
        """Open a window running the worker for `run_id` (the oldest ended windows beyond `ENDED_KEPT` close).
        Raises TmuxError when tmux refuses."""
        await self.hold()
        await self.trim()
        env_file = write_env_file(run_id, self.env)
        argv = yeetui_command("agent", "run", "--run-id", run_id, "--env-file", str(env_file),
                "--show", *(["--resume"] if resume else []))
        try:
            return await self.server.open_window(label, argv, cwd=self.project_dir)
        except (TmuxError, OSError):
            env_file.unlink(missing_ok=True)
            raise

    async def alive(self, pane_id: str) -> bool:
        return await self.server.pane_alive(pane_id)

    async def trim(self) -> None:
        """Close the windows of ended runs but the `ENDED_KEPT` that ended last."""
        with contextlib.suppress(TmuxError, OSError):
            await self.server.close_dead_windows(keep=ENDED_KEPT)

    async def hold(self) -> None:
        """This process uses the server (it opened a window or follows a pane's run): ended windows stay for
        reading until it lets go (`close`). Idempotent."""
        if self._users is not None:
            return
        fd = _open_users_lock(self.env)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:  # another process winds the server down: a moment
                    await asyncio.sleep(LOCK_WAIT)
        except BaseException:
            os.close(fd)
            raise
        self._users = fd
        self._watcher = await _watch(self.env)

    async def close(self) -> None:
        """Let go of the server; the last process to do so winds it down (see the module docstring)."""
        fd, self._users = self._users, None
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            process, write_end = watcher
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            os.close(write_end)
            await process.wait()
        if fd is not None:
            await _wind_down_if_unused(self.server, fd)


_WATCH = 'IFS= read -r _; exec "$@"'
"""Wait for end of file on stdin — the write end lives only in the holder — then run the command."""


async def _watch(env: Mapping[str, str]) -> tuple[asyncio.subprocess.Process, int] | None:
    """Start the process that, once this one has died, winds the server down if nobody else uses it (the
    holder's own lock went with it). It gets this process's environment without its secrets (it needs where
    the data dir and tmux are, no key). None when it cannot start: then only the next yeetui tidies."""
    read_end, write_end = os.pipe()  # both close-on-exec: no other child inherits the write end
    try:
        process = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", _WATCH, "sh", *yeetui_command("agent", "leave-panes"), stdin=read_end,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, start_new_session=True, cwd="/",
            env={name: value for name, value in env.items() if not any(word in name.upper() for word in SECRET_WORDS)})
    except OSError:
        os.close(write_end)
        return None
    finally:
        os.close(read_end)
    return process, write_end


async def leave_panes(env: Mapping[str, str]) -> None:
    """`yeetui agent leave-panes`: a holder has died; with nobody left using the server, it winds down."""
    server = TmuxServer(server_name(paths.data_dir(env)), env=env)
    if server.running():
        await _wind_down_if_unused(server, _open_users_lock(env))


async def leave_window(env: Mapping[str, str]) -> None:
    """A pane's worker, as it ends. With a yeetui process left to read it, its window is about to be one of
    those kept, so only the `ENDED_KEPT` - 1 that ended last of the others stay (its parent's process trims
    too, once it saw the run end, but may look before this window's command has ended). With none, the server
    winds down: this window closes as the worker exits, and the server with the last one."""
    server = TmuxServer(server_name(paths.data_dir(env)), env=env)
    if not server.running():
        return
    if not await _wind_down_if_unused(server, _open_users_lock(env)):
        with contextlib.suppress(TmuxError, OSError):
            await server.close_dead_windows(keep=ENDED_KEPT - 1)


def _open_users_lock(env: Mapping[str, str]) -> int:
    path = paths.private_dir(paths.data_dir(env) / "agents") / "panes.lock"
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


async def _wind_down_if_unused(server: TmuxServer, fd: int) -> bool:
    """With the users' lock taken alone — no yeetui process holds it — wind the server down; whether it was
    unused. Closes `fd`. The lock stays taken meanwhile: a process about to open a window waits for it, and
    opens its window in a new server when this one has gone."""
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # someone still uses it
        with contextlib.suppress(TmuxError, OSError):
            await server.wind_down()
        return True
    finally:
        os.close(fd)


def write_env_file(run_id: str, env: Mapping[str, str]) -> Path:
    folder = paths.private_dir(paths.data_dir(env) / "agents")
    path = folder / f"{run_id}.env.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(dict(env), out)
    return path


def read_env_file(path: Path) -> dict[str, str]:
    """The environment a worker was given, read once: the file is removed before anything else happens."""
    try:
        with open(path, encoding="utf-8") as source:
            data = json.load(source)
    finally:
        path.unlink(missing_ok=True)
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f"{path} does not hold an environment (a JSON object of strings)")
    return data
