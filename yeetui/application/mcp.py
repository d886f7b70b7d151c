"""The user's MCP servers, as the front ends show and approve them (`yeetui mcp list|approve|revoke`), and as
this process has them (`/mcp`, `yeetui doctor`): connected, failed and why, or not started and why not."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from yeetui import paths
from yeetui.errors import YeetuiError
from yeetui.mcp import consent
from yeetui.mcp.client import START_TIMEOUT, McpConnection, McpConnections, ServerStatus, describe_failure
from yeetui.mcp.consent import Admitted
from yeetui.mcp.forms import FormAnswerer
from yeetui.mcp.launch import Placement
from yeetui.mcp.oauth import SignInNeeded, TokenFile, sign_in
from yeetui.mcp.servers import ServerSpec
from yeetui.mcp.sources import Discovered, default_home, discover
from yeetui.settings.config import ProjectGrants, load_settings
from yeetui.system import sandbox
from yeetui.text import terminal_safe

if TYPE_CHECKING:
    from yeetui.runtime import Runtime

State = Admitted


@dataclass(frozen=True)
class ServerRow:
    spec: ServerSpec
    state: State
    reason: str = ""
    """Why it needs approval again (what it runs changed) or is refused."""

    @property
    def state_text(self) -> str:
        if self.state == "needs approval" and self.reason:
            return (f"needs your approval again — what it runs changed since you approved it ({self.reason}): "
                    f"yeetui mcp approve {self.spec.name}")
        return {"user": "starts as configured (your own config)", "approved": "approved",
                "needs approval": f"needs your approval: yeetui mcp approve {self.spec.name}",
                "disabled": f"disabled in {self.spec.path}", "refused": f"not started: {self.reason}"}[self.state]


def described(row: ServerRow, *, reason: bool = True) -> list[str]:
    """What an approval shows of a server, every value as its file writes it (`${…}` references unexpanded,
    so nothing shown holds a secret): what it runs or reaches (its arguments once, there), where, each env entry
    and header, how it is confined, and what changed since an earlier approval."""
    spec = row.spec
    remote = spec.transport != "stdio"
    lines = [f"{'reaches' if remote else 'runs'}: {spec.target}"]
    if spec.cwd_as_written:
        lines.append(f"in: {spec.cwd_as_written}")
    elif not remote:
        lines.append("in: your home folder (outside the project)")
    for name, value in sorted((spec.headers_as_written if remote else spec.env_as_written).items()):
        lines.append(f"{'header' if remote else 'env'} {name}: {value}")
    if not remote and spec.needs_consent:
        lines.append("confined: read-only filesystem, yeetui's files hidden, network allowed" if not spec.unconfined
                     else "unconfined: your own config lets it run outside the OS sandbox")
        if spec.pins:
            lines.append(f"pins: {', '.join(sorted(spec.pins))}")
    if reason and row.reason:
        lines.append(("changed since you approved it: " if row.state == "needs approval" else "refused: ")
                     + row.reason)
    return lines


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


class McpServers:
    """The servers configured for one project, read afresh on each call (the files may change any time)."""

    def __init__(self, project_dir: Path, *, env: Mapping[str, str] | None = None, home: Path | None = None,
                 grants: ProjectGrants | None = None, runtime: Runtime | None = None) -> None:
        import os

        self.project_dir = Path(project_dir).resolve()
        self.env: Mapping[str, str] = dict(os.environ if env is None else env)
        self.home = home or default_home(self.env)
        self._grants = grants
        self._runtime = runtime
        """The running app's, whose connections `overview` and `attach` show and join (None: a command that
        only reads and approves the configuration)."""

    def attach(self, specs: Iterable[ServerSpec]) -> list[str]:
        """Servers a front end's client passed (an editor's, over ACP) join the runtime's for its next runs, as
        the user's own (the user configured them in that client). Returns what was not taken, saying why."""
        problems = []
        connections = self._runtime.launcher.mcp if self._runtime is not None else None
        for spec in specs:
            if connections is None or not connections.add(spec):
                problems.append(f"the MCP server {spec.name} the client passed was not added: the name is taken")
        return problems

    def answer_forms(self, answerer: FormAnswerer | None) -> None:
        """What this process's servers ask the user (elicitation) goes to `answerer` (a front end's form); None:
        refused, telling the server nobody can answer here."""
        connections = self._runtime.launcher.mcp if self._runtime is not None else None
        if connections is not None:
            connections.forms.answerer = answerer

    async def overview(self, *, wait: float | None = None) -> str:
        """What `/mcp` shows: every server with its state, where it comes from and what it runs, a failed one's
        reason, how to approve one that waits for it, and files that could not be read. Servers this process
        may start but has not started yet are started first (waiting up to `wait` seconds, `mcp_index_wait`
        unless given, for them to connect or fail)."""
        connections = self._runtime.launcher.mcp if self._runtime is not None else None
        if connections is not None and self._runtime is not None:
            await connections.settle(self._runtime.settings.mcp_index_wait if wait is None else wait)
        listing = await self.listing()
        states = server_states(listing, connections)
        if not states and not listing.problems:
            return ("No MCP servers are configured for this project. yeetui reads those of Claude Code, OpenCode, "
                    "Cursor, Codex, Gemini CLI, VS Code, Zed, Windsurf and Claude Desktop, and `mcp_servers` in your "
                    "config.yaml.")
        lines = [f"MCP servers ({len(states)}; `yeetui mcp list` in a shell shows every env entry and header):"]
        for state in states:
            lines += state.lines()
        if listing.problems:
            lines += ["Files or servers that could not be read:", *(f"  {problem}" for problem in listing.problems)]
        return terminal_safe("\n".join(lines))  # names, commands and reasons come from a project's files

    @property
    def grants(self) -> ProjectGrants:
        """What the user's own config grants the project's servers (read on first use: a config that does not
        load grants nothing)."""
        if self._grants is None:
            try:
                self._grants = load_settings(project_dir=self.project_dir, env=self.env).settings.project_grants
            except YeetuiError:
                self._grants = ProjectGrants()
        return self._grants

    def discover(self) -> Discovered:
        return discover(self.project_dir, home=self.home, env=self.env, config_dir=paths.config_dir(self.env))

    def row(self, spec: ServerSpec) -> ServerRow:
        admitted = consent.admit(spec, self.project_dir, self.env, unconfined=self.grants.unconfined_mcp_servers,
                                 secrets_for=self.grants.mcp_secrets, sandbox=sandbox.probe_sandbox, home=self.home)
        return ServerRow(admitted.spec, admitted.state, admitted.reason)

    def state(self, spec: ServerSpec) -> State:
        return self.row(spec).state

    async def listing(self) -> ServerListing:
        return await asyncio.to_thread(self._listing)

    def listing_now(self) -> ServerListing:
        """`listing`, blocking (for a caller already off the event loop)."""
        return self._listing()

    def _listing(self) -> ServerListing:
        found = self.discover()
        return ServerListing([self.row(s) for s in found.servers], found.shadowed, found.problems)

    def placement(self) -> Placement:
        return Placement(self.project_dir, self.home, (paths.config_dir(self.env), paths.data_dir(self.env)),
                         auth_dir=paths.data_dir(self.env) / "mcp-auth")

    async def check(self, *, start_timeout: float = START_TIMEOUT) -> list[tuple[ServerRow, ServerStatus | None]]:
        """Start every server that may start (enabled; yours, or approved), list its tools, stop it again: each
        row with what happened (None: not started, as its state says)."""
        listing = await self.listing()
        startable = [row.spec for row in listing.rows if row.state in ("user", "approved")]
        connections = McpConnections(startable, start_timeout=start_timeout, placement=self.placement())
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
        row = self.row(spec)
        if row.state == "refused" and spec.secret_references():
            raise YeetuiError(f"{name} ({spec.path}) cannot be approved: {row.reason}.")
        consent.approve(spec, self.project_dir, self.env, pins=row.spec.pins)
        return row.spec

    def remote_url(self, name: str) -> str:
        """The URL of the configured remote server `name` (what `yeetui mcp login` signs in to)."""
        spec = self._named(name)
        if spec.transport == "stdio" or spec.url is None:
            raise YeetuiError(f"{name} ({spec.path}) runs a command on this machine; only a remote server (a url) "
                              "signs in.")
        return spec.url

    async def sign_in(self, url: str, *, open_page: Callable[[str], Awaitable[None]],
                      client: tuple[str, str | None] | None = None) -> None:
        """Sign in to the server at `url` (yeetui.mcp.oauth): its page shown through `open_page`, the token kept
        in the data dir for every later connection; `client`: a client id (and secret) the server's owner gave
        the user. Raises YeetuiError saying what failed."""
        try:
            await sign_in(paths.data_dir(self.env) / "mcp-auth", url, open_page=open_page, client=client)
        except SignInNeeded as exc:
            raise YeetuiError(f"Not signed in to {url}: {exc}.") from None
        except Exception as exc:  # the SDK's OAuth and HTTP errors, and a server that is not there
            raise YeetuiError(f"Not signed in to {url}: {describe_failure(exc)}.") from None

    async def sign_out(self, url: str) -> bool:
        return await asyncio.to_thread(TokenFile(paths.data_dir(self.env) / "mcp-auth", url).forget)

    def command_missing(self, spec: ServerSpec) -> str | None:
        """Why a stdio server's command will not start here — not on its PATH, or not a file that runs — in
        words; None when it is found (or the server is remote)."""
        if spec.transport != "stdio" or not spec.command:
            return None
        program = spec.command[0]
        if shutil.which(program, path=spec.env.get("PATH", self.env.get("PATH"))) is not None:
            return None
        written = (spec.command_as_written or spec.command)[0]
        where = "is not a file that runs" if "/" in program else "is not on PATH"
        return f"its command {written!r} {where}, so it will not start until that changes"

    async def waiting_for_approval(self) -> list[ServerRow]:
        """The project's enabled servers nobody approved yet, or whose files changed since (as configured now):
        what a front end asks about, each with what changed."""
        listing = await self.listing()
        return [row for row in listing.rows if row.state == "needs approval"]

    async def approve_shown(self, spec: ServerSpec) -> None:
        """Approve `spec` exactly as it was shown to the user, with the files it runs as they were then (its
        `pins`): if its file or one it runs changed since, the approval is of what was shown, so the server as
        it is now still asks."""
        if not spec.needs_consent:
            raise YeetuiError(f"{spec.name} is in your own config ({spec.path}); it needs no approval.")
        await asyncio.to_thread(consent.approve, spec, self.project_dir, self.env, pins=spec.pins or None)

    async def revoke(self, name: str) -> int:
        return await asyncio.to_thread(consent.revoke, name, self.project_dir, self.env)

    def _named(self, name: str) -> ServerSpec:
        found = self.discover()
        spec = found.get(name)
        if spec is None:
            known = ", ".join(s.name for s in found.servers) or "none"
            raise YeetuiError(f"No MCP server called {name!r} is configured for {self.project_dir} (known: {known}).")
        return spec


