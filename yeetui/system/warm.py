"""Warm starts: a process that has imported what a command needs once, and forks a child for each command.

A subagent in a pane or a detached worker is a `yeetui agent run` process of its own. Started from scratch it
spends most of its first two seconds importing (the Anthropic SDK alone is 1.7–1.9 s of CPU on a 2-core
machine) before it reads its run. A warm server (`WarmServer`, one per user and yeetui build) pays that once;
each worker command then connects to it (`forward`), hands over its stdin, stdout, stderr, working directory,
umask and environment, and the server forks a child that becomes the command (`become`) — a fork costs a few
milliseconds. The process that connected stays as the command's stand-in: it passes on the signals it gets
(`relay`) and ends as the command ended, with its exit status or its signal; if it is killed outright the
server kills the command too. So whoever started it — tmux, `subprocess`, a test — sees what it saw before.
Should the server die first, the command runs on (a child whose parent died): the stand-in then waits for it
(through a pidfd) and ends once it has, with status 1 — a tmux pane stays live, showing its output, as long
as its worker runs.

The server is single-threaded (forking a process with threads copies locks some other thread holds), listens
on a socket in a private directory of this user (0700, checked, and each peer's uid checked too), holds an
exclusive lock on a file beside it while it lives (so two never serve one build), and ends after `idle`
seconds with no command running. The build key names the interpreter, its search path and the modification
times of yeetui's sources and of the folders packages are installed in: an upgrade or an edit starts a new
server instead of forking stale code. What the key cannot see without importing it — a file of an installed
package edited in place — the server checks before each fork (`stale`: the mtimes and sizes of the files its
modules came from); changed, it stops listening and tells the client to ask again, which starts a new one.

The server forks outside any sandbox, so it refuses a peer that runs confined (`peers.confinement`:
no_new_privs, a seccomp filter it has not, a pid namespace of its own, capabilities dropped): a command an
agent's sandboxed bash starts must stay in that sandbox. Such a client does not even ask (`forward`) and runs
the command itself; nor does a client hand anything to a confined process listening in the server's place.
The command's environment (the provider keys among it) comes in a sealed memfd that only the forked child
reads: the server's own memory never holds it, and neither do the children it forks later.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import gc
import hashlib
import io
import json
import os
import re
import select
import selectors
import signal
import socket
import stat
import struct
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from yeetui.system import peers
from yeetui.system.private_folder import user_folder

_LENGTH = struct.Struct("!I")
_REQUEST_LIMIT = 1 << 20
"""Bytes a request may have, and its environment."""
_DESCRIPTORS = 5
"""What a request brings: stdin, stdout, stderr, its working directory and its environment (a sealed memfd)."""
_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
_RETRIES = 3
"""Times a client asks again when a server stopped serving its build (stale code) as it asked."""
_PASSED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
           signal.SIGWINCH, signal.SIGCONT)
"""Signals the stand-in passes on to the command."""
_RESET = (*_PASSED, signal.SIGCHLD, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGALRM)
IDLE = 600.0
"""Seconds a server with nothing running waits for the next command before it ends."""
_stand_in: int | None = None


def stand_in() -> int | None:
    """In a command forked from the warm server: the pid of its stand-in, the process that asked for it (which
    passes each signal on to it and ends as it ends). None elsewhere."""
    return _stand_in


def set_stand_in(pid: int) -> None:
    global _stand_in
    _stand_in = pid


@dataclass(frozen=True)
class Place:
    """Where the server of one build listens, and the lock that says it lives."""

    socket: Path
    lock: Path


def place(env: Mapping[str, str], *, key: str | None = None) -> Place | None:
    """This user's warm server for this build: in `$XDG_RUNTIME_DIR/yeetui-UID` (or `/tmp/yeetui-UID`), created
    0700. None when that folder cannot be made safely (someone else owns it, or others may write in it) or
    its path is too long for a socket."""
    folder = user_folder(env)
    if folder is None:
        return None
    name = f"warm-{key or build_key()}"
    found = Place(folder / f"{name}.sock", folder / f"{name}.lock")
    return found if len(os.fsencode(found.socket)) < 100 else None


def build_key(package: Path | None = None) -> str:
    """What the server's code depends on: the interpreter, where yeetui and the installed packages live, the
    mtimes of yeetui's sources and of the folders packages are installed in (installing or removing a package
    changes its folder's), and PYTHONPATH. The same however the process was started (`-m`, a script, pytest)."""
    package = package or Path(__file__).resolve().parents[1]
    paths = sysconfig.get_paths()
    folders = sorted({paths["purelib"], paths["platlib"], *os.environ.get("PYTHONPATH", "").split(os.pathsep)} - {""})
    digest = hashlib.sha256(f"{sys.executable}\0{sys.version}\0{package}\0{folders}".encode())
    for folder in folders:
        with contextlib.suppress(OSError):
            digest.update(f"{folder}:{os.stat(folder).st_mtime_ns}".encode())
    for root, _, files in sorted(os.walk(package)):
        for name in sorted(files):
            if name.endswith(".py"):
                with contextlib.suppress(OSError):
                    info = os.stat(os.path.join(root, name))
                    digest.update(f"{root}/{name}:{info.st_mtime_ns}:{info.st_size}".encode())
    return digest.hexdigest()[:16]


