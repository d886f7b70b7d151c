"""The command's side of a warm start: in the child the server forked, becoming the command (`become`), and
ending as a program does without tearing the interpreter down (`run_as_program`, `finish`).
"""

from __future__ import annotations

import atexit
import io
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from yeetui.system.warm.client import PASSED

_RESET = (*PASSED, signal.SIGCHLD, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGALRM)


def become(request: Mapping[str, Any], fds: Sequence[int], *, own_session: bool = True) -> None:
    """In the forked child: take the command's stdio, directory, umask, environment and arguments; with
    `own_session`, in a session of its own (so it leads its process group, as a process started with
    `start_new_session` does)."""
    signal.set_wakeup_fd(-1)
    for signum in _RESET:
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as the interpreter sets it at start
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    if own_session:
        os.setsid()
    encoding, errors = sys.stdout.encoding if sys.stdout else "utf-8", sys.stdout.errors if sys.stdout else "strict"
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    os.fchdir(fds[3])
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # gettempdir() caches TMPDIR as the server saw it
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding=encoding, errors=errors)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=encoding, errors=errors,
                                  line_buffering=os.isatty(1))
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding=encoding, errors="backslashreplace",
                                  line_buffering=True)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]  # what Textual and Rich read
    sys.argv = [request.get("argv0") or sys.argv[0], *request["argv"]]


def name_process(name: str) -> None:
    """Set the name `ps -o comm`, `top` and `pgrep` show for this process (Linux, 15 bytes at most): a forked
    command's would otherwise be the server's, `python`."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def finish(code: int) -> NoReturn:
    """The interpreter's exit up to where it would tear its modules down: wait for non-daemon threads, run the
    atexit handlers, flush stdio. The teardown itself is skipped — in a fork it would write to (and so copy)
    most of the memory the child shares with the server, for nothing."""
    threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter calls first at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120  # the interpreter's status when flushing stdout fails at exit
    os._exit(code & 0xFF)


def run_as_program(main: Callable[[], int | None]) -> NoReturn:
    """In a forked command: run `main` as the interpreter runs a program — its return or `SystemExit` is the
    exit status, an uncaught exception is printed and means 1 — then exit (`finish`)."""
    try:
        code = main() or 0
    except SystemExit as exit_:
        code = exit_code(exit_.code)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    finish(code)


def exit_code(code: object) -> int:
    """What the interpreter makes of `SystemExit(code)`: None is 0, an int is itself, anything else is printed
    to stderr and means 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
