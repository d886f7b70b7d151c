"""Setting up a yeetui process before it does anything else (light: the CLI imports it at start-up): its
memory kept from the agents' commands, and the warm start of the worker processes yeetui starts itself (the warm
machinery, `yeetui.system.warm`, is imported only for a worker's command: `yeetui` alone starts without it)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from yeetui.heavy_imports import gc_paused
from yeetui.system.hardening import protect_process
from yeetui.system.processes import yeetui_command

if TYPE_CHECKING:
    from yeetui.system.warm.files import Place

__all__ = ["is_warm_server", "protect_process", "serve_warm_workers", "start_warm"]
"""`protect_process()`: this process's memory (keys among it) cannot be read by the agents' commands."""

WARM_COMMAND = ["agent", "run"]
"""The command a warm server runs: the worker of a pane or detached run, which yeetui starts itself."""
_SERVER_COMMAND = ["agent", "warm-server"]
_SERVER_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "XDG_RUNTIME_DIR", "TMPDIR", "VIRTUAL_ENV",
               "YEETUI_WARM_IDLE")
"""What the server keeps of the environment it was started from (each command brings its own): what decides
where it listens, how its interpreter finds packages and how text is encoded. No keys."""


def warm_disabled(env: Mapping[str, str] | None = None) -> bool:
    """`YEETUI_WARM=0` (or no, off, false): every worker starts afresh."""
    env = os.environ if env is None else env
    return env.get("YEETUI_WARM", "").strip().lower() in ("0", "no", "off", "false")


def start_warm(argv: Sequence[str]) -> None:
    """For a worker's command line (`agent run …`): run it forked from this user's warm server, starting the
    server when none runs, and end this process as the command ends. Returns at once for any other command,
    when `YEETUI_WARM=0`, or when no server can take it (the caller then runs it itself)."""
    if list(argv[:2]) != WARM_COMMAND or warm_disabled():
        return
    from yeetui.system.warm.build import build_key
    from yeetui.system.warm.client import forward
    from yeetui.system.warm.files import place

    key = build_key()
    where = place(os.environ, key=key)
    if where is not None:
        forward(argv, where, start_server=lambda: _start_server(key, where))


def _start_server(key: str, where: Place) -> subprocess.Popen[bytes]:
    env = {name: value for name, value in os.environ.items() if name in _SERVER_ENV or name.startswith("PYTHON")}
    log = os.open(where.socket.with_suffix(".log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        return subprocess.Popen(yeetui_command(*_SERVER_COMMAND, key), cwd="/", env=env, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True)
    finally:
        os.close(log)


def is_warm_server(argv: Sequence[str]) -> bool:
    return list(argv[:2]) == _SERVER_COMMAND and len(argv) == 3


def serve_warm_workers(argv: Sequence[str], *, preload: Callable[[], None],
                       run: Callable[[list[str], int], int]) -> int:
    """`yeetui agent warm-server KEY`: import what a worker needs (`preload`), then fork a child for each worker
    command asked of it, which runs it (`run`: its arguments, and the pid of its stand-in, the process that asked).
    Returns only when another server already serves this build."""
    from yeetui.system.warm import child, files
    from yeetui.system.warm.build import changed_file, loaded_files
    from yeetui.system.warm.server import WarmServer

    where = files.place(os.environ, key=argv[2])
    if where is None:
        print("yeetui: no private folder for the warm server's socket", file=sys.stderr)
        return 1

    def ready() -> None:
        with gc_paused():
            preload()
            _preload_worker()

    held = files.listen(where, ready=ready)
    if held is None:
        return 0
    listener, lock = held
    files.remove_stale(where.lock.parent, keep=argv[2])  # what servers of earlier builds left
    loaded = loaded_files()  # what it forks: a package edited in place since makes it stale
    server = WarmServer(listener, allow=lambda command: command[:2] == WARM_COMMAND, private=[lock],
                        idle=_idle(), on_exit=lambda: files.remove(where), stale=lambda: changed_file(loaded))
    request, fds = server.serve()
    child.become(request, fds)
    child.name_process("yeetui-worker")
    child.run_as_program(lambda: run(request["argv"], request["peer"]))


def _idle() -> float:
    """`YEETUI_WARM_IDLE`: seconds the server waits with nothing running before it ends (default 10 minutes)."""
    from yeetui.system.warm.server import IDLE

    try:
        return max(float(os.environ.get("YEETUI_WARM_IDLE") or IDLE), 0.1)
    except ValueError:
        return IDLE


def _preload_worker() -> None:
    """What every worker imports below the front end: the runtime and the Anthropic SDK with yeetui's provider
    over it. Not litellm: few workers use it, and it reads settings from the environment as it loads."""
    import anthropic  # noqa: F401

    import yeetui.providers.anthropic
    import yeetui.runtime  # noqa: F401