def loaded_files() -> dict[str, tuple[int, int]]:
    """The files this process's modules came from, beneath a folder of its import path (the standard library,
    site-packages, PYTHONPATH, yeetui), each with its mtime and size: what a server forks, so what a change in
    place (an edited or reinstalled package of the same version) makes stale. About 3,700 files once a worker's
    imports are loaded (3,400 of them in site-packages): 11–25 ms to check on a busy 2-core machine
    (`changed_file`), once per fork."""
    roots = tuple(f"{p.rstrip('/')}/" for p in sys.path if os.path.isabs(p) and os.path.isdir(p))
    found: dict[str, tuple[int, int]] = {}
    for module in list(sys.modules.values()):
        try:  # not through the module's own attribute lookup: a lazily loaded module would load on it
            path = object.__getattribute__(module, "__dict__").get("__file__")
        except (AttributeError, TypeError):
            continue
        if isinstance(path, str) and path.startswith(roots):
            with contextlib.suppress(OSError):
                info = os.stat(path)
                found[path] = (info.st_mtime_ns, info.st_size)
    return found


def changed_file(files: Mapping[str, tuple[int, int]]) -> str | None:
    """The first of `files` (`loaded_files`) whose mtime or size is no longer the same, or that is gone; None
    when none changed. A file edited while the server was importing it, in the second or two it starts, is
    not seen."""
    for path, known in files.items():
        try:
            info = os.stat(path)
        except OSError:
            return path
        if (info.st_mtime_ns, info.st_size) != known:
            return path
    return None


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


