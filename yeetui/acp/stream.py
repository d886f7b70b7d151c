"""The stream of one ACP connection: yeetui's events as session updates, in the order they came.

A bus listener (`listen`) turns the events of the connection's sessions — and of the subagents below them — into
updates queued on one outbox; one sender sends them, so a permission request (queued like an update) never
overtakes the tool call it is about. For a client that opted into subagent sessions (`subagents`), each subagent is
announced with `subagent_update` on its parent's session before anything carries its id and streams under its own;
for one that did not, a subagent shows only as the tool call that started it. What a subagent is given — its task,
a later word from its parent — comes to that client as a `session_message` on the subagent's session.

The call an agent ends its turn with (`complete`) is its answer, and goes as the agent's text, in a paragraph of
its own after what it said before in the turn: an editor shows the answer where it shows replies, and a client
that prints only the agent's text (`acpx --format quiet`) prints it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

from acp import schema

from yeetui.acp import updates
from yeetui.application.models import context_window
from yeetui.application.surface import Surface
from yeetui.events import (
    MessageCommitted,
    PermissionAnswer,
    PermissionRequested,
    RunProgress,
    RunRegistered,
    RunStatus,
    RunStatusChanged,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallStarted,
    UsageUpdated,
)
from yeetui.text import cap

log = logging.getLogger(__name__)

OPTIONS = [schema.PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
           schema.PermissionOption(option_id="allow_always", name="Always allow (this session)", kind="allow_always"),
           schema.PermissionOption(option_id="deny", name="Deny", kind="reject_once")]
ANSWERS: dict[str, PermissionAnswer] = {"allow_once": "allow_once", "allow_always": "allow_always", "deny": "deny"}


@dataclass
class AcpSession:
    """One ACP session: the conversation, the turn running in it, the subagent sessions of its tree."""

    id: str
    surface: Surface
    control: Any
    """`SessionControl` of the conversation."""
    tree: set[str] = field(default_factory=set)
    """Session ids below this one (subagents, theirs), whose events belong to this session's turn."""
    cancelled: bool = False
    parents: dict[str, str] = field(default_factory=dict)
    """A subagent's session → the session that started it."""
    runs: dict[str, str] = field(default_factory=dict)
    """A subagent's session → its run."""
    spawning: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """A session → its spawning tool calls not finished yet: (call id, profile), oldest first."""
    links: dict[str, list[str]] = field(default_factory=dict)
    """A spawning tool call → the subagent sessions it started (its `session` content)."""
    model: str = ""
    """The model of its turns (what `usage_update` measures the context against)."""
    spent: float = 0.0
    """What its earlier turns cost (`usage_update`'s cost is the session's, not the turn's)."""
    children_spent: dict[str, float] = field(default_factory=dict)
    """Each run of its subagents (and theirs) → what it cost so far: `usage_update`'s cost holds them, so an
    editor shows what the whole session cost, as Claude Code's adapter does."""
    children_usage: dict[str, Any] = field(default_factory=dict)
    """A subagent's session → the tokens its run used so far (said on its idle state)."""
    following: asyncio.Task[None] | None = None
    """Showing what another process running the conversation stores (`YeetuiAgent._follow`)."""
    said: dict[str, str] = field(default_factory=dict)
    """A session (its own, a subagent's) → the end of what its agent said in the turn so far: an answer follows it
    as a paragraph of its own."""
    answered: set[str] = field(default_factory=set)
    """Calls sent as the agent's text (their answer), whose endings are not sent as a tool call's."""

    def say(self, session_id: str, text: str) -> Any:
        """The agent of `session_id` says `text`: its update (what it said is remembered for an answer after)."""
        self.said[session_id] = (self.said.get(session_id, "") + text)[-2:]
        return updates.text_chunk(text)

    def answer(self, session_id: str, text: str) -> Any:
        """The agent of `session_id` answers `text`: a paragraph of its own after what it said in the turn."""
        return self.say(session_id, updates.after(self.said.get(session_id, ""), text))


