"""A warm start for the real `yeetui` command: one process per test worker that has imported yeetui and the
Anthropic SDK once, and forks a child for each command a test runs.

Why: the suite runs the command a few hundred times, and `import anthropic` (SDK 2.x) alone costs 2.2–2.5 s of
CPU on the 2-core machines it runs on; a fork of a process that has paid it costs a few milliseconds.

What stays real: each command is its own process, with its own pid, working directory, environment, stdin,
stdout, stderr and exit status; it runs `python -m yeetui`'s `__main__` from the top with the arguments given,
exits through the interpreter's normal exit (atexit handlers, stdio flushed, threads joined), and a test's
timeout kills it. What it skips is the interpreter's start-up and the imports; the tests about those
(`test_hygiene.py`, `tests/unit/providers/test_imports.py`) start a fresh interpreter, and so does
`run_yeetui(..., fresh=True)`.

The server side runs as `python -m tests.integration.zygote SOCKET`. It stays single-threaded — forking a
process with threads copies locks some other thread holds — and waits on the socket, its children (SIGCHLD
through a wakeup pipe) and its stdin, whose end of file means the test worker is gone.
"""

from __future__ import annotations

import atexit
import gc
import io
import json
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

_LENGTH = struct.Struct("!Q")
_ROOT = Path(__file__).resolve().parents[2]


# --- the server: a warm interpreter that forks commands ---------------------------------------------------

def _warm() -> None:
    """Import what the command imports, so that no child pays for it. Not litellm (the tests about lazy
    imports need it absent, and few commands use it) and not Textual (the TUI runs in tmux, from a fresh
    interpreter)."""
    import anthropic  # noqa: F401

    import yeetui.cli.common
    import yeetui.providers.anthropic  # noqa: F401


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("client went away mid-request")
        data += chunk
    return data