def server_alive(where: Place) -> bool:
    """Whether a server holds the lock of `where` (it is starting or serving)."""
    try:
        fd = os.open(where.lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


# --- the client side: the command's stand-in --------------------------------------------------------------

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
        environment = _sealed(json.dumps(dict(env)).encode())
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
        socket.send_fds(conn, [_LENGTH.pack(len(header))], [*stdio, directory, environment])
        conn.sendall(header)
    except BaseException:
        conn.close()
        raise
    finally:
        os.close(directory)
        os.close(environment)
    return conn


def _sealed(data: bytes) -> int:
    """A memfd holding `data`, sealed: nobody can change it once the server has checked its size."""
    fd = os.memfd_create("yeetui-environment", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Replies:
    """The server's replies on a connection, one JSON line each: `{"pid": …}` once forked, `{"status": …}` (a
    wait status) once the command ended, `{"error": …}` when it was refused — with `"retry": true` when it
    stopped serving as it was asked (its code changed on disk): a new server will take the command."""

    def __init__(self) -> None:
        self._pending = b""
        self.pid: int | None = None
        self.status: int | None = None
        self.error: str | None = None
        self.retry = False

    def feed(self, data: bytes) -> None:
        *lines, self._pending = (self._pending + data).split(b"\n")
        for line in lines:
            reply = json.loads(line)
            if isinstance(reply.get("pid"), int):
                self.pid = reply["pid"]
            if isinstance(reply.get("status"), int):
                self.status = reply["status"]
            if isinstance(reply.get("error"), str):
                self.error = reply["error"]
                self.retry = reply.get("retry") is True


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
    before = {signum: signal.signal(signum, passing.pass_on) for signum in _PASSED}
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


# --- the server side -------------------------------------------------------------------------------------

@dataclass
class _Running:
    conn: socket.socket
    pidfd: int


class _Again(Exception):
    """A refusal for now: this server no longer serves its build, and the next one will take the command."""


class WarmServer:
    """Forks a child for each command asked of it on `listener`; `serve` returns only in such a child, with
    the command's request (`argv`, `env`, `umask`, `argv0`, and `peer`: the pid of the process that asked)
    and its descriptors (then call `become`).

    `allow(argv)` says which commands it runs (others are refused); `idle`: seconds with nothing running after
    which it ends; `watch`: a descriptor whose end of file (or readability) ends it (a test worker's pipe);
    `private`: descriptors of the server's own that a child must not keep (the lock: a child holding it would
    keep a new server from starting once this one ended); `stale()`: what changed on disk of the code it
    forks (`changed_file`), or None — asked before each fork: then it stops listening, as on SIGTERM, and the
    client asks again. A peer in a sandbox is refused whatever it asks (`peers.confinement`)."""

    def __init__(self, listener: socket.socket, *, allow: Callable[[list[str]], bool], idle: float | None = IDLE,
                 watch: int | None = None, private: Sequence[int] = (),
                 on_exit: Callable[[], None] = lambda: None, stale: Callable[[], str | None] = lambda: None) -> None:
        self.listener = listener
        self.allow = allow
        self.idle = idle
        self.watch = watch
        self.private = tuple(private)
        self.on_exit = on_exit
        self.stale = stale
        self.running: dict[int, _Running] = {}
        self.draining = False

    def serve(self) -> tuple[dict[str, Any], list[int]]:
        """Serve until idle, or until SIGTERM (or SIGINT, SIGHUP): then it stops taking commands at once (a new
        server may start) and ends when the ones it runs have ended."""
        if threading.active_count() != 1:  # a check that must hold under `python -O` too: no assert
            raise RuntimeError("the warm server must not fork with threads running")
        os.close(os.pidfd_open(os.getpid()))  # Linux 5.3+: raises here, before anything is forked, where absent
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ, "accept")
        if self.watch is not None:
            selector.register(self.watch, selectors.EVENT_READ, "watch")
        self._wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.private = (*self.private, self._wake_read, wake_write)
        signal.set_wakeup_fd(wake_write)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # each ends it, as below: through the
            signal.signal(signum, lambda *_: None)  # wakeup descriptor, never mid-fork
        selector.register(self._wake_read, selectors.EVENT_READ, "signal")
        gc.collect()
        gc.freeze()  # the children's collections skip what the server made, and so do not copy its pages
        while True:
            if self.draining and not self.running:
                self._end()
            idle = self.idle is not None and not self.running
            events = selector.select(timeout=self.idle if idle else None)
            if not events and idle:
                self._end()
            for key, _ in events:
                if key.data == "signal":
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_read, 512)
                    if not self.draining:
                        self._stop_listening(selector)
                elif key.data == "watch":
                    self._end()
                elif key.data == "accept":
                    forked = self._accept(selector)
                    if forked is not None:
                        return forked
                else:
                    pid, kind = key.data
                    if kind == "exited":
                        self._finish(selector, pid)
                    else:
                        self._hung_up(pid)

    def _end(self) -> NoReturn:
        self.on_exit()
        os._exit(0)

    def _stop_listening(self, selector: selectors.BaseSelector) -> None:
        """Take no more commands: the socket goes, and with the lock a new server may start; whoever connected
        meanwhile is told to ask again (it then finds the new one). The commands running go on to their end."""
        self.draining = True
        selector.unregister(self.listener)
        self.on_exit()  # the socket goes: nobody can connect any more
        self.on_exit = lambda: None  # by then the socket may be a new server's
        self.listener.setblocking(False)
        while self.listener in select.select([self.listener], [], [], 0)[0]:
            self._accept(selector, stopping=True)
        self.listener.close()
        for fd in self.private[:-2]:
            os.close(fd)
        self.private = self.private[-2:]

    def _accept(self, selector: selectors.BaseSelector, *,
                stopping: bool = False) -> tuple[dict[str, Any], list[int]] | None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return None
        fds: list[int] = []
        try:
            request = self._request_of(conn, selector, fds, stopping=stopping)
        except (OSError, ValueError, struct.error, _Again) as exc:
            with contextlib.suppress(OSError):
                conn.settimeout(1.0)
                again = {"retry": True} if isinstance(exc, _Again) else {}
                reply = {"error": str(exc) or type(exc).__name__, **again}
                conn.sendall(json.dumps(reply).encode() + b"\n")
            conn.close()
            for fd in fds:
                os.close(fd)
            return None
        conn.settimeout(None)
        return self._fork(selector, conn, request, fds)

    def _request_of(self, conn: socket.socket, selector: selectors.BaseSelector, fds: list[int], *,
                    stopping: bool) -> dict[str, Any]:
        """The request on `conn`, every check passed: this user's, unconfined, well formed, a command this server
        runs, and the server still serving its build. The descriptors it came with go into `fds` (the caller
        closes them whatever happens). Raises saying why not."""
        pidfd = -1
        try:
            conn.settimeout(10.0)
            peer, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            if uid != os.getuid():
                raise ValueError("the peer is another user")
            pidfd = peers.peer_pidfd(conn, peer)  # now: the process itself, before it could end and its pid be reused
            head, received, _, _ = socket.recv_fds(conn, _LENGTH.size, _DESCRIPTORS)
            fds.extend(received)
            if len(head) != _LENGTH.size:
                raise ValueError("a request starts with its length")
            size = _LENGTH.unpack(head)[0]
            if size > _REQUEST_LIMIT:
                raise ValueError("the request is too long")
            body = _read_exactly(conn, size)  # all of it before any answer: the client then reads the reason
            if (why := peers.peer_confinement(peer, pidfd)) is not None:
                raise ValueError(f"the process that asked (pid {peer}) is in a sandbox — {why} — and a command "
                                 "forked here would run outside it")
            if len(fds) != _DESCRIPTORS:
                raise ValueError("a request is a length and five descriptors (stdin, stdout, stderr, its "
                                 "directory, its environment)")
            _check_environment(fds[4])
            request = {**_checked(json.loads(body)), "peer": peer}
            if not self.allow(request["argv"]):
                raise ValueError(f"not a command this server runs: {request['argv'][:2]}")
            if stopping:
                raise _Again("the server is stopping")
            if (changed := self.stale()) is not None:
                self._stop_listening(selector)
                raise _Again(f"its code changed on disk since it started: {changed}")
            return request
        finally:
            if pidfd >= 0:
                os.close(pidfd)

    def _fork(self, selector: selectors.BaseSelector, conn: socket.socket, request: dict[str, Any],
              fds: list[int]) -> tuple[dict[str, Any], list[int]] | None:
        """Fork the command's child: in it, return the request (this server's sockets and descriptors closed);
        here, follow the child and tell the client its pid."""
        pid = os.fork()
        if pid == 0:
            selector.close()
            for sock in (self.listener, conn, *(r.conn for r in self.running.values())):
                sock.close()
            for running in self.running.values():
                os.close(running.pidfd)
            for fd in (*self.private, *([self.watch] if self.watch is not None else [])):
                os.close(fd)
            request["env"] = _environment_or_exit(fds)
            return request, fds[:4]
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.running[pid] = _Running(conn, pidfd)
        selector.register(pidfd, selectors.EVENT_READ, (pid, "exited"))
        selector.register(conn, selectors.EVENT_READ, (pid, "conn"))
        with contextlib.suppress(OSError):
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        return None

    def _finish(self, selector: selectors.BaseSelector, pid: int) -> None:
        running = self.running.pop(pid)
        selector.unregister(running.pidfd)
        selector.unregister(running.conn)
        os.close(running.pidfd)
        _, status = os.waitpid(pid, 0)
        with contextlib.suppress(OSError):
            running.conn.sendall(json.dumps({"status": status}).encode() + b"\n")
        running.conn.close()

    def _hung_up(self, pid: int) -> None:
        """The stand-in sent something or went away: it is killed or gone, so the command goes too (the
        protocol has nothing for it to send)."""
        running = self.running[pid]
        with contextlib.suppress(OSError):
            if running.conn.recv(1, socket.MSG_PEEK):
                running.conn.recv(4096)
                return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _check_environment(fd: int) -> None:
    """The request's environment is a sealed memfd (so it cannot grow once checked) of at most 1 MB. The server
    does not read it: only the child it forks does (`_environment_or_exit`)."""
    info = os.fstat(fd)
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS) if stat.S_ISREG(info.st_mode) else 0
    except OSError:
        seals = 0
    if seals & _SEALS != _SEALS:
        raise ValueError("the environment must come in a sealed memfd")
    if info.st_size > _REQUEST_LIMIT:
        raise ValueError("the request is too long")


