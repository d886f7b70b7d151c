"""The client side of a warm start: asking a server for a command, and standing in for the command it forks.

The process that asks (`forward`, `ask`) stays as the command's stand-in (`relay`): it passes on the signals it
gets and ends as the command ended, with its exit status or its signal; if it is killed outright the server
kills the command too. Should the server die first, the command runs on: the stand-in then waits for it
(through a pidfd) and ends once it has, with status 1. A process that runs confined does not ask at all, and
nothing is handed to a process listening in the server's place that is another user's or in a sandbox.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from yeetui.system import peers
from yeetui.system.warm.files import Place, server_alive
from yeetui.system.warm.protocol import LENGTH, Replies, sealed

_RETRIES = 3
"""Times a client asks again when a server stopped serving its build (stale code) as it asked."""
PASSED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
          signal.SIGWINCH, signal.SIGCONT)
"""Signals the stand-in passes on to the command."""


class UntrustedServer(PermissionError):
    """What listens at the warm server's socket is another user's or in a sandbox: it is handed nothing."""


def _server_problem(conn: socket.socket) -> str | None:
    """Why the process that listens at the other end of `conn` is not the warm server to hand a command to
    (SO_PEERCRED names the one that called `listen`): another user's, or confined where this one is not."""
    pid, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    if uid != os.getuid():
        return "is another user's"
    try:
        pidfd = peers.peer_pidfd(conn, pid)
    except OSError:
        return "has ended"
    try:
        why = peers.peer_confinement(pid, pidfd)
    finally:
        os.close(pidfd)
    return None if why is None else f"is in a sandbox ({why})"