# -- the servers as this process has them (`/mcp`) -------------------------------------------------------------

Live = Literal["connected", "failed", "starting", "not started", "needs approval", "disabled", "refused",
               "not in this session"]


@dataclass(frozen=True)
class ServerState:
    """One server as this yeetui process has it: what its file says, and what became of it here."""

    spec: ServerSpec
    state: Live
    detail: str = ""
    """connected: its tools, counted; failed: why, in a few words; needs approval: how to approve it;
    disabled, refused: why it does not start."""
    tools: tuple[str, ...] = ()
    """A connected server's tools as the server names them."""

    @property
    def headline(self) -> str:
        """`github — connected, 12 tools`."""
        said = {"connected": f"connected, {self.detail}", "failed": f"failed: {self.detail}",
                "starting": "starting (a failure is said in the conversation)",
                "not started": "not started yet (it starts with the first agent that may use it)",
                "needs approval": f"needs your approval: {self.detail}", "disabled": self.detail,
                "refused": f"not started: {self.detail}",
                "not in this session": f"{self.detail}; it starts when yeetui starts again"}[self.state]
        return f"{self.spec.name} — {said}"

    def lines(self) -> list[str]:
        """The headline, where the server comes from, and what it runs or reaches, as its file writes it."""
        spec = self.spec
        where = f"from {spec.origin}" + ("" if str(spec.path) in spec.source or spec.path.name.startswith("<")
                                          else f": {spec.path}")
        lines = [self.headline, f"  {where}", f"  {'reaches' if spec.transport != 'stdio' else 'runs'}: {spec.target}"]
        if self.tools:
            shown = ", ".join(self.tools[:TOOLS_SHOWN])
            more = f" and {len(self.tools) - TOOLS_SHOWN} more" if len(self.tools) > TOOLS_SHOWN else ""
            lines.append(f"  tools (mcp__{spec.name}__…): {shown}{more}")
        return lines