def _environment_or_exit(fds: Sequence[int]) -> dict[str, str]:
    """In the forked child: the command's environment, read from its memfd (`fds[4]`, closed then). One that is
    not a map of names to strings ends the child with status 2, saying so on the command's stderr."""
    try:
        data = b""
        while len(data) <= _REQUEST_LIMIT and (chunk := os.pread(fds[4], 1 << 16, len(data))):
            data += chunk
        if len(data) > _REQUEST_LIMIT:
            raise ValueError("it is over 1 MB")
        env = json.loads(data)
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) and k and "=" not in k
                                                and "\0" not in k + v for k, v in env.items()):
            raise ValueError("env must map names to strings")
    except (OSError, ValueError) as exc:
        with contextlib.suppress(OSError):
            os.write(fds[2], f"yeetui: the warm server cannot read the command's environment: {exc}\n".encode())
        os._exit(2)
    finally:
        os.close(fds[4])
    return env


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ValueError("the client went away mid-request")
        data += chunk
    return data


def _checked(request: object) -> dict[str, Any]:
    """A request as the server trusts it: argv a list of strings (the arguments after the program's name: none
    at all is a command too, which the server's `allow` may refuse), umask a mode. (The environment comes in a
    descriptor of its own.)"""
    if not isinstance(request, dict):
        raise ValueError("a request is a JSON object")
    argv, umask = request.get("argv"), request.get("umask")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a list of strings")
    if not isinstance(umask, int) or not 0 <= umask <= 0o777:
        raise ValueError("umask must be a mode")
    argv0 = request.get("argv0")
    return {"argv": argv, "umask": umask, "argv0": argv0 if isinstance(argv0, str) else ""}


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


