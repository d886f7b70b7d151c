"""The warm server: one single-threaded process that has imported what a command needs, and forks a child for
each command asked of it.

It forks outside any sandbox, so it refuses a peer that runs confined (`peers.confinement`: no_new_privs, a
seccomp filter it has not, a pid namespace of its own, capabilities dropped); it checks each peer's uid and
every request (`protocol`); it stops listening when the code it forks changed on disk (`stale`), telling the
client to ask again; and it ends after `idle` seconds with no command running. Single-threaded, since forking
a process with threads copies locks some other thread holds.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import selectors
import signal
import socket
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from yeetui.system import peers
from yeetui.system.warm.protocol import (
    DESCRIPTORS,
    LENGTH,
    REQUEST_LIMIT,
    check_environment,
    checked_request,
    environment_or_exit,
    read_exactly,
)

IDLE = 600.0
"""Seconds a server with nothing running waits for the next command before it ends."""


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
            head, received, _, _ = socket.recv_fds(conn, LENGTH.size, DESCRIPTORS)
            fds.extend(received)
            if len(head) != LENGTH.size:
                raise ValueError("a request starts with its length")
            size = LENGTH.unpack(head)[0]
            if size > REQUEST_LIMIT:
                raise ValueError("the request is too long")
            body = read_exactly(conn, size)  # all of it before any answer: the client then reads the reason
            if (why := peers.peer_confinement(peer, pidfd)) is not None:
                raise ValueError(f"the process that asked (pid {peer}) is in a sandbox — {why} — and a command "
                                 "forked here would run outside it")
            if len(fds) != DESCRIPTORS:
                raise ValueError("a request is a length and five descriptors (stdin, stdout, stderr, its "
                                 "directory, its environment)")
            check_environment(fds[4])
            request = {**checked_request(json.loads(body)), "peer": peer}
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
            request["env"] = environment_or_exit(fds)
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