TOOLS_SHOWN = 12
"""Tool names `/mcp` shows of a connected server; the rest are counted."""


def _tools(count: int) -> str:
    return f"{count} tool{'' if count == 1 else 's'}"


def _live(spec: ServerSpec, connection: McpConnection) -> ServerState:
    status = connection.status
    if status.state == "started":
        return ServerState(spec, "connected", _tools(len(status.tools)), tuple(tool.name for tool in status.tools))
    if status.state == "failed":
        return ServerState(spec, "failed", status.reason or status.error or "it did not start")
    return ServerState(spec, "starting" if status.state == "starting" else "not started")


def _configured(row: ServerRow) -> ServerState:
    """A server this process did not take (it was not startable when the session opened): why."""
    spec = row.spec
    if row.state == "needs approval":
        changed = f"what it runs changed since you approved it ({row.reason}); " if row.reason else ""
        return ServerState(spec, "needs approval", f"{changed}run `yeetui mcp approve {spec.name}` in a shell "
                           "(it shows what you approve), then start yeetui again — or approve it in the dialog "
                           "yeetui shows at start")
    if row.state == "disabled":
        return ServerState(spec, "disabled", f"disabled in {spec.path}")
    if row.state == "refused":
        return ServerState(spec, "refused", row.reason)
    return ServerState(spec, "not in this session", "configured or approved after this session opened")


def server_states(listing: ServerListing, connections: McpConnections | None) -> list[ServerState]:
    """Every server: those this process took (`connections`) as they are now, the others as their files and
    approvals have them, then those a front end's client passed (an editor's, over ACP)."""
    taken = set(connections.names()) if connections is not None else set()
    states = []
    for row in listing.rows:
        connection = connections.get(row.spec.name) if connections is not None else None
        states.append(_live(connection.spec, connection) if connection is not None else _configured(row))
    listed = {row.spec.name for row in listing.rows}
    for name in sorted(taken - listed):
        if connections is not None and (connection := connections.get(name)) is not None:
            states.append(_live(connection.spec, connection))
    return states
