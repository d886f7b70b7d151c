"""`yeetui mcp serve --http`: the MCP server over streamable HTTP, for clients that cannot start it on stdio.

Who may reach it: every request must name this server in its Host header (and in its Origin, when it has one:
`_HostGuard`, against DNS rebinding), and a request to the MCP endpoint must carry `Authorization: Bearer
<token>` — checked by the MCP SDK's own auth middleware with `TokenCheck` (constant time), so a client without
it gets the SDK's 401 with `WWW-Authenticate: Bearer … resource_metadata=…` and the protected resource metadata
an OAuth-capable client reads next (the token is yeetui's own: no authorization server issues it). Streams are
resumable: every event has an id (`MemoryEvents`), and a client that lost its stream asks for what followed
the last one it saw (`Last-Event-ID`)."""

from __future__ import annotations

import collections
import hmac
import itertools
import socket
from typing import Any

from yeetui.application.mcp_serve import AgentService, build_server

EVENTS_KEPT = 2000
"""Events kept for streams to resume from, across the server's streams (the oldest go first)."""
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


class TokenCheck:
    """The SDK's `TokenVerifier` for yeetui's one token (`YEETUI_MCP_TOKEN`, or the one printed at start)."""

    def __init__(self, token: str, resource: str) -> None:
        self._expected = token.encode()
        self._resource = resource

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        if not hmac.compare_digest(token.encode(), self._expected):
            return None
        return AccessToken(token=token, client_id="yeetui-mcp-client", scopes=[], resource=self._resource)


class MemoryEvents:
    """The SDK's `EventStore` in memory: each event of each stream numbered, the last `EVENTS_KEPT` kept, so a
    client whose stream broke gets what it missed."""

    def __init__(self, kept: int = EVENTS_KEPT) -> None:
        self._events: collections.deque[tuple[str, str, Any]] = collections.deque(maxlen=kept)
        self._numbers = itertools.count(1)

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = f"{next(self._numbers)}"
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: Any) -> str | None:
        from mcp.server.streamable_http import EventMessage

        stream = next((s for e, s, _ in self._events if e == last_event_id), None)
        if stream is None:
            return None
        after = False
        for event_id, stream_id, message in list(self._events):
            if after and stream_id == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream


async def serve_http(service: AgentService, *, host: str, port: int, token: str, on_ready: Any = None) -> None:
    """Serve at `http://host:port/mcp` (port 0: any free one; `on_ready(port)` once it listens)."""
    import uvicorn

    listening = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listening.bind((host, port))
    listening.listen(128)
    bound = listening.getsockname()[1]
    http = uvicorn.Server(uvicorn.Config(http_app(service, host=host, port=bound, token=token), log_level="warning",
                                         lifespan="on"))
    if on_ready is not None:
        original = http.startup

        async def startup(sockets: Any = None) -> None:
            await original(sockets)
            on_ready(bound)
        http.startup = startup  # type: ignore[method-assign]
    await http.serve(sockets=[listening])


def http_app(service: AgentService, *, host: str, port: int, token: str) -> Any:
    """The ASGI app served at `http://host:port/mcp`: the host guard, then the SDK's auth and its MCP app."""
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/mcp"
    server = build_server(service, http=(TokenCheck(token, url), url))
    return _HostGuard(server.streamable_http_app(host=host, event_store=MemoryEvents()), host)


class _HostGuard:
    """An ASGI wrapper refusing, before anything else sees it, an HTTP request that does not name this server:
    its Host must be `name:port` for the port the connection came to and a name of this server — the `--host`
    it was started with, or the address the connection reached (`scope["server"]`); on a loopback address,
    `localhost`, `127.0.0.1` and `[::1]` too. Otherwise 421. An Origin, when sent, must be `http://` one of those
    (else 403). A web page whose own name resolves to this machine (DNS rebinding) is refused, with or without a
    token."""

    def __init__(self, app: Any, host: str) -> None:
        self._app = app
        self._host = host.strip("[]").lower()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            allowed = self._allowed(scope.get("server"))
            headers = [(name.lower(), value.decode("latin-1").strip().lower())
                       for name, value in scope.get("headers") or []]
            hosts = [value for name, value in headers if name == b"host"]
            origins = [value for name, value in headers if name == b"origin"]
            if len(hosts) != 1 or hosts[0] not in allowed:
                await _refuse(send, 421, "the Host header does not name this server (refused against DNS "
                                         "rebinding)")
                return
            if any(not origin.startswith("http://") or origin.removeprefix("http://") not in allowed
                   for origin in origins):
                await _refuse(send, 403, "the request comes from a page of another origin")
                return
        await self._app(scope, receive, send)

    def _allowed(self, server: Any) -> set[str]:
        """The Host values that name this server, for a connection that reached `server` (address, port)."""
        if not isinstance(server, list | tuple) or len(server) != 2 or not isinstance(server[1], int):
            return set()  # not a TCP connection uvicorn accepted: nothing names it
        names = {self._host, str(server[0]).strip("[]").lower()}
        if any(_is_loopback(name) for name in names):
            names.update(LOOPBACK_NAMES)
        forms = {f"[{name}]" if ":" in name else name for name in names}
        port = server[1]
        return {f"{name}:{port}" for name in forms} | (forms if port == 80 else set())


def _is_loopback(name: str) -> bool:
    import ipaddress

    try:
        return name == "localhost" or ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


async def _refuse(send: Any, status: int, why: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain"), *(headers or [])]})
    await send({"type": "http.response.body", "body": f"yeetui mcp serve: {why}\n".encode()})
