"""What travels on a warm server's socket: a request, checked, and the replies to it.

A request is a 4-byte length with five descriptors (stdin, stdout, stderr, the working directory and the
environment), then that many bytes of JSON header (`argv`, `umask`, `argv0`). The environment comes in a sealed
memfd of its own (`sealed`): the server checks its seals and size (`check_environment`) and never reads it;
only the child it forks does (`environment_or_exit`). The replies are JSON lines (`Replies`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import struct
from collections.abc import Sequence
from typing import Any

LENGTH = struct.Struct("!I")
REQUEST_LIMIT = 1 << 20
"""Bytes a request may have, and its environment."""
DESCRIPTORS = 5
"""What a request brings: stdin, stdout, stderr, its working directory and its environment (a sealed memfd)."""
SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def sealed(data: bytes) -> int:
    """A memfd holding `data`, sealed: nobody can change it once the server has checked its size."""
    fd = os.memfd_create("yeetui-environment", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
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


def check_environment(fd: int) -> None:
    """The request's environment is a sealed memfd (so it cannot grow once checked) of at most 1 MB. The server
    does not read it: only the child it forks does (`environment_or_exit`)."""
    info = os.fstat(fd)
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS) if stat.S_ISREG(info.st_mode) else 0
    except OSError:
        seals = 0
    if seals & SEALS != SEALS:
        raise ValueError("the environment must come in a sealed memfd")
    if info.st_size > REQUEST_LIMIT:
        raise ValueError("the request is too long")


def environment_or_exit(fds: Sequence[int]) -> dict[str, str]:
    """In the forked child: the command's environment, read from its memfd (`fds[4]`, closed then). One that is
    not a map of names to strings ends the child with status 2, saying so on the command's stderr."""
    try:
        data = b""
        while len(data) <= REQUEST_LIMIT and (chunk := os.pread(fds[4], 1 << 16, len(data))):
            data += chunk
        if len(data) > REQUEST_LIMIT:
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


def read_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ValueError("the client went away mid-request")
        data += chunk
    return data


def checked_request(request: object) -> dict[str, Any]:
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