def listen(where: Place, *, ready: Callable[[], None] = lambda: None) -> tuple[socket.socket, int] | None:
    """Take the lock of `where`, call `ready` (the imports: clients that find the lock held wait meanwhile), and
    listen on its socket: (the listener, the lock's descriptor, held while this process lives); None when
    another server holds the lock."""
    while True:
        lock = os.open(where.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            return None
        if _is_at(lock, where.lock):
            break
        os.close(lock)  # removed as stale (`remove_stale`) after it was opened: the lock is the new file's
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    ready()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(where.socket)  # a server that died left it; the lock says none serves it now
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(os.fspath(where.socket))
    finally:
        os.umask(old)
    listener.listen(64)
    return listener, lock


def _is_at(fd: int, path: Path) -> bool:
    """Whether `path` (not followed) is still the file open at `fd`."""
    try:
        there = os.lstat(path)
    except FileNotFoundError:
        return False
    info = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (info.st_dev, info.st_ino)


_LEFT = re.compile(r"warm-([0-9a-f]{16})\.(sock|lock|log)")


def remove_stale(folder: Path, *, keep: str) -> list[str]:
    """The files of other builds' servers that have ended (an upgrade or an edit starts a new one, and the old
    one's socket, lock and log stayed): removed, but those of `keep` (this server's build) and of any server
    still holding its lock. Each build's lock is taken before its files go, and stays taken until they have:
    a server of that build starting meanwhile finds it held and leaves serving to another, or takes the new
    lock file (`listen`). Only regular files and sockets of this user, named as servers name them, are
    removed; nothing is followed through a symlink. The names removed."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    builds = {found[1] for name in names if (found := _LEFT.fullmatch(name)) and found[1] != keep}
    removed: list[str] = []
    for build in sorted(builds):
        lock_path = folder / f"warm-{build}.lock"
        try:
            lock = os.open(lock_path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # no lock (a server of that build about to start?), or not a file: left alone
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if not _is_at(lock, lock_path) or os.fstat(lock).st_uid != os.getuid():
                    continue
            except OSError:  # BlockingIOError: that server lives
                continue
            for suffix in ("sock", "log", "lock"):  # the lock last: it guards the others
                path = folder / f"warm-{build}.{suffix}"
                with contextlib.suppress(OSError):
                    info = os.lstat(path)
                    if info.st_uid == os.getuid() and (stat.S_ISREG(info.st_mode) or stat.S_ISSOCK(info.st_mode)):
                        os.unlink(path)
                        removed.append(path.name)
        finally:
            os.close(lock)
    return removed


def remove(where: Place) -> None:
    """Stop serving at `where`: the socket goes. Only the lock's holder calls it, so it is this server's."""
    with contextlib.suppress(OSError):
        os.unlink(where.socket)
