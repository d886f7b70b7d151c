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

The server side runs as `python -m tests.integration.zygote SOCKET`: yeetui's own warm server
(`yeetui.system.warm.server.WarmServer`, which forks the workers of panes and detached runs), here for any command,
ending when its stdin — the test worker's pipe — closes.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

_ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__" and sys.argv[1:2] == ["--launch"]:
    sys.path.insert(0, str(_ROOT))  # the launcher runs without site (-S): yeetui is found from the checkout

# yeetui's warm start: standard library only, light enough for the launcher
from yeetui.system.warm.child import become, run_as_program  # noqa: E402
from yeetui.system.warm.client import ask, relay  # noqa: E402
from yeetui.system.warm.protocol import Replies  # noqa: E402
from yeetui.system.warm.server import WarmServer  # noqa: E402

# --- the server: a warm interpreter that forks commands ---------------------------------------------------

def _warm() -> None:
    """Import what the command imports, so that no child pays for it: the TUI too (the crash matrix runs it in
    tmux, `ZYGOTE.argv()`). Not litellm: the tests about lazy imports need it absent, and few commands use it."""
    import anthropic  # noqa: F401

    import yeetui.cli.common
    import yeetui.providers.anthropic
    import yeetui.runtime  # (yeetui.cli.common is light: `yeetui` alone sets up its logging with it)
    import yeetui.tui.app  # noqa: F401


def _become_command(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: take the command's stdio, directory, environment and arguments (in the server's
    process group, as a child of the test worker would be), then run `python -m yeetui` the way the
    interpreter would."""
    import runpy

    become(request, fds, own_session=False)
    sys.path[0] = os.getcwd()  # `python -m` puts the working directory first

    def program() -> None:
        runpy.run_module("yeetui", run_name="__main__", alter_sys=True)

    run_as_program(program)


def _server_main(path: str) -> None:
    _warm()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    server = WarmServer(listener, allow=lambda _argv: True, idle=None, watch=sys.stdin.fileno())
    print("ready", flush=True)
    request, fds = server.serve()
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

    def start(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], stdout: int | None = None,
              stderr: int | None = None, text: bool = False) -> Forked:
        """`subprocess.Popen(["python", "-m", "yeetui", *argv], stdin=DEVNULL, stdout=…, stderr=…, text=…)`,
        forked from the warm server: `stdout` and `stderr` are `subprocess.PIPE`, `subprocess.DEVNULL` or None
        (this process's)."""
        path = self._ensure()
        ours: dict[int, IO[Any]] = {}
        theirs: list[int] = [os.open(os.devnull, os.O_RDONLY)]
        for target, how in ((1, stdout), (2, stderr)):
            if how == subprocess.PIPE:
                read_end, write_end = os.pipe()
                ours[target] = open(read_end, "r" if text else "rb")  # the caller closes it, as with Popen
                theirs.append(write_end)
            elif how == subprocess.DEVNULL:
                theirs.append(os.open(os.devnull, os.O_WRONLY))
            else:
                theirs.append(os.dup(target))
        try:
            conn = ask(path, argv, cwd=str(cwd), env=env, stdio=(theirs[0], theirs[1], theirs[2]))
        finally:
            for fd in theirs:
                os.close(fd)
        return Forked(conn, ["yeetui", *argv], ours.get(1), ours.get(2))

    def run(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
            timeout: float) -> subprocess.CompletedProcess[str]:
        """`subprocess.run(["python", "-m", "yeetui", *argv], capture_output=True, text=True,
        stdin=DEVNULL, timeout=timeout)`, forked from the warm server."""
        path = self._ensure()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            conn = ask(path, argv, cwd=str(cwd), env=env, stdio=(null, out_write, err_write))
        finally:
            for fd in (null, out_write, err_write):
                os.close(fd)
        return _collect(conn, out_read, err_read, ["yeetui", *argv], timeout)


class Forked:
    """A command forked from the warm server, for a test that needs it running while it acts: the part of
    `subprocess.Popen` the tests use. `pid` is the command's own (a signal or `kill -9` reaches yeetui itself,
    not a stand-in); its exit status comes over the server's connection, as the server reaps it."""

    def __init__(self, conn: socket.socket, args: list[str], stdout: IO[Any] | None, stderr: IO[Any] | None) -> None:
        self.args = args
        self.stdout, self.stderr = stdout, stderr
        self.returncode: int | None = None
        self._conn = conn
        self._replies = Replies()
        while self._replies.pid is None:
            data = conn.recv(4096)
            if not data:
                raise RuntimeError(f"the warm yeetui server did not fork {args}")
            self._replies.feed(data)
            if self._replies.error is not None:
                raise RuntimeError(f"the warm yeetui server refused {args}: {self._replies.error}")
        self.pid: int = self._replies.pid

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._conn], [], [], 0)[0]:
            self._read()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            if select.select([self._conn], [], [], left)[0]:
                self._read()
        return self.returncode

    def _read(self) -> None:
        data = self._conn.recv(4096)
        self._replies.feed(data)
        if self._replies.status is not None:
            self.returncode = os.waitstatus_to_exitcode(self._replies.status)
        elif not data:
            raise RuntimeError(f"the warm yeetui server lost {self.args} (pid {self.pid})")
        if self.returncode is not None:
            self._conn.close()

    def communicate(self, timeout: float | None = None) -> tuple[Any, Any]:
        """Read stdout and stderr to their end and close them, then wait (`TimeoutExpired` if that takes longer
        than `timeout`; the command goes on)."""
        read: dict[str, Any] = {}

        def drain(name: str, pipe: IO[Any]) -> None:
            with pipe:
                read[name] = pipe.read()

        readers = [threading.Thread(target=drain, args=(name, pipe), daemon=True)
                   for name, pipe in (("out", self.stdout), ("err", self.stderr)) if pipe is not None]
        deadline = None if timeout is None else time.monotonic() + timeout
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(None if deadline is None else max(deadline - time.monotonic(), 0))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        self.wait(None if deadline is None else max(deadline - time.monotonic(), 0.01))
        return read.get("out"), read.get("err")

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _collect(conn: socket.socket, out_read: int, err_read: int, args: list[str],
             timeout: float) -> subprocess.CompletedProcess[str]:
    """Read the child's output until both pipes close and its exit status, as `subprocess.run` does; at the
    timeout, kill it, wait for its status only, and raise `TimeoutExpired` with what it wrote."""
    chunks: dict[int, list[bytes]] = {out_read: [], err_read: []}
    replies = Replies()
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
    """The launcher `Zygote.argv` starts: its stdio becomes the command's, then it waits for the command, passes
    the signals it gets on, and ends as the command ended (`yeetui.system.warm.client.relay`)."""
    relay(ask(path, args, env=os.environ))
    sys.exit(1)  # refused (it says why)


ZYGOTE = Zygote()

if __name__ == "__main__":
    if sys.argv[1] == "--launch":
        _launch(sys.argv[2], sys.argv[3:])
    else:
        _server_main(sys.argv[1])