def _become_command(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: take the command's stdio, directory, environment and arguments, then run
    `python -m yeetui` the way the interpreter would."""
    import runpy

    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    encoding, errors = sys.stdout.encoding, sys.stdout.errors
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # gettempdir() caches TMPDIR as the server saw it
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding=encoding, errors=errors)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=encoding, errors=errors,
                                  line_buffering=os.isatty(1))
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding=encoding, errors="backslashreplace",
                                  line_buffering=True)
    # sys.__stdout__ and the others stay the server's objects: empty, on descriptors 0-2, which now are the
    # command's
    sys.argv = [sys.executable, *request["argv"]]
    sys.path[0] = os.getcwd()  # `python -m` puts the working directory first
    code = 0
    try:
        runpy.run_module("yeetui", run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    _exit(code)


def _exit_code(code: object) -> int:
    """What the interpreter makes of `SystemExit(code)`: None is 0, an int is itself, anything else is
    printed to stderr and means 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _exit(code: int) -> None:
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


def _serve(path: str) -> tuple[dict[str, Any], list[int]]:
    """Answer requests until the worker goes; returns only in a forked child, with its request."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_read, selectors.EVENT_READ, "children")
    selector.register(sys.stdin, selectors.EVENT_READ, "worker")
    waiting: dict[int, socket.socket] = {}  # child pid -> the connection that asked for it
    assert threading.active_count() == 1, "the server must not fork with threads running"
    gc.collect()
    gc.freeze()  # the children's collections skip what the server made, and so do not copy its pages
    print("ready", flush=True)
    while True:
        for key, _ in selector.select():
            if key.data == "worker":
                os._exit(0)  # the worker is gone (end of file) or told us to go
            if key.data == "children":
                _drain(wake_read)
                _reap(waiting)
                continue
            conn, _ = listener.accept()
            try:
                head, fds, _, _ = socket.recv_fds(conn, _LENGTH.size, 3)
                request = json.loads(_read_exactly(conn, _LENGTH.unpack(head)[0]))
            except (OSError, ValueError, struct.error):
                conn.close()
                continue
            pid = os.fork()
            if pid == 0:
                selector.close()
                for sock in (listener, conn, *waiting.values()):
                    sock.close()
                os.close(wake_read)
                os.close(wake_write)
                return request, fds
            for fd in fds:
                os.close(fd)
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            waiting[pid] = conn
            _reap(waiting)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _reap(waiting: dict[int, socket.socket]) -> None:
    while waiting:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = waiting.pop(pid, None)
        if conn is not None:
            try:
                conn.sendall(json.dumps({"status": status}).encode() + b"\n")
            except OSError:
                pass  # the test gave up waiting
            conn.close()


def _server_main(path: str) -> None:
    _warm()
    request, fds = _serve(path)
    _become_command(request, fds)


# --- the client: what `run_yeetui` calls --------------------------------------------------------------------

class Zygote:
    """The worker's warm server, started on first use and restarted if it has died."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._socket = ""

    @property
    def server_pid(self) -> int | None:
        """The warm server's pid while it runs."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def _ensure(self) -> str:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                if self._process is not None:  # it died (a test killed its process group, say): start another
                    for pipe in (self._process.stdin, self._process.stdout):
                        if pipe is not None:
                            pipe.close()
                folder = tempfile.mkdtemp(prefix="yz-", dir="/tmp")  # AF_UNIX paths are short
                self._socket = os.path.join(folder, "s")
                env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
                self._process = subprocess.Popen([sys.executable, "-m", "tests.integration.zygote", self._socket],
                                                 cwd=_ROOT, env=env, stdin=subprocess.PIPE,
                                                 stdout=subprocess.PIPE)
                assert self._process.stdout is not None
                ready = self._process.stdout.readline()
                if ready.strip() != b"ready":
                    raise RuntimeError(f"the warm yeetui server did not start (said {ready!r})")
                atexit.register(self._process.kill)
                atexit.register(shutil.rmtree, folder, True)
            return self._socket

    def argv(self, *args: str) -> list[str]:
        """A command line that runs `yeetui ARGS` forked from the warm server, for code that starts a program
        itself (the ACP and MCP SDKs' spawn). A small launcher (Python without site, standard library only)
        hands its stdin, stdout, stderr, directory and environment to the server, passes SIGTERM, SIGINT and
        SIGHUP on to the command, and ends as the command ended."""
        return [sys.executable, "-S", __file__, "--launch", self._ensure(), *args]

    def run(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
            timeout: float) -> subprocess.CompletedProcess[str]:
        """`subprocess.run(["python", "-m", "yeetui", *argv], capture_output=True, text=True,
        stdin=DEVNULL, timeout=timeout)`, forked from the warm server."""
        path = self._ensure()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            conn = _ask(path, argv, cwd=str(cwd), env=env, stdio=(null, out_write, err_write))
        finally:
            for fd in (null, out_write, err_write):
                os.close(fd)
        return _collect(conn, out_read, err_read, ["yeetui", *argv], timeout)


def _ask(path: str, argv: Sequence[str], *, cwd: str, env: Mapping[str, str],
         stdio: tuple[int, int, int]) -> socket.socket:
    """Ask the server at `path` to run `yeetui ARGV` on these stdin, stdout and stderr; the connection then
    brings its replies (`_Replies`)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    header = json.dumps({"argv": list(argv), "cwd": cwd, "env": dict(env)}).encode()
    socket.send_fds(conn, [_LENGTH.pack(len(header))], list(stdio))
    conn.sendall(header)
    return conn


class _Replies:
    """The server's replies on a connection, one JSON line each: `{"pid": …}` once forked, `{"status": …}`
    (a wait status) once the command has ended."""

    def __init__(self) -> None:
        self._pending = b""
        self.pid: int | None = None
        self.status: int | None = None

    def feed(self, data: bytes) -> None:
        *lines, self._pending = (self._pending + data).split(b"\n")
        for line in lines:
            reply = json.loads(line)
            self.pid = reply.get("pid", self.pid)
            self.status = reply.get("status", self.status)


def _collect(conn: socket.socket, out_read: int, err_read: int, args: list[str],
             timeout: float) -> subprocess.CompletedProcess[str]:
    """Read the child's output until both pipes close and its exit status, as `subprocess.run` does; at the
    timeout, kill it, wait for its status only, and raise `TimeoutExpired` with what it wrote."""
    chunks: dict[int, list[bytes]] = {out_read: [], err_read: []}
    replies = _Replies()
    deadline = time.monotonic() + timeout
    timed_out = killed = False
    selector = selectors.DefaultSelector()
    for fd in (out_read, err_read):
        selector.register(fd, selectors.EVENT_READ)
    selector.register(conn, selectors.EVENT_READ)
    try:
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0 and not timed_out:
                timed_out = True
                for fd in (out_read, err_read):
                    if fd in selector.get_map():
                        selector.unregister(fd)
            if timed_out and replies.pid is not None and not killed:
                killed = True
                try:
                    os.kill(replies.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for key, _ in selector.select(timeout=None if timed_out else max(left, 0.0)):
                if key.fileobj is conn:
                    data = conn.recv(4096)
                    if not data:
                        selector.unregister(conn)
                    replies.feed(data)
                    continue
                assert isinstance(key.fileobj, int)
                data = os.read(key.fileobj, 65536)
                if data:
                    chunks[key.fileobj].append(data)
                else:
                    selector.unregister(key.fileobj)
    finally:
        selector.close()
        conn.close()
        os.close(out_read)
        os.close(err_read)
    stdout, stderr = (_text(b"".join(chunks[fd])) for fd in (out_read, err_read))
    if timed_out:
        raise subprocess.TimeoutExpired(args, timeout, output=stdout, stderr=stderr)
    if replies.status is None:
        raise RuntimeError(f"the warm yeetui server lost {args} (pid {replies.pid})")
    return subprocess.CompletedProcess(args, os.waitstatus_to_exitcode(replies.status), stdout, stderr)


def _text(data: bytes) -> str:
    """Bytes as `subprocess.run(text=True)` returns them: decoded, newlines universal."""
    return data.decode("utf-8", errors="strict").replace("\r\n", "\n").replace("\r", "\n")


def _launch(path: str, args: list[str]) -> None:
    """The launcher `Zygote.argv` starts: its stdio becomes the command's, then it waits for the command."""
    replies = _Replies()
    caught: list[int] = []  # signals that came before the command's pid: passed on once it is known

    def pass_on(signum: int, _frame: object) -> None:
        if replies.pid is None:
            caught.append(signum)
        else:
            os.kill(replies.pid, signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, pass_on)
    conn = _ask(path, args, cwd=os.getcwd(), env=os.environ, stdio=(0, 1, 2))
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the command alone holds them now: its stdout closing is the end of file the caller sees
        os.dup2(null, fd)
    while replies.status is None:
        data = conn.recv(4096)
        if not data:
            os._exit(1)  # the server went away
        replies.feed(data)
        while caught and replies.pid is not None:
            os.kill(replies.pid, caught.pop(0))
    if os.WIFSIGNALED(replies.status):  # end the same way, as a shell or an SDK would see it
        signal.signal(os.WTERMSIG(replies.status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(replies.status))
    os._exit(os.waitstatus_to_exitcode(replies.status) & 0xFF)


ZYGOTE = Zygote()

if __name__ == "__main__":
    if sys.argv[1] == "--launch":
        _launch(sys.argv[2], sys.argv[3:])
    else:
        _server_main(sys.argv[1])
