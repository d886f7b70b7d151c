"""How a connection reaches its MCP server: a stdio server's process, the SSE and streamable HTTP transports,
and the read stream passed on with its faults noted.

A stdio server runs as a child in its own session and process group (the SDK starts it so), launched as
`yeetui.mcp.launch` places it; `ServerProcess` keeps what one connection's starts leave behind — the folder
where `sh` notes the leader's pid and the server's exit status, the tag of what it starts, the file its stderr
goes to, the watcher that ends its group should this process die — and stops what is left of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

from yeetui.mcp.launch import Placement, exit_status, stdio_launch
from yeetui.mcp.oauth import connection_auth
from yeetui.mcp.servers import ServerSpec
from yeetui.system.processes import PROCESS_TAG, GroupWatcher, end_tagged
from yeetui.text import terminal_safe

STDERR_TAIL = 2_000
"""Characters of a failed server's stderr shown with the reason."""


class ServerProcess:
    """The process side of a stdio server's connection, across its starts (each `transport` begins one)."""

    def __init__(self) -> None:
        self.exited: int | None = None
        """What the last start's server exited with by itself (None: it runs, or was stopped); the connection
        clears it as a start begins."""
        self._tag: str | None = None
        self._stderr: IO[str] | None = None
        self._leader_file: Path | None = None
        self._watcher: GroupWatcher | None = None
        """Ends the server's process group should this process die without stopping it (`watch`)."""

    def transport(self, spec: ServerSpec, placement: Placement) -> Any:
        """The SDK's stdio transport for a start of `spec`'s server (LaunchRefused: it may not start there)."""
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        folder = Path(tempfile.mkdtemp(prefix="yeetui-mcp-"))
        self._leader_file = folder / "pid"
        launch = stdio_launch(spec, placement, folder)
        self._tag = launch.env[PROCESS_TAG]
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        # The SDK starts the server in a session of its own; `sh` notes the leader's pid (its group's id), runs
        # the server and notes its exit status, so what the server leaves running can be stopped with it
        # (`stop`) and a server that ended by itself is reported with its status.
        return stdio_client(StdioServerParameters(command=launch.command, args=launch.args, env=launch.env,
                                                  cwd=launch.cwd, encoding_error_handler="replace"),
                            errlog=self._stderr)

    async def watch(self) -> None:
        """Before the server starts, a watcher that SIGKILLs its group the moment this process dies (kill -9
        included), reading the group's id from the leader file `sh` writes first thing.

        `sh` stays the server's parent to note its exit status, so nothing else would end the server then: a
        server need not stop when its stdin closes, and bubblewrap's `--die-with-parent` follows `sh`, not us.
        Started before the server, so no moment of its start is unwatched."""
        if self._leader_file is not None:
            self._watcher = await GroupWatcher.start_for(self._leader_file)

    async def stop(self) -> None:
        """Stop what is left of the server's process group (its children, once the server itself is gone):
        SIGTERM, then SIGKILL after a moment."""
        watcher, self._watcher = self._watcher, None
        leader_file, self._leader_file = self._leader_file, None
        try:
            await self._stop_what_is_left(leader_file)
        finally:
            if watcher is not None:
                await watcher.stop()

    async def _stop_what_is_left(self, leader_file: Path | None) -> None:
        if leader_file is None:
            return
        tag, self._tag = self._tag, None
        try:
            await self._stop_leader_group(leader_file)
        finally:
            if tag is not None:  # what it started in a session of its own (`setsid`) ends with it too
                await end_tagged(tag, grace=2.0)

    async def _stop_leader_group(self, leader_file: Path) -> None:
        try:
            group = int(await asyncio.to_thread(leader_file.read_text) or 0)
        except (OSError, ValueError):
            group = 0
        finally:
            self.exited = exit_status(leader_file.parent)
            shutil.rmtree(leader_file.parent, ignore_errors=True)
        if group <= 1:
            return
        for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
            try:
                os.killpg(group, sig)
            except (ProcessLookupError, PermissionError):
                return
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                try:
                    os.killpg(group, 0)
                except (ProcessLookupError, PermissionError):
                    return

    def stderr_tail(self) -> str:
        """The end of what the last start's server wrote to stderr, terminal-safe ("" when nothing)."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read()
        except (OSError, ValueError):
            return ""
        return terminal_safe(text[-STDERR_TAIL:].strip())

    def close(self) -> None:
        """Let go of the stderr file (the connection is closed; what it said is not read again)."""
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def remote_transport(spec: ServerSpec, auth_dir: Path | None = None) -> Any:
    """The SDK's SSE or streamable HTTP transport for `spec`, its headers on every request — and, with
    `auth_dir`, the token of a sign-in (`yeetui mcp login`), refreshed when it expires; a server that asks for a
    sign-in then fails the start, saying how to sign in (yeetui.mcp.oauth)."""
    assert spec.url is not None
    auth = connection_auth(auth_dir, spec.url, spec.name) if auth_dir is not None else None
    if spec.transport == "sse":
        from mcp.client.sse import sse_client

        return sse_client(spec.url, headers=dict(spec.headers), auth=auth)
    import httpx2  # the MCP SDK's HTTP client; headers go on the client it is given
    from mcp.client.streamable_http import streamable_http_client

    client = httpx2.AsyncClient(headers=dict(spec.headers), timeout=httpx2.Timeout(30.0, read=300.0), auth=auth)
    return _ClosingClient(streamable_http_client(spec.url, http_client=client), client)


class _ClosingClient:
    """The streamable HTTP transport, and the HTTP client given to it closed after it."""

    def __init__(self, transport: Any, client: Any) -> None:
        self._transport, self._client = transport, client

    async def __aenter__(self) -> Any:
        return await self._transport.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self._transport.__aexit__(*exc)
        finally:
            await self._client.aclose()


@asynccontextmanager
async def faults_noted(read: Any, noted: Callable[[], None]) -> AsyncIterator[Any]:
    """The transport's read stream passed on as it is, a line that is not JSON-RPC (an exception among its items)
    noted (`noted()`) the moment it comes: the SDK tells its `message_handler` in a task of its own, which a server
    that exits right after its garbage can cancel before it runs — its failure then read as a plain exit."""
    import anyio

    send, receive = anyio.create_memory_object_stream[Any](max_buffer_size=float("inf"))

    async def forward() -> None:
        # the session may close its end first as it winds down: what comes after is nobody's to read
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            async with send:
                async for item in read:
                    if isinstance(item, Exception):
                        noted()
                    await send.send(item)

    async with anyio.create_task_group() as group:
        group.start_soon(forward)
        try:
            yield receive
        finally:
            group.cancel_scope.cancel()
