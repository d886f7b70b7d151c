"""`yeetui acp`: yeetui as an Agent Client Protocol agent on stdio, for Zed, JetBrains and any ACP client.

An ACP session is a yeetui conversation (the ids are the same, so `session/load` reopens what the TUI or an
earlier client left in the same project, and the TUI's switcher shows what an editor started). The data dir
holds every project's conversations; `session/list` and `session/load` see only those of the project the
client names (`cwd`); loading one shows it again whole, tool calls included (`replay`). A turn runs the primary
agent through the same `SessionControl` the TUI drives and streams its events as session updates (`updates`):
text and thinking chunks, tool calls with their endings, edits as diffs, and the answer it ends with
(`complete`) as its text. A session's mode is the profile the conversation is had with (a `primary` one),
offered as modes and as the `mode` config option beside `model`, and kept with the conversation. A tool call
under an `ask` rule becomes `session/request_permission`, answered by the user in the editor — nothing is
approved because the client is a program. `/oracle question` (any profile's slash trigger) runs that subagent as
the turn: a tool call of the session, then its answer as the session's text; `session/cancel` stops the turn and
everything under it. What the client writes is read frame by frame (`frames`): one that is no JSON-RPC message is
refused, never fatal.

Everything goes through the surface's application surface. What the events become, and the subagent tree, is
`stream`'s: updates leave in the order the events came, so a permission request never overtakes its tool call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, schema

from yeetui import __version__
from yeetui.acp import frames, updates
from yeetui.acp.replay import Replay
from yeetui.acp.stream import AcpSession, UpdateStream, with_sessions
from yeetui.application.commands import CommandFile, placed_commands
from yeetui.application.mcp import client_server
from yeetui.application.surface import FrontEnd, Surface
from yeetui.errors import ConfigError, YeetuiError
from yeetui.text import cap

log = logging.getLogger(__name__)

FOLLOW_POLL = 0.5
"""Seconds between looks at a conversation another process is running."""


class YeetuiAgent:
    """The ACP `Agent` (see `acp.interfaces.Agent`); `conn` is set by the SDK when the connection is made."""

    def __init__(self, *, open_surface: Callable[[Path], Any] | None = None) -> None:
        self.conn: Any = None
        # Its pane children's questions come here (and go to the editor); those of runs it did not start do not.
        self._open_surface = open_surface or (lambda cwd: Surface.open(
            cwd=cwd, front_end=FrontEnd(answers_asks=True, open_asks=False)))
        self._surfaces: dict[Path, Surface] = {}
        self._sessions: dict[str, AcpSession] = {}
        self.stream = UpdateStream(self._sessions)
        self._following: set[asyncio.Task[None]] = set()

    def on_connect(self, conn: Any) -> None:
        """The SDK made the connection and has read nothing yet: what the client writes is checked frame by frame
        from the first (`frames`), so a frame that is no JSON-RPC message is refused instead of ending yeetui."""
        frames.guard(conn)
        self.conn = self.stream.conn = conn

    def observe(self, event: Any) -> None:
        """A stream observer (`run_agent(observers=…)`): the SDK's models drop capabilities they do not know, so
        the client's `subagents` opt-in is read from the `initialize` request as it arrived."""
        message = getattr(event, "message", None)
        if getattr(event, "direction", None) != "incoming" or not isinstance(message, dict):
            return
        if message.get("method") == "initialize":
            params = message.get("params")
            capabilities = params.get("clientCapabilities") if isinstance(params, dict) else None
            self.stream.subagents = isinstance(capabilities, dict) and isinstance(capabilities.get("subagents"), dict)

    # -- the protocol's methods ---------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **_: Any) -> schema.InitializeResponse:
        return schema.InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                prompt_capabilities=schema.PromptCapabilities(image=False, audio=False, embedded_context=True),
                mcp_capabilities=schema.McpCapabilities(http=True, sse=True),
                session_capabilities=schema.SessionCapabilities(list=schema.SessionListCapabilities(),
                                                                resume=schema.SessionResumeCapabilities())),
            agent_info=schema.Implementation(name="yeetui", title="yeetui", version=__version__))

    async def authenticate(self, method_id: str, **_: Any) -> schema.AuthenticateResponse:
        return schema.AuthenticateResponse()

    async def new_session(self, cwd: str, mcp_servers: Any = None, **_: Any) -> schema.NewSessionResponse:
        surface = await self._surface(cwd)
        self._attach(surface, mcp_servers)
        record = await surface.sessions.new()
        session = self._open(record.id, surface)
        self._announce_commands(record.id, surface)
        return schema.NewSessionResponse(session_id=record.id, config_options=await self._config_options(session),
                                         modes=await self._modes(session))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           **_: Any) -> schema.LoadSessionResponse:
        session = await self._reopen(cwd, session_id, mcp_servers, replay=True)
        return schema.LoadSessionResponse(config_options=await self._config_options(session),
                                          modes=await self._modes(session))

    async def resume_session(self, session_id: str, cwd: str, mcp_servers: Any = None,
                             **_: Any) -> schema.ResumeSessionResponse:
        """As `load_session`, without the conversation replayed (the client still shows it)."""
        session = await self._reopen(cwd, session_id, mcp_servers, replay=False)
        return schema.ResumeSessionResponse(config_options=await self._config_options(session),
                                            modes=await self._modes(session))

    async def _reopen(self, cwd: str, session_id: str, mcp_servers: Any, *, replay: bool) -> AcpSession:
        """A stored conversation opened again: its messages sent again (`replay`), its commands announced, and
        followed while another yeetui runs it."""
        surface = await self._surface(cwd)
        self._attach(surface, mcp_servers)
        try:
            record = await surface.sessions.resolve(session_id)
        except YeetuiError as exc:
            raise RequestError.invalid_params({"sessionId": session_id, "reason": str(exc)}) from None
        if await surface.store.session_project(record.id) != surface.project_dir:
            raise RequestError.invalid_params({"sessionId": session_id, "reason": f"there is no conversation "
                                               f"{session_id!r} in this project ({surface.project_dir})"})
        session = self._open(record.id, surface, *await _spent(surface, record.id))
        last, shown = 0, Replay()
        for stored in await surface.store.messages(record.id, include_partial=False):
            last = stored.id
            for update in shown.updates(stored.message) if replay else ():
                self.stream.put(record.id, update)
        self._announce_commands(record.id, surface)
        await self.stream.join()
        self._follow_elsewhere(session, last)
        return session

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **_: Any) -> schema.ListSessionsResponse:
        """The latest conversations of the project `cwd` is in (of the folder yeetui was started in, without
        one): the data dir holds every project's, and a client sees only those of the project it names."""
        surface = await self._surface(cwd or str(Path.cwd()))
        found = await surface.store.list_sessions(parent_id=None, cwd=surface.project_dir, limit=100)
        return schema.ListSessionsResponse(sessions=[
            schema.SessionInfo(session_id=s.id, cwd=str(s.cwd or surface.project_dir), title=s.title or None,
                               updated_at=s.updated_at.isoformat()) for s in found])

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> schema.PromptResponse:
        session = self._session(session_id)
        if (elsewhere := await session.surface.runs.elsewhere(session.id)) is not None:
            raise RequestError.invalid_params({"sessionId": f"this conversation is running in another yeetui "
                                                            f"(process {elsewhere.pid}): wait for its turn to end, "
                                                            f"or cancel {elsewhere.label or elsewhere.id[:12]}"})
        text = updates.prompt_text(prompt).strip()
        if not text:
            raise RequestError.invalid_params({"prompt": "nothing to send: the prompt has no text"})
        session.cancelled = False
        session.said.clear()
        command, _space, rest = text.partition(" ")
        profile = session.surface.profiles.by_slash(command) if command.startswith("/") else None
        file = next((c for c in self._command_files(session.surface) if f"/{c.name}" == command), None) \
            if command.startswith("/") and profile is None else None
        if file is not None:  # a command file is only ever a prompt: to its agent, or to the conversation
            text = file.expand(rest.strip())
            if file.agent and file.agent in session.surface.profiles:
                profile = session.surface.profiles.get(file.agent)
                rest = text
        try:
            if profile is not None:
                await self._run_subagent(session, profile.name, rest.strip() or text)
            else:
                await session.control.submit(text)
                await session.control.wait_idle()
        finally:
            await self.stream.join()  # every update of the turn has left before the turn's answer
        result = session.control.last_result if profile is None else None
        usage = updates.usage(result.usage) if result is not None else None
        if result is not None and result.cost is not None:
            session.spent += result.cost
        if session.cancelled:
            return schema.PromptResponse(stop_reason="cancelled", usage=usage)
        if result is not None and result.error and "turn" in result.error.lower():
            return schema.PromptResponse(stop_reason="max_turn_requests", usage=usage)
        return schema.PromptResponse(stop_reason="end_turn", usage=usage)

    async def cancel(self, session_id: str, **_: Any) -> None:
        """The turn of a session — or, for a subagent's session (announced with `cancel`), that subagent and its
        own children only."""
        session = self._sessions.get(session_id)
        if session is None:
            owner = self.stream.owner(session_id)
            if owner is not None and session_id in owner.runs:
                with contextlib.suppress(YeetuiError):
                    await owner.surface.runs.cancel(owner.runs[session_id], graceful=False)
            return
        session.cancelled = True
        await session.control.interrupt()
        await session.surface.runs.stop_children(session.id)

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **_: Any) -> schema.SetSessionConfigOptionResponse:
        """`model`: the model of this session's next turns (and the subagents they start); `mode`: their profile
        (as `session/set_mode`)."""
        session = self._session(session_id)
        if config_id not in ("model", "mode") or not isinstance(value, str):
            raise RequestError.invalid_params({"configId": f"{config_id!r} is not an option here (model and mode "
                                                           f"are)"})
        if config_id == "mode":
            await self._use_mode(session, value)
            return schema.SetSessionConfigOptionResponse(config_options=await self._config_options(session))
        try:
            problem = session.surface.models.problem(value)
        except ConfigError as exc:
            raise RequestError.invalid_params({"value": str(exc)}) from None
        if problem is not None:
            raise RequestError.invalid_params({"value": f"{value} cannot be used: {problem}"})
        session.control.model = value
        return schema.SetSessionConfigOptionResponse(config_options=await self._config_options(session))

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> schema.SetSessionModeResponse:
        """A mode is a profile the conversation can be had with (`primary`): the next turns are its."""
        session = self._session(session_id)
        await self._use_mode(session, mode_id)
        self.stream.put(session.id, schema.ConfigOptionUpdate(session_update="config_option_update",
                                                              config_options=await self._config_options(session)))
        await self.stream.join()
        return schema.SetSessionModeResponse()

    async def _use_mode(self, session: AcpSession, mode_id: str) -> None:
        """The conversation is had with the profile `mode_id` from its next turn, in this process and any that
        opens it later (it is the session's profile); the client hears of it as the current mode."""
        try:
            await session.surface.sessions.use_profile(session.id, mode_id)
        except ConfigError as exc:
            raise RequestError.invalid_params({"modeId": str(exc)}) from None
        self.stream.put(session.id, schema.CurrentModeUpdate(session_update="current_mode_update",
                                                             current_mode_id=mode_id))
        await self.stream.join()

    async def _mode(self, session: AcpSession) -> tuple[str, list[Any]]:
        """The session's mode (its profile) and the modes it can have (the primary profiles)."""
        record = await session.surface.sessions.get(session.id)
        current = record.profile if record else session.surface.settings.primary_profile
        return current, sorted(session.surface.profiles.with_capability("primary"), key=lambda p: p.name)

    async def _modes(self, session: AcpSession) -> schema.SessionModeState:
        current, profiles = await self._mode(session)
        return schema.SessionModeState(current_mode_id=current, available_modes=[
            schema.SessionMode(id=p.name, name=p.name, description=cap(p.description, 200) or None)
            for p in profiles])

    async def _config_options(self, session: AcpSession) -> list[Any]:
        record = await session.surface.sessions.get(session.id)
        current = session.control.model or (record.model if record else None) or session.surface.settings.model
        session.model = current
        mode, profiles = await self._mode(session)
        return [schema.SessionConfigOptionSelect(
            type="select", id="model", name="Model", category="model", description="The model of the next turns",
            current_value=current,
            options=[schema.SessionConfigSelectOption(value=model, name=model, description=note)
                     for model, note in session.surface.models.choices(current)]),
            schema.SessionConfigOptionSelect(
            type="select", id="mode", name="Mode", category="mode",
            description="The profile of the next turns (as the session's modes)", current_value=mode,
            options=[schema.SessionConfigSelectOption(value=p.name, name=p.name,
                                                      description=cap(p.description, 200) or None)
                     for p in profiles])]

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # -- sessions, runtimes ---------------------------------------------------------------------------------

    async def _surface(self, cwd: str) -> Surface:
        path = Path(cwd)
        if not path.is_absolute() or not await asyncio.to_thread(path.is_dir):
            raise RequestError.invalid_params({"cwd": f"{cwd!r} must be an absolute path to a folder"})
        key = await asyncio.to_thread(path.resolve)
        if key not in self._surfaces:
            try:
                surface = await self._open_surface(key)
            except YeetuiError as exc:
                raise RequestError.internal_error({"cwd": cwd, "reason": str(exc)}) from None
            surface.bus.add_listener(self.stream.listen)
            self._surfaces[key] = surface
        self.stream.start()
        return self._surfaces[key]

    def _follow_elsewhere(self, session: AcpSession, after: int) -> None:
        """A conversation another yeetui is running now (the TUI, a detached worker): what it adds is shown as
        it is stored, until its turn ends."""
        if session.following is not None and not session.following.done():
            return  # already followed (a second load of the same conversation)
        task = asyncio.create_task(self._follow(session, after), name=f"acp follow {session.id[:8]}")
        session.following = task
        self._following.add(task)
        task.add_done_callback(self._following.discard)

    async def _follow(self, session: AcpSession, after: int) -> None:
        desk, store, shown = session.surface.runs, session.surface.store, Replay()
        while True:
            live = await desk.elsewhere(session.id)
            for stored in await store.messages(session.id, include_partial=False):
                if stored.id > after:
                    after = stored.id
                    for update in shown.updates(stored.message):
                        self.stream.put(session.id, update)
            if live is None:
                return
            await asyncio.sleep(FOLLOW_POLL)

    def _attach(self, surface: Surface, servers: Any) -> None:
        """The MCP servers the client passed join the runtime's (as the user's own: they configured their
        editor); one that cannot be taken is said in the log and skipped, never fatal to the session."""
        specs = []
        for server in servers or []:
            try:
                if getattr(server, "url", None) is not None:
                    specs.append(client_server(server.name, url=server.url, sse=getattr(server, "type", "") == "sse",
                                               headers={h.name: h.value for h in server.headers or []}))
                else:
                    specs.append(client_server(server.name, command=server.command, args=server.args or [],
                                               env={e.name: e.value for e in server.env or []}))
            except YeetuiError as exc:
                log.warning("%s", exc)
        for problem in surface.mcp.attach(specs):
            log.warning("%s", problem)

    def _open(self, session_id: str, surface: Surface, spent: float = 0.0,
              children: dict[str, float] | None = None) -> AcpSession:
        if session_id not in self._sessions:
            self._sessions[session_id] = AcpSession(session_id, surface, surface.session_control(session_id),
                                                  spent=spent, children_spent=children or {})
        return self._sessions[session_id]

    def _session(self, session_id: str) -> AcpSession:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise RequestError.invalid_params({"sessionId": f"no session {session_id!r}: new or load it first"}) \
                from None

    def _announce_commands(self, session_id: str, surface: Surface) -> None:
        """The profiles' slash triggers, then the command files (Claude Code's and OpenCode's `commands/`, the
        user's) under the names they get beside them."""
        commands = [schema.AvailableCommand(name=p.triggers.slash.lstrip("/"), description=p.description or p.name,
                                            input=schema.UnstructuredCommandInput(hint="what to ask it"))
                    for p in surface.profiles if p.triggers.slash]
        commands += [schema.AvailableCommand(name=c.name, description=cap(c.description or "a prompt", 200),
                                             input=schema.UnstructuredCommandInput(hint=c.argument_hint or "arguments"))
                     for c in self._command_files(surface)]
        self.stream.put(session_id, schema.AvailableCommandsUpdate(
            session_update="available_commands_update", available_commands=commands))

    @staticmethod
    def _command_files(surface: Surface) -> list[CommandFile]:
        taken = {p.triggers.slash.lstrip("/") for p in surface.profiles if p.triggers.slash}
        return placed_commands(surface.command_files, taken)[0]

    async def _run_subagent(self, session: AcpSession, profile: str, prompt: str) -> None:
        """A slash command: the profile's agent, as this session's tool call, streamed until it ends."""
        handle = await session.control.spawn(profile, prompt)
        session.tree.add(handle.session_id)
        call_id = f"subagent-{handle.run_id}"
        start = schema.ToolCallStart(session_update="tool_call", tool_call_id=call_id,
                                     title=f"{handle.label}: {cap(prompt, 120)}", kind="think", status="in_progress",
                                     raw_input={"profile": profile, "prompt": prompt})
        if self.stream.subagents:  # announced when its run registered, just before: the call may point at it
            self.stream.put_raw(session.id, with_sessions(start, [handle.session_id]))
        else:
            self.stream.put(session.id, start)
        ended = await session.surface.runs.wait(handle.run_id)
        output = (ended.output or ended.error or ended.status.value) if ended is not None else "it ended"
        done = schema.ToolCallProgress(
            session_update="tool_call_update", tool_call_id=call_id,
            status="completed" if ended is not None and ended.status.value == "completed" else "failed",
            content=[schema.ContentToolCallContent(type="content", content=schema.TextContentBlock(
                type="text", text=cap(output, updates.TOOL_OUTPUT_CAP)))])
        if self.stream.subagents:
            self.stream.put_raw(session.id, with_sessions(done, [handle.session_id]))
        else:
            self.stream.put(session.id, done)
        if done.status == "completed" and ended is not None and ended.output:  # its answer is the turn's
            self.stream.put(session.id, session.answer(session.id, ended.output))

    async def close(self) -> None:
        for task in list(self._following):
            task.cancel()
        for session in self._sessions.values():
            with contextlib.suppress(Exception):
                await session.control.close()
        for surface in self._surfaces.values():
            await surface.close()
        await self.stream.close()


async def _spent(surface: Surface, session_id: str) -> tuple[float, dict[str, float]]:
    """What the conversation's earlier turns cost (those whose price is known), and each run of its subagents
    (theirs included)."""
    store = surface.store
    own = sum(r.cost for r in await store.list_runs(session_id=session_id, limit=1000) if r.cost is not None)
    children: dict[str, float] = {}
    for below in (await store.session_tree_ids(session_id))[:1000]:
        if below != session_id:
            children.update({r.id: r.cost for r in await store.list_runs(session_id=below, limit=100)
                             if r.cost is not None})
    return own, children
