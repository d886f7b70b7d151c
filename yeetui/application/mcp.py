"""The user's MCP servers, as the front ends show and approve them (`yeetui mcp list|approve|revoke`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from yeetui import paths
from yeetui.errors import YeetuiError
from yeetui.mcp import consent
from yeetui.mcp.client import START_TIMEOUT, McpConnections, ServerStatus
from yeetui.mcp.servers import ServerSpec
from yeetui.mcp.sources import Discovered, default_home, discover

if TYPE_CHECKING:
    from yeetui.runtime import Runtime

State = Literal["user", "approved", "needs approval", "disabled"]


@dataclass(frozen=True)
class ServerRow:
    spec: ServerSpec
    state: State

    @property
    def state_text(self) -> str:
        return {"user": "starts as configured (your own config)", "approved": "approved",
                "needs approval": f"needs your approval: yeetui mcp approve {self.spec.name}",
                "disabled": f"disabled in {self.spec.path}"}[self.state]


@dataclass(frozen=True)
class ServerListing:
    rows: list[ServerRow]
    shadowed: list[tuple[ServerSpec, ServerSpec]]
    problems: list[str]


CLIENT_SOURCE = "the ACP client"


def client_server(name: str, *, command: str | None = None, args: Iterable[str] = (),
                  env: Mapping[str, str] | None = None, url: str | None = None, sse: bool = False,
                  headers: Mapping[str, str] | None = None) -> ServerSpec:
    """A server as a front end's client describes it: a command to run, or a URL (streamable HTTP, or SSE)."""
    if not name.strip() or not (command or url):
        raise YeetuiError(f"An MCP server from the client needs a name and a command or URL (got {name!r}).")
    if url is not None and not url.startswith(("http://", "https://")):
        raise YeetuiError(f"The MCP server {name} from the client has a URL that is not http(s): {url!r}.")
    where = Path(f"<{CLIENT_SOURCE}>")
    if command:
        return ServerSpec(name=name, transport="stdio", scope="user", source=CLIENT_SOURCE, path=where,
                          command=(command, *args), env=dict(env or {}), env_as_written=dict(env or {}))
    return ServerSpec(name=name, transport="sse" if sse else "http", scope="user", source=CLIENT_SOURCE, path=where,
                      url=url, headers=dict(headers or {}), headers_as_written=dict(headers or {}))


def attach_client_servers(runtime: Runtime, specs: Iterable[ServerSpec]) -> list[str]:
    """Servers a front end's client passed (an editor's, over ACP) join the runtime's for its next runs, as the
    user's own (the user configured them in that client). Returns what was not taken, saying why."""
    problems = []
    connections = runtime.launcher.mcp
    for spec in specs:
        if connections is None or not connections.add(spec):
            problems.append(f"the MCP server {spec.name} the client passed was not added: the name is taken")
    return problems


class McpServers:
    """The servers configured for one project, read afresh on each call (the files may change any time)."""

    def __init__(self, project_dir: Path, *, env: Mapping[str, str] | None = None, home: Path | None = None) -> None:
        import os

        self.project_dir = Path(project_dir).resolve()
        self.env: Mapping[str, str] = dict(os.environ if env is None else env)
        self.home = home or default_home(self.env)

    def discover(self) -> Discovered:
        return discover(self.project_dir, home=self.home, env=self.env, config_dir=paths.config_dir(self.env))

    def state(self, spec: ServerSpec) -> State:
        if not spec.enabled:
            return "disabled"
        if not spec.needs_consent:
            return "user"
        return "approved" if consent.is_approved(spec, self.project_dir, self.env) else "needs approval"

    async def listing(self) -> ServerListing:
        return await asyncio.to_thread(self._listing)

    def _listing(self) -> ServerListing:
        found = self.discover()
        return ServerListing([ServerRow(s, self.state(s)) for s in found.servers], found.shadowed, found.problems)

    async def check(self, *, start_timeout: float = START_TIMEOUT) -> list[tuple[ServerRow, ServerStatus | None]]:
        """Start every server that may start (enabled; yours, or approved), list its tools, stop it again: each
        row with what happened (None: not started, as its state says)."""
        listing = await self.listing()
        startable = [row.spec for row in listing.rows if row.state in ("user", "approved")]
        connections = McpConnections(startable, start_timeout=start_timeout)
        try:
            statuses = {status.name: status for status in await connections.start_all()}
        finally:
            await connections.close()
        return [(row, statuses.get(row.spec.name)) for row in listing.rows]

    async def approve(self, name: str) -> ServerSpec:
        """Approve the project's server `name` exactly as it is configured now."""
        return await asyncio.to_thread(self._approve, name)

    def _approve(self, name: str) -> ServerSpec:
        spec = self._named(name)
        if not spec.needs_consent:
            raise YeetuiError(f"{name} is in your own config ({spec.path}); it needs no approval.")
        consent.approve(spec, self.project_dir, self.env)
        return spec

    async def waiting_for_approval(self) -> list[ServerSpec]:
        """The project's enabled servers nobody approved yet (as configured now): what a front end asks about."""
        listing = await self.listing()
        return [row.spec for row in listing.rows if row.state == "needs approval"]

    async def approve_shown(self, spec: ServerSpec) -> None:
        """Approve `spec` exactly as it was shown to the user: if its file changed since, the approval is of
        what was shown, so the server as it is now still asks."""
        if not spec.needs_consent:
            raise YeetuiError(f"{spec.name} is in your own config ({spec.path}); it needs no approval.")
        await asyncio.to_thread(consent.approve, spec, self.project_dir, self.env)

    async def revoke(self, name: str) -> int:
        return await asyncio.to_thread(consent.revoke, name, self.project_dir, self.env)

    def _named(self, name: str) -> ServerSpec:
        found = self.discover()
        spec = found.get(name)
        if spec is None:
            known = ", ".join(s.name for s in found.servers) or "none"
            raise YeetuiError(f"No MCP server called {name!r} is configured for {self.project_dir} (known: {known}).")
        return spec
