"""Warm starts: a process that has imported what a command needs once, and forks a child for each command.

A subagent in a pane or a detached worker is a `yeetui agent run` process of its own. Started from scratch it
spends most of its first two seconds importing (the Anthropic SDK alone is 1.7–1.9 s of CPU on a 2-core
machine) before it reads its run. A warm server (`WarmServer`, one per user and yeetui build) pays that once;
each worker command then connects to it (`forward`), hands over its stdin, stdout, stderr, working directory,
umask and environment, and the server forks a child that becomes the command (`become`) — a fork costs a few
milliseconds. The process that connected stays as the command's stand-in: it passes on the signals it gets
(`relay`) and ends as the command ended, with its exit status or its signal; if it is killed outright the
server kills the command too. So whoever started it — tmux, `subprocess`, a test — sees what it saw before.

The server is single-threaded (forking a process with threads copies locks some other thread holds), listens
on a socket in a private directory of this user (0700, checked, and each peer's uid checked too), holds an
exclusive lock on a file beside it while it lives (so two never serve one build), and ends after `idle`
seconds with no command running. The build key names the interpreter, its search path and the modification
times of yeetui's sources and of the folders packages are installed in: an upgrade or an edit starts a new
server instead of forking stale code.
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
import selectors
import signal
import socket
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

from yeetui.system.private_folder import user_folder

_LENGTH = struct.Struct("!I")
_REQUEST_LIMIT = 1 << 20
"""Bytes a request may have (its environment is most of it)."""
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
    process's directory) with `env`; the connection then brings its replies (`Replies`). Raises OSError when
    nothing serves there."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    directory = os.open(cwd or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        conn.connect(os.fspath(path))
        umask = os.umask(0o022)
        os.umask(umask)
        header = json.dumps({"argv": list(argv), "env": dict(env), "umask": umask,
                             "argv0": sys.argv[0] if sys.argv else ""}).encode()
        socket.send_fds(conn, [_LENGTH.pack(len(header))], [*stdio, directory])
        conn.sendall(header)
    except BaseException:
        conn.close()
        raise
    finally:
        os.close(directory)
    return conn


class Replies:
    """The server's replies on a connection, one JSON line each: `{"pid": …}` once forked, `{"status": …}` (a
    wait status) once the command ended, `{"error": …}` when it was refused."""

    def __init__(self) -> None:
        self._pending = b""
        self.pid: int | None = None
        self.status: int | None = None
        self.error: str | None = None

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


def forward(argv: Sequence[str], where: Place, *, start_server: Callable[[], Any], patience: float = 30.0) -> None:
    """Run `argv` as a child of the warm server at `where` and end this process as it ended; returns (having
    done nothing) when no server can take it, so the caller runs the command itself. A server that is not
    running is started (`start_server`, which returns its `subprocess.Popen`) and waited for up to
    `patience` seconds: it imports what the command would, so waiting costs no more than running cold."""
    deadline = time.monotonic() + patience
    started: Any = None
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
        except OSError:
            return
        relay(conn)
        return


def relay(conn: socket.socket) -> None:
    """Be the command's stand-in: pass the signals this process gets on to it, wait for it, and end as it
    ended (by the same signal, or with its exit status). Returns only when the server refused the command
    (the reason on stderr), with this process as it was: the caller may run the command itself."""
    replies = Replies()
    caught: list[int] = []  # signals that came before the command's pid: passed on once it is known

    def pass_on(signum: int, _frame: object) -> None:
        if replies.pid is None:
            caught.append(signum)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(replies.pid, signum)

    def stop(_signum: int, _frame: object) -> None:  # ^Z: stop the command, then this process as a shell expects
        if replies.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(replies.pid, signal.SIGSTOP)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)
        signal.signal(signal.SIGTSTP, stop)

    before = {signum: signal.signal(signum, pass_on) for signum in _PASSED}
    before[signal.SIGTSTP] = signal.signal(signal.SIGTSTP, stop)
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
            sys.stderr.write(f"yeetui: the warm server refused the command ({replies.error}); running it here\n")
            conn.close()
            for passed, handler in before.items():
                signal.signal(passed, handler)
            for early in caught:
                signal.raise_signal(early)
            return
        if replies.pid is not None and errors < 0:
            errors = os.dup(2)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):  # the command alone holds them now: its output closing is the end of file a
                os.dup2(null, fd)  # reader sees
        while caught and replies.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(replies.pid, caught.pop(0))
    errors = 2 if errors < 0 else errors
    if replies.status is None:
        os.write(errors, b"yeetui: the warm server that ran this command went away\n")
        os._exit(1)
    if os.WIFSIGNALED(replies.status):
        signal.signal(os.WTERMSIG(replies.status), signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [os.WTERMSIG(replies.status)])
        os.kill(os.getpid(), os.WTERMSIG(replies.status))
    os._exit(os.waitstatus_to_exitcode(replies.status) & 0xFF)


# --- the server side -------------------------------------------------------------------------------------

@dataclass
class _Running:
    conn: socket.socket
    pidfd: int


class WarmServer:
    """Forks a child for each command asked of it on `listener`; `serve` returns only in such a child, with
    the command's request (`argv`, `env`, `umask`, `argv0`, and `peer`: the pid of the process that asked)
    and its descriptors (then call `become`).

    `allow(argv)` says which commands it runs (others are refused); `idle`: seconds with nothing running after
    which it ends; `watch`: a descriptor whose end of file (or readability) ends it (a test worker's pipe);
    `private`: descriptors of the server's own that a child must not keep (the lock: a child holding it would
    keep a new server from starting once this one ended)."""

    def __init__(self, listener: socket.socket, *, allow: Callable[[list[str]], bool], idle: float | None = IDLE,
                 watch: int | None = None, private: Sequence[int] = (),
                 on_exit: Callable[[], None] = lambda: None) -> None:
        self.listener = listener
        self.allow = allow
        self.idle = idle
        self.watch = watch
        self.private = tuple(private)
        self.on_exit = on_exit
        self.running: dict[int, _Running] = {}

    def serve(self) -> tuple[dict[str, Any], list[int]]:
        """Serve until idle, or until SIGTERM (or SIGINT, SIGHUP): then it stops taking commands at once (a new
        server may start) and ends when the ones it runs have ended."""
        assert threading.active_count() == 1, "the warm server must not fork with threads running"
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
        draining = False
        while True:
            if draining and not self.running:
                self._end()
            idle = self.idle is not None and not self.running
            events = selector.select(timeout=self.idle if idle else None)
            if not events and idle:
                self._end()
            for key, _ in events:
                if key.data == "signal":
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake_read, 512)
                    if not draining:
                        draining = True
                        selector.unregister(self.listener)
                        self.on_exit()  # the socket goes, and with the lock a new server may start
                        self.on_exit = lambda: None  # by then the socket may be a new server's
                        self.listener.close()
                        for fd in self.private[:-2]:
                            os.close(fd)
                        self.private = self.private[-2:]
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

    def _accept(self, selector: selectors.BaseSelector) -> tuple[dict[str, Any], list[int]] | None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return None
        fds: list[int] = []
        try:
            conn.settimeout(10.0)
            peer, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            if uid != os.getuid():
                raise ValueError("the peer is another user")
            head, fds, _, _ = socket.recv_fds(conn, _LENGTH.size, 4)
            if len(head) != _LENGTH.size:
                raise ValueError("a request starts with its length")
            size = _LENGTH.unpack(head)[0]
            if size > _REQUEST_LIMIT:
                raise ValueError("the request is too long")
            body = _read_exactly(conn, size)  # all of it before any answer: the client then reads the reason
            if len(fds) != 4:
                raise ValueError("a request is a length and four descriptors")
            request = {**_checked(json.loads(body)), "peer": peer}
            if not self.allow(request["argv"]):
                raise ValueError(f"not a command this server runs: {request['argv'][:2]}")
        except (OSError, ValueError, struct.error) as exc:
            with contextlib.suppress(OSError):
                conn.settimeout(1.0)
                conn.sendall(json.dumps({"error": str(exc) or type(exc).__name__}).encode() + b"\n")
            conn.close()
            for fd in fds:
                os.close(fd)
            return None
        conn.settimeout(None)
        pid = os.fork()
        if pid == 0:
            selector.close()
            for sock in (self.listener, conn, *(r.conn for r in self.running.values())):
                sock.close()
            for running in self.running.values():
                os.close(running.pidfd)
            for fd in (*self.private, *([self.watch] if self.watch is not None else [])):
                os.close(fd)
            return request, fds
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
    at all is a command too, which the server's `allow` may refuse), env a map of strings, umask a mode."""
    if not isinstance(request, dict):
        raise ValueError("a request is a JSON object")
    argv, env, umask = request.get("argv"), request.get("env"), request.get("umask")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a list of strings")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) and k and "=" not in k
                                            and "\0" not in k + v for k, v in env.items()):
        raise ValueError("env must map names to strings")
    if not isinstance(umask, int) or not 0 <= umask <= 0o777:
        raise ValueError("umask must be a mode")
    argv0 = request.get("argv0")
    return {"argv": argv, "env": env, "umask": umask, "argv0": argv0 if isinstance(argv0, str) else ""}


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
    lock = os.open(where.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        return None
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


def remove(where: Place) -> None:
    """Stop serving at `where`: the socket goes. Only the lock's holder calls it, so it is this server's."""
    with contextlib.suppress(OSError):
        os.unlink(where.socket)
