"""Connections to MCP servers through the MCP SDK: one per server for the whole yeetui process, started on
first use, shared by every agent that may use it, stopped with yeetui.

A stdio server runs as a child in its own session and process group (the SDK starts it so and kills its tree
when the connection closes), outside the project, with an environment of the SDK's safe defaults (`HOME`,
`PATH`, …) and what its config gives it — never yeetui's provider keys; a project's own inside the OS sandbox
(`yeetui.mcp.launch`; its process and the transports: `yeetui.mcp.transport`). What a server sends is hostile
input: tool names that do not fit a model's tool-name rules are mapped or skipped, oversized schemas and
descriptions are refused or cut, results are turned into capped text (`yeetui.mcp.tools`). A server that
cannot start, hangs at `initialize`, writes garbage or dies later is reported with the reason and the tail of
what it wrote to stderr (redacted of its own env and header values); the caller keeps going. A failed server
is started again on a later use, at most once per `RESTART_AFTER` seconds.

Each connection keeps its server's state for the process (`ServerStatus`): started with its tools, or failed
with a short reason in words ("command not found: foo", "exited with status 1: <its last stderr line>", "did
not answer initialize within 30 s", "sent something that is not MCP") beside the longer `error`. A start that
fails is told once (`McpConnections(bus=…)` publishes a `Notice` naming the server, its file and why), and
told again only after the server has started in between: a server failing each turn is one notice, not one
per turn.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal

from yeetui.bus import Bus
from yeetui.events import Notice
from yeetui.mcp.forms import FormDesk, FormRefused, form_request
from yeetui.mcp.launch import LaunchRefused, Placement
from yeetui.mcp.servers import ServerSpec
from yeetui.mcp.tools import MAX_TOOLS, CallResult, McpTool, result_text, take_tools
from yeetui.mcp.transport import ServerProcess, faults_noted, remote_transport
from yeetui.redact import redact
from yeetui.text import cap, one_line, terminal_safe

log = logging.getLogger(__name__)

START_TIMEOUT = 30.0
"""Seconds a server has to start and answer `initialize` and `tools/list`."""
CALL_TIMEOUT = 120.0
"""Seconds one tool call may take."""
SHUTDOWN_TIMEOUT = 10.0
"""Seconds the SDK's shutdown of a server (close stdin, wait, terminate the tree) may take."""
RESTART_AFTER = 10.0
"""A failed server is not started again for this long (a crash loop must not cost a start per call)."""
REASON_LINE = 200
"""Characters of a failed server's last stderr line in its short reason."""
State = Literal["stopped", "starting", "started", "failed"]


class McpServerError(Exception):
    """A server could not be reached, or a call to it failed; the message says why, for the user or model."""


Report = Callable[[ServerSpec, str], None]
"""Told when a server failed to start: which, and why in a few words (`ServerStatus.reason`)."""


def failure_notice(spec: ServerSpec, reason: str) -> str:
    """What the user is told when `spec` failed to start: the server, the file that defines it, why."""
    return (f"The MCP server {spec.name} from {spec.origin} did not start: {reason}. Its tools are not available "
            "(/mcp in the app and `yeetui doctor` show every server).")


