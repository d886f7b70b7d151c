"""Refuse every socket connection that is not to loopback or a Unix socket."""

from __future__ import annotations

import ipaddress
import socket

_installed = False


class NetworkAccessBlocked(RuntimeError):
    pass


def _is_loopback(host: object) -> bool:
    if not isinstance(host, str):
        return False
    if host in ("localhost", "") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _check(address: object) -> None:
    if isinstance(address, tuple) and address and not _is_loopback(address[0]):
        raise NetworkAccessBlocked(f"tests may not reach the network: connection to {address!r} blocked")


def install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check(address)
        return real_connect(self, address)

    def connect_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and not _is_loopback(name):
            raise NetworkAccessBlocked(f"tests may not reach the network: lookup of {name!r} blocked")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