def ask(path: Path | str, argv: Sequence[str], *, env: Mapping[str, str], stdio: tuple[int, int, int] = (0, 1, 2),
        cwd: str | None = None) -> socket.socket:
    """Ask the server at `path` to run `argv` on these stdin, stdout and stderr, in `cwd` (default: this
    process's directory) with `env` (in a sealed memfd of its own: the server passes it to the child it forks,
    unread); the connection then brings its replies (`Replies`). Raises OSError when nothing serves there, and
    UntrustedServer when what listens there is another user's or in a sandbox (a sandboxed command that can
    write the socket's folder listening in the server's place): it gets nothing, not even the request."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    directory = os.open(cwd or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        environment = sealed(json.dumps(dict(env)).encode())
    except BaseException:
        os.close(directory)
        conn.close()
        raise
    try:
        conn.connect(os.fspath(path))
        if (why := _server_problem(conn)) is not None:
            raise UntrustedServer(f"the process serving {path} {why}: it is not handed the command")
        umask = os.umask(0o022)
        os.umask(umask)
        header = json.dumps({"argv": list(argv), "umask": umask, "argv0": sys.argv[0] if sys.argv else ""}).encode()
        socket.send_fds(conn, [LENGTH.pack(len(header))], [*stdio, directory, environment])
        conn.sendall(header)
    except BaseException:
        conn.close()
        raise
    finally:
        os.close(directory)
        os.close(environment)
    return conn


def forward(argv: Sequence[str], where: Place, *, start_server: Callable[[], Any], patience: float = 30.0) -> None:
    """Run `argv` as a child of the warm server at `where` and end this process as it ended; returns (having
    done nothing) when no server can take it, so the caller runs the command itself. A server that is not
    running is started (`start_server`, which returns its `subprocess.Popen`) and waited for up to
    `patience` seconds: it imports what the command would, so waiting costs no more than running cold. A
    process in a sandbox (no_new_privs) does not ask at all: the server would fork the command outside it."""
    try:
        if peers.process_status("self").get("NoNewPrivs", "0") != "0":
            return
    except OSError:
        return
    deadline = time.monotonic() + patience
    started: Any = None
    retries = 0
    while True:
        try:
            conn = ask(where.socket, argv, env=os.environ)
        except (FileNotFoundError, ConnectionRefusedError):
            if not server_alive(where):
                if started is None:
                    try:
                        started = start_server()
                    except OSError:
                        return
                elif started.poll() is not None:
                    return  # it could not start, or lost the race to one that since ended
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
            continue
        except UntrustedServer as refused:
            sys.stderr.write(f"yeetui: {refused}; running the command here\n")
            return
        except OSError:
            return
        if not relay(conn, quiet_retry=retries < _RETRIES):
            return
        retries, started = retries + 1, None  # that server stopped serving: start the build's next one


def relay(conn: socket.socket, *, quiet_retry: bool = False) -> bool:
    """Be the command's stand-in: pass the signals this process gets on to it, wait for it, and end as it
    ended (by the same signal, or with its exit status). Returns only when the server refused the command
    (the reason on stderr), with this process as it was: the caller may run the command itself. With
    `quiet_retry`, a refusal that asks to be asked again (`Replies.retry`) says nothing and returns True."""
    replies = Replies()
    passing = _Passing(replies)
    before = {signum: signal.signal(signum, passing.pass_on) for signum in PASSED}
    before[signal.SIGTSTP] = signal.signal(signal.SIGTSTP, passing.stop)
    errors = -1
    while replies.status is None:
        try:
            data = conn.recv(4096)
        except InterruptedError:
            continue
        if not data:
            break
        try:
            replies.feed(data)
        except ValueError:
            break
        if replies.error is not None and replies.pid is None:
            again = quiet_retry and replies.retry
            if not again:
                sys.stderr.write(f"yeetui: the warm server refused the command ({replies.error}); running it here\n")
            conn.close()
            for passed, handler in before.items():
                signal.signal(passed, handler)
            for early in passing.caught:
                signal.raise_signal(early)
            return again
        if replies.pid is not None and errors < 0:
            passing.command, errors = _hand_over(replies.pid)
        passing.flush()
    _end_as(replies.status, passing.command, 2 if errors < 0 else errors)


class _Passing:
    """The signals the stand-in gets, passed on to the command: held until its pid is known, then sent — to its
    pidfd once there is one, so a pid reused after it ended is never signalled."""

    def __init__(self, replies: Replies) -> None:
        self.replies = replies
        self.caught: list[int] = []
        self.command = -1

    def send(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, OSError):
            if self.command >= 0:
                signal.pidfd_send_signal(self.command, signum)
            elif self.replies.pid is not None:
                os.kill(self.replies.pid, signum)

    def pass_on(self, signum: int, _frame: object) -> None:
        if self.replies.pid is None:
            self.caught.append(signum)
        else:
            self.send(signum)

    def flush(self) -> None:
        """Send what came before the command's pid was known."""
        while self.caught and self.replies.pid is not None:
            self.send(self.caught.pop(0))

    def stop(self, _signum: int, _frame: object) -> None:
        """^Z: stop the command, then this process, as a shell expects."""
        if self.replies.pid is not None:
            self.send(signal.SIGSTOP)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)
        signal.signal(signal.SIGTSTP, self.stop)


def _hand_over(pid: int) -> tuple[int, int]:
    """The command's pid is known: a pidfd on it (-1 if it cannot be had), opened now while the server holds the
    command unreaped, and a copy of stderr to say things on; this process's own stdio goes to /dev/null, so
    the command alone holds the terminal's (its output closing is the end of file a reader sees)."""
    command = -1
    with contextlib.suppress(OSError):
        command = os.pidfd_open(pid)
    errors = os.dup(2)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    return command, errors


def _end_as(status: int | None, command: int, errors: int) -> NoReturn:
    """End as the command ended: by the same signal, or with its exit status. Without one (the server went
    away) and the command still running, stand in until it ends (its pane, its caller, see it live), then end
    without its status, which only its parent, the server, could have read."""
    if status is None:
        os.write(errors, b"yeetui: the warm server that ran this command went away\n")
        if command >= 0 and not select.select([command], [], [], 0)[0]:
            os.write(errors, b"yeetui: the command runs on; this process stands in for it until it ends\n")
            select.select([command], [], [])
            os.write(errors, b"yeetui: the command has ended (its exit status went with the warm server)\n")
        os._exit(1)
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [os.WTERMSIG(status)])
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
