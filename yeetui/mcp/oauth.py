"""Signing in to remote MCP servers that ask for OAuth, through the MCP SDK's client auth: it finds the
authorization server (protected resource metadata, then the server's own), registers yeetui as a client where
the server allows it, runs the authorization code flow with PKCE, and refreshes the token when it expires.

`yeetui mcp login NAME` is the one place a person signs in: the authorization page opens in the browser
(`$BROWSER` is honoured) and its address is printed too, for a machine without one; the page sends the browser
back to a one-off listener on 127.0.0.1, which takes the code. The tokens and the client's registration are
kept per server URL in a file of the data dir only the user can read (`mcp-auth/`, 0600). Every later
connection uses them — refreshing them as the SDK decides — and never opens a browser: a server that needs
signing in again fails its start saying `yeetui mcp login NAME`."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger(__name__)

SIGN_IN_TIMEOUT = 300.0
"""Seconds `yeetui mcp login` waits for the browser to come back."""
CLIENT_NAME = "yeetui"


class SignInNeeded(Exception):
    """The server asks for a sign-in, and this connection may not open a browser."""


def token_file(auth_dir: Path, url: str) -> Path:
    """Where the tokens for the server at `url` are kept."""
    return auth_dir / f"{hashlib.sha256(url.encode()).hexdigest()[:24]}.json"


class TokenFile:
    """The SDK's `TokenStorage` in one 0600 file per server URL: `{url, tokens, client_info}`. A damaged file
    reads as empty (the next sign-in replaces it)."""

    def __init__(self, auth_dir: Path, url: str) -> None:
        self.path = token_file(auth_dir, url)
        self.url = url

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("url") == self.url else {}

    def _write(self, key: str, value: dict[str, Any]) -> None:
        data = {**self._read(), "url": self.url, key: value}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = self.path.with_suffix(f".{secrets.token_hex(4)}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump(data, out)
        temporary.replace(self.path)

    def has_tokens(self) -> bool:
        return isinstance(self._read().get("tokens"), dict)

    def forget(self) -> bool:
        """Sign out: the tokens and the registration go. False when there were none."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        raw = await asyncio.to_thread(self._read)
        with contextlib.suppress(ValueError, TypeError):
            return OAuthToken.model_validate(raw["tokens"]) if isinstance(raw.get("tokens"), dict) else None
        return None

    async def set_tokens(self, tokens: Any) -> None:
        await asyncio.to_thread(self._write, "tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = await asyncio.to_thread(self._read)
        with contextlib.suppress(ValueError, TypeError):
            info = raw.get("client_info")
            return OAuthClientInformationFull.model_validate(info) if isinstance(info, dict) else None
        return None

    async def set_client_info(self, client_info: Any) -> None:
        await asyncio.to_thread(self._write, "client_info", client_info.model_dump(mode="json", exclude_none=True))


def _metadata(redirect_uri: str) -> Any:
    from mcp.shared.auth import OAuthClientMetadata

    return OAuthClientMetadata.model_validate({
        "client_name": CLIENT_NAME, "redirect_uris": [redirect_uri], "grant_types": ["authorization_code",
                                                                                    "refresh_token"],
        "response_types": ["code"], "token_endpoint_auth_method": "none"})


def connection_auth(auth_dir: Path, url: str, name: str) -> Any:
    """The auth of an agent's connection to the server `name` at `url`: the tokens `yeetui mcp login` kept
    (refreshed when they expire); a server that asks for a sign-in fails the start (`SignInNeeded`, saying
    how to sign in) — no browser opens behind an agent's back."""
    from mcp.client.auth import OAuthClientProvider

    signed_in = TokenFile(auth_dir, url).has_tokens()
    needed = (f"its sign-in ran out: run `yeetui mcp login {name}` in a shell again" if signed_in
              else f"it asks you to sign in: run `yeetui mcp login {name}` in a shell")

    async def no_browser(_: str) -> None:
        raise SignInNeeded(needed)

    async def no_callback() -> Any:
        raise SignInNeeded(needed)

    return OAuthClientProvider(url, _metadata("http://127.0.0.1/callback"), TokenFile(auth_dir, url),
                               redirect_handler=no_browser, callback_handler=no_callback)


class Callback:
    """A one-off listener on 127.0.0.1 for the authorization server's redirect: it takes the code (and state)
    of the first request to `/callback` and answers the browser with a line to close the tab."""

    def __init__(self) -> None:
        self.port = 0
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[tuple[str, str | None, str | None]] | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def __aenter__(self) -> Callback:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            parts = line.split(" ")
            target = urlsplit(parts[1]) if len(parts) >= 2 else None
            query = parse_qs(target.query) if target is not None and target.path == "/callback" else {}
            code, state = query.get("code", [None])[0], query.get("state", [None])[0]
            error = query.get("error", [None])[0]
            ok = bool(code) and self._result is not None and not self._result.done()
            if self._result is not None and not self._result.done() and (code or error):
                if code:
                    self._result.set_result((code, state, query.get("iss", [None])[0]))
                else:
                    self._result.set_exception(SignInNeeded(f"the server refused the sign-in: {error}"))
            body = ("Signed in: you can close this tab and go back to yeetui." if ok
                    else "yeetui did not take this request.").encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            await writer.drain()
        except (OSError, TimeoutError, UnicodeError):
            pass
        finally:
            writer.close()

    async def code(self, timeout: float) -> Any:
        from mcp.shared.auth import AuthorizationCodeResult

        assert self._result is not None
        try:
            code, state, issuer = await asyncio.wait_for(asyncio.shield(self._result), timeout)
        except TimeoutError:
            raise SignInNeeded(f"nobody signed in within {timeout:g} s") from None
        return AuthorizationCodeResult(code=code, state=state, iss=issuer)


async def sign_in(auth_dir: Path, url: str, *, open_page: Callable[[str], Awaitable[None]],
                  timeout: float = SIGN_IN_TIMEOUT, client: tuple[str, str | None] | None = None) -> None:
    """Sign in to the server at `url`: discovery, registration, the browser's round trip and the token
    exchange, the tokens kept (see the module). `open_page` shows the authorization page's address to the
    person (prints it, opens a browser). `client`: the id (and secret) the server's owner gave the user, used
    instead of registering. Raises SignInNeeded or the SDK's errors, which say what failed."""
    import httpx2
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull

    storage = TokenFile(auth_dir, url)
    async with Callback() as callback:
        registered = await storage.get_client_info()
        if client is not None:  # pre-registered: the server knows this client already
            client_id, secret = client
            await storage.set_client_info(OAuthClientInformationFull.model_validate({
                "client_id": client_id, "client_secret": secret, "redirect_uris": [callback.redirect_uri],
                "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
                "token_endpoint_auth_method": "client_secret_basic" if secret else "none"}))
        elif registered is not None and callback.redirect_uri not in [str(u) for u in registered.redirect_uris or []]:
            await asyncio.to_thread(storage.forget)  # registered for another listener's port: register again
        provider = OAuthClientProvider(url, _metadata(callback.redirect_uri), storage, redirect_handler=open_page,
                                       callback_handler=lambda: callback.code(timeout))
        async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0), follow_redirects=False) as http:
            await _initialize(http, url)


async def _initialize(client: Any, url: str) -> None:
    """One MCP `initialize` through the authorized client: what makes the server ask for the sign-in, and
    proves the token it gave works."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url, http_client=client) as (read, write, *_), \
            ClientSession(read, write) as session:
        await session.initialize()