@dataclass
class ServerStatus:
    name: str
    state: State = "stopped"
    error: str | None = None
    """Why it failed, with the tail of what it wrote to stderr (for the model, and `yeetui mcp list --check`)."""
    reason: str | None = None
    """Why it failed, in a few words and its last stderr line (for the user: the notice, `/mcp`, the doctor)."""
    tools: list[McpTool] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Tools the server offered that were not taken, each with the reason."""


class McpConnection:
    """One server. Its SDK context managers live in one task (`_serve`) from start to close, as they must."""

    def __init__(self, spec: ServerSpec, *, start_timeout: float = START_TIMEOUT,
                 clock: Callable[[], float] = time.monotonic, placement: Placement | None = None,
                 report: Report | None = None, forms: FormDesk | None = None) -> None:
        self.spec = spec
        self._forms = forms
        """Who answers the server's elicitation requests (yeetui.mcp.forms); None or no answerer: refused."""
        self._report = report
        self._reported = False
        """A failed start was told (`report`) and the server has not started since."""
        self._process = ServerProcess()
        """A stdio server's process side: its launch, stderr and group (`exited`: how its last start ended)."""
        self._not_mcp = False
        """The last start's server sent a line that is not JSON-RPC."""
        self._placement = placement or Placement.here()
        self.status = ServerStatus(spec.name)
        self._start_timeout = start_timeout
        self._clock = clock
        self._session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        self._failed_at: float | None = None
        self._settled = asyncio.Event()
        """Set once a start has ended, either way."""
        self._background: asyncio.Task[ServerStatus] | None = None

    def start_soon(self) -> None:
        """Start the server in the background unless it runs or is starting."""
        if self.status.state in ("started", "starting") or (self._background and not self._background.done()):
            return
        self._background = asyncio.create_task(self.ensure_started(), name=f"start mcp server {self.spec.name}")

    def started_event(self) -> asyncio.Event:
        """Set when the server has started or failed to (see `status`)."""
        return self._settled

    async def ensure_started(self) -> ServerStatus:
        """Start the server unless it runs (or failed a moment ago); its status either way."""
        async with self._lock:
            if self.status.state == "started" and self._task is not None and not self._task.done():
                return self.status
            if self.status.state == "started":  # the task ended under us: the server went away
                self._fail("the server stopped")
            if self._failed_at is not None and self._clock() - self._failed_at < RESTART_AFTER:
                return self.status
            await self._start()
            return self.status

    async def _start(self) -> None:
        try:
            await self._attempt()
        finally:
            self._settled.set()

    async def _attempt(self) -> None:
        self._settled.clear()
        self._process.exited, self._not_mcp = None, False
        self.status = ServerStatus(self.spec.name, "starting")
        self._stop = asyncio.Event()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._serve(ready), name=f"mcp server {self.spec.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), self._start_timeout)
        except TimeoutError:
            ready.cancel()  # what `_serve` learns after this is nobody's to read
            await self._shut()
            self._start_failed("sent something that is not MCP" if self._not_mcp
                               else f"did not answer initialize within {self._start_timeout:g} s")
            return
        except McpServerError as exc:
            await self._shut()
            self._start_failed(self._ended_by_itself() or str(exc))
            return
        try:
            offered = await asyncio.wait_for(self._list_tools(), self._start_timeout)
            offered = [t for t in offered if self._configured(getattr(t, "name", None))]
            self.status.tools, self.status.skipped = take_tools(self.spec.name, offered)
        except Exception as exc:  # a server answering tools/list with garbage is a failed server
            await self._shut()
            listing = f"listing its tools failed: {describe_failure(exc)}"  # it answered initialize: it speaks MCP
            exited = self._process.exited
            self._start_failed(f"{listing}; it exited with status {exited}" if exited is not None else listing)
            return
        self.status.state = "started"
        self._failed_at = None
        self._reported = False

    def _ended_by_itself(self) -> str | None:
        """Why the server went away during its start, when it did so on its own: what it sent, how it exited."""
        exited = f"exited with status {self._process.exited}" if self._process.exited is not None else None
        if self._not_mcp:
            return "sent something that is not MCP" + (f", then {exited}" if exited else "")
        return exited

    def _start_failed(self, reason: str) -> None:
        """The start failed for `reason`: the status says so, and the user is told unless already told."""
        self._fail(reason)
        if self._report is not None and not self._reported and self.status.reason:
            self._reported = True
            self._report(self.spec, self.status.reason)

    def _note_fault(self) -> None:
        """The server sent a line that is not JSON-RPC (`faults_noted` tells as it passes)."""
        self._not_mcp = True

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        from mcp import ClientSession  # on use: the SDK costs a second to import

        try:
            async with AsyncExitStack() as stack:
                transport = self._transport()
                await self._process.watch()
                read, write = await stack.enter_async_context(transport)
                read = await stack.enter_async_context(faults_noted(read, self._note_fault))
                session = await stack.enter_async_context(ClientSession(read, write,
                                                                        elicitation_callback=self._elicit))
                await session.initialize()
                self._session = session
                if not ready.done():
                    ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                remote = self.spec.transport != "stdio" and not isinstance(exc, McpServerError)
                ready.set_exception(McpServerError(f"connecting to it failed: {describe_failure(exc)}" if remote
                                                   else describe_failure(exc)))
            elif not self._stop.is_set():
                log.warning("MCP server %s ended: %s", self.spec.name, describe_failure(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._session = None

    async def _elicit(self, context: Any, params: Any) -> Any:
        """The server asks the user something (`elicitation/create`): shown as a form by the front end that
        answers forms; refused, with the reason the server hears, where none does or the form is not one."""
        import mcp_types

        def refused(why: str) -> Any:
            return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=why)

        try:
            request = form_request(self.spec.name, params)
        except FormRefused as exc:
            return refused(f"yeetui cannot show this form: {exc}")
        answerer = self._forms.answerer if self._forms is not None else None
        if answerer is None:
            return refused("nobody can fill in a form here: this yeetui runs without a screen (headless, a worker "
                           "or a server); ask for what you need in the tool's result instead")
        answer = await answerer(request)
        return mcp_types.ElicitResult(action=answer.action, content=answer.content if answer.action == "accept"
                                      else None)

    def _transport(self) -> Any:
        if self.spec.transport != "stdio":
            return remote_transport(self.spec, self._placement.auth_dir)
        try:
            return self._process.transport(self.spec, self._placement)
        except LaunchRefused as exc:
            raise McpServerError(str(exc)) from None

    async def _list_tools(self) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        from mcp_types import PaginatedRequestParams

        while True:
            page = await self._session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools += page.tools
            cursor = getattr(page, "next_cursor", None)
            if not cursor or len(tools) >= MAX_TOOLS:
                return tools[:MAX_TOOLS]

    async def call(self, tool: str, arguments: Mapping[str, Any], *, timeout: float = CALL_TIMEOUT) -> CallResult:
        """Call `tool` on the server (started if need be); a failure is a CallResult with `is_error`."""
        status = await self.ensure_started()
        if status.state != "started" or self._session is None:
            return CallResult(f"The MCP server {self.spec.name} is not available: {status.error}", True)
        try:
            result = await asyncio.wait_for(self._session.call_tool(tool, dict(arguments)), timeout)
        except TimeoutError:
            return CallResult(f"{tool} on the MCP server {self.spec.name} did not answer within {timeout:g} s.", True)
        except Exception as exc:  # the server died or answered garbage: said to the model, the run goes on
            if self._task is None or self._task.done():
                self._fail("the server stopped")
            said = self._redact(describe_failure(exc))
            return CallResult(f"{tool} on the MCP server {self.spec.name} failed: {said}", True)
        return CallResult(self._redact(result_text(result)), bool(getattr(result, "is_error", False)))

    def _configured(self, tool: object) -> bool:
        """Whether the server's config lets `tool` be taken (`includeTools` / `excludeTools`)."""
        spec = self.spec
        return tool not in spec.exclude_tools and (spec.include_tools is None or tool in spec.include_tools)

    def _fail(self, reason: str) -> None:
        tail = self._process.stderr_tail()
        last = one_line(tail.splitlines()[-1].strip()) if tail else ""
        self.status = ServerStatus(self.spec.name, "failed",
                                   self._redact(reason + (f"; it wrote: {tail}" if tail else "")),
                                   self._redact(reason + (f": {cap(last, REASON_LINE)}" if last else "")))
        self._failed_at = self._clock()

    def _redact(self, text: str) -> str:
        """`text` without the server's env and header values, nor the expanded parts of its command and URL."""
        spec = self.spec
        expanded = [part for part, written in zip(spec.command, spec.command_as_written, strict=False)
                    if part != written]
        if spec.url and spec.url != spec.url_as_written:
            expanded.append(spec.url)
        return redact(text, [v for v in (*spec.env.values(), *spec.headers.values(), *expanded) if len(v) >= 6])

    async def _shut(self) -> None:
        """End the connection: the SDK's own shutdown (shielded from the cancel) closes the server's stdin, waits,
        then terminates its process tree; then what the server left in its group is stopped."""
        try:
            await self._end_task()
        finally:
            await self._process.stop()

    async def _end_task(self) -> None:
        self._stop.set()
        task, self._task = self._task, None
        if task is None or task.done():
            return
        if self._session is None:  # still starting (a hang in `initialize`): the stop event is not awaited yet
            task.cancel()
        try:
            await asyncio.wait_for(task, SHUTDOWN_TIMEOUT)
        except (TimeoutError, asyncio.CancelledError):
            pass
        except Exception as exc:  # already reported as the failure, or the server ended badly
            log.debug("MCP server %s ended: %s", self.spec.name, describe_failure(exc))

    async def close(self) -> None:
        if self._background is not None and not self._background.done():
            self._background.cancel()
        async with self._lock:
            await self._shut()
            self._process.close()
            if self.status.state == "started":  # a new status: one handed out earlier keeps saying what it said
                self.status = ServerStatus(self.spec.name, "stopped", tools=self.status.tools)


class McpConnections:
    """Every server of a yeetui process: started on first use, once, and shared."""

    def __init__(self, specs: Iterable[ServerSpec], *, start_timeout: float = START_TIMEOUT,
                 placement: Placement | None = None, bus: Bus | None = None) -> None:
        """`bus`: where a server's failed start is told, as a `Notice` (once, until it has started again)."""
        self._start_timeout = start_timeout
        self._placement = placement or Placement.here()
        self._bus = bus
        self.forms = FormDesk()
        """Who answers the servers' forms (elicitation): a front end that shows them sets its `answerer`."""
        self._connections = {s.name: self._connection(s) for s in specs}

    def _connection(self, spec: ServerSpec) -> McpConnection:
        return McpConnection(spec, start_timeout=self._start_timeout, placement=self._placement,
                             report=self._tell if self._bus is not None else None, forms=self.forms)

    def _tell(self, spec: ServerSpec, reason: str) -> None:
        if self._bus is not None:
            self._bus.publish(Notice("warning", failure_notice(spec, reason)))

    def names(self) -> list[str]:
        return list(self._connections)

    def add(self, spec: ServerSpec) -> bool:
        """One more server, from now on (a front end's client passed it); False when the name is taken."""
        if spec.name in self._connections:
            return False
        self._connections[spec.name] = self._connection(spec)
        return True

    def get(self, name: str) -> McpConnection | None:
        return self._connections.get(name)

    def spec(self, name: str) -> ServerSpec:
        return self._connections[name].spec

    async def start_all(self) -> list[ServerStatus]:
        """Start every server at once (`yeetui mcp list --check`); their statuses in order."""
        return list(await asyncio.gather(*(c.ensure_started() for c in self._connections.values())))

    async def settle(self, wait: float) -> None:
        """Start in the background every server not started yet (or that failed long enough ago to be tried
        again), and wait up to `wait` seconds for them to start or fail (`/mcp`); those slower go on starting."""
        for connection in self._connections.values():
            connection.start_soon()
        pending = [task for c in self._connections.values() if (task := c._background) is not None
                   and not task.done()]
        if pending:
            await asyncio.wait(pending, timeout=wait)

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self._connections.values()), return_exceptions=True)


def describe_failure(exc: BaseException) -> str:
    """One line for an exception, looking inside the SDK's exception groups for the first real cause."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"the command was not found ({exc.filename or exc})"
    text = str(exc) or type(exc).__name__
    return terminal_safe(cap(text.replace("\n", " "), 500))