@dataclass
class Send:
    session_id: str
    update: Any


@dataclass
class Ask:
    session_id: str
    request: PermissionRequested


@dataclass
class Raw:
    """A `session/update` the SDK has no model for (the subagent messages): sent as written."""

    session_id: str
    update: dict[str, Any]


SPAWNING = {"spawn_subagent", "request_review"}
"""Tools whose call starts a subagent: its tool call links to the child's session."""


class UpdateStream:
    """The outbox of one connection and what fills it. `conn` is the SDK's connection to the client."""

    def __init__(self, sessions: dict[str, AcpSession]) -> None:
        self.conn: Any = None
        self.sessions = sessions
        """The connection's sessions (the agent's, shared): whose events are sent."""
        self.subagents = False
        """The client opted into subagent sessions (`clientCapabilities.subagents`): each subagent is announced
        with `subagent_update` and streams under its own session id. Without it, a subagent shows only as the
        tool call of its parent that started it (what Zed and older clients show)."""
        self._outbox: asyncio.Queue[Send | Ask | Raw | None] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._asking: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        if self._sender is None:
            self._sender = asyncio.create_task(self._send_all(), name="acp updates")

    def put(self, session_id: str, update: Any) -> None:
        """An update of the SDK's models, for `session_id`."""
        self._outbox.put_nowait(Send(session_id, update))

    def put_raw(self, session_id: str, update: dict[str, Any]) -> None:
        """An update the SDK has no model for, as written."""
        self._outbox.put_nowait(Raw(session_id, update))

    async def join(self) -> None:
        """Until everything queued so far has been sent."""
        await self._outbox.join()

    def owner(self, session_id: str) -> AcpSession | None:
        """The ACP session whose turn an event of `session_id` belongs to."""
        if session_id in self.sessions:
            return self.sessions[session_id]
        return next((s for s in self.sessions.values() if session_id in s.tree), None)

    def listen(self, event: object) -> None:
        """A bus listener (synchronous): events of our sessions become updates, queued in order."""
        if isinstance(event, RunRegistered):
            self._registered(event)
            return
        session_id = getattr(event, "session_id", None)
        if not isinstance(session_id, str) or (owner := self.owner(session_id)) is None:
            return
        child = session_id != owner.id
        if isinstance(event, PermissionRequested):
            if not event.reply.done():  # a subagent's question goes on its own session, when it has one there
                self._outbox.put_nowait(Ask(session_id if child and self.subagents else owner.id, event))
            return
        if isinstance(event, RunProgress):
            if event.steps:  # an orchestrator's steps: the plan of the session it shows in
                target = session_id if self.subagents else owner.id
                self._outbox.put_nowait(Send(target, updates.plan(event.steps)))
            return
        if child and not self._child_streams(owner, session_id, event):
            return
        if isinstance(event, UsageUpdated):
            update = None if child else self._usage_update(owner, event)
        elif isinstance(event, ToolCallFinished):
            update = self._tool_finished(owner, session_id, event)
        else:
            update = self._stream_update(owner, session_id, event)
        if update is not None:
            self._outbox.put_nowait(Send(session_id, update))

    def _child_streams(self, owner: AcpSession, session_id: str, event: object) -> bool:
        """Whether a subagent's event streams on: what it spent is kept, and for a client that opted in its
        status goes on its parent's session and what it was told as a `session_message` on its own."""
        if isinstance(event, UsageUpdated):
            owner.children_usage[session_id] = event.usage
            if event.cost is not None:
                owner.children_spent[event.run_id] = event.cost
        if not self.subagents:  # its stream shows only as its parent's tool call
            return False
        if isinstance(event, MessageCommitted):
            if (told := _told(owner, session_id, event)) is not None:
                self._outbox.put_nowait(Raw(session_id, told))
            return False
        if isinstance(event, RunStatusChanged):
            if session_id in owner.parents:
                self._child_status(owner, session_id, event)
            return False
        return True

    def _child_status(self, owner: AcpSession, session_id: str, event: RunStatusChanged) -> None:
        """A subagent's status, on its parent's session (with what it spent, once it is idle)."""
        state = _state(event.status, event.reason)
        if state["state"] == "idle" and (spent := owner.children_usage.get(session_id)) is not None:
            state["usage"] = updates.usage(spent).model_dump(by_alias=True, exclude_none=True)
        self._outbox.put_nowait(Raw(owner.parents[session_id], _subagent_update(session_id, state=state)))

    def _tool_finished(self, owner: AcpSession, session_id: str, event: ToolCallFinished) -> Any:
        """The tool call's update; a call that started a subagent is sent here, linked to its session (None)."""
        if event.call_id in owner.answered:  # the agent's answer, already said: a refused one is said to fail
            owner.answered.discard(event.call_id)
            return updates.refused_answer(event.call_id, event.name, event.content) if event.is_error else None
        update = updates.tool_finished(event)
        open_calls = owner.spawning.get(session_id, [])
        owner.spawning[session_id] = [c for c in open_calls if c[0] != event.call_id]
        if linked := owner.links.pop(event.call_id, None):
            self._outbox.put_nowait(Raw(session_id, with_sessions(update, linked)))
            return None
        return update

    @staticmethod
    def _usage_update(owner: AcpSession, event: UsageUpdated) -> Any:
        """The context used of the session's window, and the cost of its whole tree (None: nothing to say)."""
        if not event.context_tokens or not (size := context_window(owner.model)):
            return None
        whole = owner.spent + event.cost + sum(owner.children_spent.values()) if event.cost is not None else None
        cost = schema.Cost(amount=round(whole, 6), currency="USD") if whole is not None else None
        return schema.UsageUpdate(session_update="usage_update", used=event.context_tokens, size=size, cost=cost)

    @staticmethod
    def _stream_update(owner: AcpSession, session_id: str, event: object) -> Any:
        """The update for a text, thought or tool-start event (None for any other)."""
        if isinstance(event, TextDelta):
            return owner.say(session_id, event.text)
        if isinstance(event, ThinkingDelta):
            return updates.thought_chunk(event)
        if isinstance(event, ToolCallStarted):
            if (text := updates.answer(event.name, event.arguments)) is not None:
                owner.answered.add(event.call_id)
                return owner.answer(session_id, text)
            if event.name in SPAWNING:
                owner.spawning.setdefault(session_id, []).append((event.call_id, str(event.arguments.get(
                    "profile") or ("reviewer" if event.name == "request_review" else ""))))
            return updates.tool_started(event)
        return None

    def _registered(self, event: RunRegistered) -> None:
        """A run exists. Below one of our sessions, it joins that session's tree; a client that opted in hears
        of it (`subagent_update`, on its parent's session, before anything carries its id), and the tool call
        that started it links to it."""
        parent = event.parent_session_id
        owner = self.owner(parent) if parent else None
        if owner is None or parent is None:
            return
        owner.tree.add(event.session_id)
        owner.parents[event.session_id] = parent
        owner.runs[event.session_id] = event.run_id
        if not self.subagents:
            return
        self._outbox.put_nowait(Raw(parent, _subagent_update(
            event.session_id, title=event.label, description=f"{event.profile} · {event.model}",
            cwd=str(owner.surface.project_dir), capabilities={"cancel": {}}, state={"state": "running"})))
        open_calls = owner.spawning.get(parent, [])
        call = next((c for c in open_calls if c[1] in (event.profile, "")), None)
        if call is not None:  # one call, one child: the next child of the same profile is the next call's
            linked = owner.links.setdefault(call[0], [])
            linked.append(event.session_id)
            owner.spawning[parent] = [c for c in open_calls if c is not call]
            self._outbox.put_nowait(Raw(parent, {"sessionUpdate": "tool_call_update", "toolCallId": call[0],
                                                  "content": [{"type": "session", "sessionId": s}
                                                              for s in linked]}))

    async def _send_all(self) -> None:
        while (item := await self._outbox.get()) is not None:
            try:
                if isinstance(item, Send):
                    await self.conn.session_update(session_id=item.session_id, update=item.update)
                elif isinstance(item, Raw):
                    # The SDK's connection object is the one way to send a message its models do not know yet.
                    await self.conn._conn.send_notification(
                        "session/update", {"sessionId": item.session_id, "update": item.update})
                else:  # sent now (after the updates before it), answered whenever the user answers
                    task = asyncio.create_task(self._ask(item))
                    self._asking.add(task)
                    task.add_done_callback(self._asking.discard)
            except Exception:  # a closed connection: the updates have nowhere to go
                log.exception("could not send an ACP session update")
            finally:
                self._outbox.task_done()
        self._outbox.task_done()

    async def _ask(self, ask: Ask) -> None:
        request = ask.request
        call = schema.ToolCallUpdate(tool_call_id=request.call_id or f"ask-{id(request)}", status="pending",
                                     title=f"{request.agent_label} wants to run {request.tool}: "
                                           f"{cap(request.subject, 300)}",
                                     kind=updates.tool_kind(request.tool), raw_input=request.arguments)
        answer: PermissionAnswer = "deny"
        try:
            response = await self.conn.request_permission(session_id=ask.session_id, tool_call=call, options=OPTIONS)
            outcome = response.outcome
            if getattr(outcome, "outcome", None) == "selected":
                answer = ANSWERS.get(outcome.option_id, "deny")
        except Exception:  # the client failed or went away: nobody allowed it
            log.exception("an ACP permission request failed; the call is denied")
        if not request.reply.done():
            request.reply.set_result(answer)

    async def close(self) -> None:
        for task in list(self._asking):
            task.cancel()
        if self._sender is not None:
            self._outbox.put_nowait(None)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._sender, 5)


def _told(owner: AcpSession, session_id: str, event: MessageCommitted) -> dict[str, Any] | None:
    """What a subagent was given — its task, a later word from its parent — as a `session_message` from its
    parent's session (None for any other message: its own, its children's results, the runner's reminders)."""
    message = event.message
    if message.role != "user" or not message.text.strip() or any(
            message.meta.get(flag) for flag in ("nudge", "announcement", "compaction")):
        return None
    return {"sessionUpdate": "session_message", "messageId": f"{session_id}:{event.message_id}",
            "senderSessionId": owner.parents.get(session_id, owner.id), "recipientSessionId": session_id,
            "content": [{"type": "text", "text": cap(message.text, updates.TOOL_OUTPUT_CAP)}]}


def _subagent_update(session_id: str, **fields: Any) -> dict[str, Any]:
    """`subagent_update` (ACP, stable 2026-11-20): a patch of what the client knows of a subagent session."""
    return {"sessionUpdate": "subagent_update", "sessionId": session_id, **fields}


def _state(status: RunStatus, reason: str = "") -> dict[str, Any]:
    """A run's status as a subagent's state: working, waiting for an answer, or done (and how)."""
    if status == RunStatus.WAITING_PERMISSION:
        return {"state": "requires_action"}
    if not status.is_final:
        return {"state": "running"}
    if status in (RunStatus.COMPLETED, RunStatus.WAITING_USER):
        return {"state": "idle", "stopReason": "end_turn"}
    if status == RunStatus.CANCELLED:
        return {"state": "idle", "stopReason": "cancelled"}
    return {"state": "idle", "stopReason": "error", "error": {"code": -32603, "message": cap(reason or status.value,
                                                                                             500)}}


def with_sessions(update: Any, sessions: list[str]) -> dict[str, Any]:
    """A tool call update as written, its content led by links to the subagent sessions it started."""
    data: dict[str, Any] = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["content"] = [{"type": "session", "sessionId": s} for s in sessions] + list(data.get("content") or [])
    return data
