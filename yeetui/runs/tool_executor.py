"""Runs one tool call for a run, after every check the tool layer owes the user.

Order: malformed arguments → tool offered to this run? → workflow step allows it? → arguments valid? →
read-only binding vs writing tool → permission rules (deny / ask the user / allow) → exit-tool schema →
run. Every refusal becomes an error result the model can read; nothing here raises into the loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from yeetui.bus import Bus
from yeetui.definitions.workflows import WorkflowTracker
from yeetui.errors import ToolError
from yeetui.events import PermissionAnswer, PermissionRequested, ToolCallFinished, ToolCallStarted
from yeetui.framing import framed
from yeetui.hooks.runner import HookOutcome, HookRunner
from yeetui.hooks.shapes import claude_tool_input, claude_tool_name, claude_tool_response, yeetui_tool_input
from yeetui.messages import DENIED_BY_RULE, DENIED_BY_USER, DENIED_UNATTENDED, ToolCallPart, ToolResultPart
from yeetui.redact import redact
from yeetui.runs.mcp_tools import McpAccess
from yeetui.runs.permissions import Action, Permissions
from yeetui.tools.base import Tool, ToolContext, ToolOutput
from yeetui.tools.registry import ToolRegistry

log = logging.getLogger(__name__)


@dataclass
class ToolRunState:
    """Per-run facts the executor needs; owned by the runner."""

    run_id: str
    session_id: str
    agent_label: str
    offered: set[str]
    permissions: Permissions
    context: ToolContext
    workflow: WorkflowTracker | None = None
    secrets: Iterable[str] = ()
    on_status: Callable[[str], Any] | None = None
    """Called with "waiting_permission" / "running" around a permission question."""
    on_always: Callable[[str, str], Awaitable[None]] | None = None
    """Called with (tool, subject) when the user answers "Always": the session keeps the rule."""
    exit_data: dict[str, dict[str, Any]] = field(default_factory=dict)


class ToolExecutor:
    def __init__(self, registry: ToolRegistry, bus: Bus, *, output_cap: int = 30_000,
                 hooks: HookRunner | None = None) -> None:
        self.registry = registry
        self.bus = bus
        self.output_cap = output_cap
        self.hooks = hooks
        """The user's PreToolUse, PostToolUse, PermissionRequest and Notification hooks (yeetui.hooks)."""
        self._notifying: set[asyncio.Future[HookOutcome]] = set()

    async def execute(self, call: ToolCallPart, state: ToolRunState) -> tuple[ToolResultPart, ToolOutput]:
        self.bus.publish(ToolCallStarted(state.run_id, state.session_id, call.id, call.name, call.arguments,
                                         self.registry.activity(call.name, call.arguments)))
        try:
            output = await self._checked_run(call, state)
        except asyncio.CancelledError:
            raise
        except ToolError as exc:
            output = ToolOutput(content=str(exc), is_error=True)
        except Exception as exc:  # a tool bug must not end the run; the model and the log hear about it
            log.exception("tool %s crashed", call.name)
            output = ToolOutput(content=f"{call.name} failed unexpectedly: {type(exc).__name__}: {exc}",
                                is_error=True)
        content = redact(output.content, state.secrets)
        if len(content) > self.output_cap:
            omitted = len(content) - self.output_cap
            content = content[: self.output_cap] + f"\n[output truncated: {omitted} characters omitted]"
        if state.workflow is not None:
            left = state.workflow.step
            moved_to = state.workflow.after_tool(call.name, call.arguments, output.is_error)
            if moved_to is not None:  # a checkpoint, not the end: say so (an exit tool's own text would not)
                content = (f"Step '{left}' is done; the run goes on in workflow step '{moved_to}'. Its "
                           "instructions are in your system prompt.")
        self.bus.publish(ToolCallFinished(state.run_id, state.session_id, call.id, call.name, content,
                                          output.is_error))
        part = ToolResultPart(call_id=call.id, name=call.name, content=content, is_error=output.is_error)
        return part, output

    async def _checked_run(self, call: ToolCallPart, state: ToolRunState) -> ToolOutput:
        """The call, past every check in order — offered, valid, the workspace, the rules, the hooks, the user —
        run, and its PostToolUse hooks heard; the first check that refuses it is its answer."""
        admitted = self._admitted(call, state)
        if isinstance(admitted, ToolOutput):
            return admitted
        hooked = await self._before(admitted, state)
        if isinstance(hooked, ToolOutput):
            return hooked
        if hooked.action == "ask" and (refused := await self._asked(hooked, state)) is not None:
            return refused
        call, tool = hooked.call, hooked.tool
        if state.workflow is not None and (problem := state.workflow.exit_error(call.name, call.arguments)):
            return _error(problem)
        context = state.context if hooked.action == "ask" else dataclasses.replace(state.context, hermetic_git=True)
        if self.hooks is not None and self.hooks.has("PostToolUse", call.name):  # it reads Claude Code's shape
            context = dataclasses.replace(context, for_hooks=True)
        output = await tool.run(hooked.args, context)
        if (after := await self._hook(call, state, "PostToolUse", output)) is not None:
            said = "\n\n".join(part for part in (after.reason if after.blocked else "", after.context) if part)
            if said:  # a block's reason and `additionalContext` reach the model, framed as data
                output = dataclasses.replace(output, content=f"{output.content}\n\n[PostToolUse hook]\n"
                                                             f"{_hook_said(said, 'PostToolUse')}")
        if output.data is not None and not output.is_error:
            state.exit_data[call.name] = output.data
        return output

    def _admitted(self, call: ToolCallPart, state: ToolRunState) -> _Admitted | ToolOutput:
        """The call as the rules see it (its tool, arguments, subject and the rules' action), or why it is
        refused before any hook or person hears of it."""
        if call.raw_arguments is not None:
            return _error(f"{call.name}: the arguments were not valid JSON ({call.raw_arguments[:200]!r}). "
                          "Send the arguments as a JSON object.")
        mcp = state.context.mcp
        if call.name not in state.offered and not (isinstance(mcp, McpAccess) and mcp.is_loaded(call.name)):
            return _error(f"Tool {call.name!r} is not available to {state.agent_label}. "
                          f"Available tools: {', '.join(sorted(state.offered))}.")
        if state.workflow is not None and (reason := state.workflow.check_tool(call.name)):
            return _error(reason)
        prepared = self.registry.prepare(call.name, call.arguments, None)
        if isinstance(prepared, ToolOutput):
            return prepared
        tool, args = prepared
        if tool.writes and not state.context.binding.allow_writes:
            return _error(f"{call.name} is refused: {state.agent_label} works in a read-only workspace.")
        admitted = _Admitted(call, tool, args, tool.subject(args), "allow")
        admitted.action = _decide(admitted, state)
        if admitted.action == "deny":
            return _error(f"{call.name} on {admitted.subject!r}{DENIED_BY_RULE}")
        return admitted

    async def _before(self, admitted: _Admitted, state: ToolRunState) -> _Admitted | ToolOutput:
        """The PreToolUse and PermissionRequest hooks' word on the call: a block, a rewrite (the rules decide
        again on what will run, as in Claude Code), an allow or a deny of their own."""
        call, subject = admitted.call, admitted.subject
        hooked = await self._hook(call, state, "PreToolUse")
        if hooked is not None and (hooked.blocked or hooked.permission == "deny"):
            return _error(f"{call.name} on {subject!r} was blocked by a PreToolUse hook. Do not retry it as it is; "
                          "choose another way or ask the user. The hook said:\n"
                          f"{_hook_said(hooked.reason, 'PreToolUse')}")
        if hooked is not None and hooked.updated_input is not None:
            rewritten = yeetui_tool_input(call.name, call.arguments, hooked.updated_input,
                                          state.context.binding.cwd)
            prepared = self.registry.prepare(call.name, rewritten, None)
            if isinstance(prepared, ToolOutput):
                return _error(f"{call.name}: a PreToolUse hook rewrote the call into one that is not valid: "
                              f"{prepared.content}")
            tool, args = prepared
            admitted = _Admitted(call.model_copy(update={"arguments": rewritten}), tool, args, tool.subject(args),
                                 "allow")
            admitted.action = _decide(admitted, state)
            if admitted.action == "deny":
                return _error(f"{call.name} on {admitted.subject!r} (as a PreToolUse hook rewrote it)"
                              f"{DENIED_BY_RULE}")
        if hooked is not None and hooked.permission is not None:
            admitted.action = "allow" if hooked.permission == "allow" else "ask"  # a hook's word, the user's own
        if admitted.action == "ask" and (asked := await self._hook(admitted.call, state, "PermissionRequest")) \
                is not None and asked.permission in ("allow", "deny"):
            if asked.permission == "deny":
                return _error(f"{call.name} on {admitted.subject!r} was refused by a PermissionRequest hook. The "
                              f"hook said:\n{_hook_said(asked.reason, 'PermissionRequest')}")
            admitted.action = "allow"
        return admitted

    async def _asked(self, admitted: _Admitted, state: ToolRunState) -> ToolOutput | None:
        """The user's answer to a call the rules ask about: None when it may run, else why not."""
        call, subject = admitted.call, admitted.subject
        answer = await self._ask(call, subject, state)
        if answer == "deny":
            return _error(f"{DENIED_BY_USER}{call.name} on {subject!r}. Do not retry it; choose another way "
                          "or ask the user.")
        if answer == "unattended":
            binding = state.context.binding
            rule = state.permissions.reason(call.name, subject, writes=_writes(admitted), cwd=binding.cwd,
                                            roots=binding.roots)
            return _error(f"{DENIED_UNATTENDED}{call.name} on {subject!r} needs permission ({rule}), and this "
                          "run has nobody to ask (it runs headless without --yes, or no yeetui was open to "
                          "answer, or nobody answered in time). Do not retry it; choose another way, or "
                          "finish and say which permission you need.")
        if answer == "allow_always":
            state.permissions.remember_always(call.name, subject)
            if state.on_always is not None:
                await state.on_always(call.name, subject)
        return None

    async def _hook(self, call: ToolCallPart, state: ToolRunState, event: str,
                    output: ToolOutput | None = None) -> HookOutcome | None:
        """The user's hooks of `event` on this call, in Claude Code's terms (None: none to run)."""
        if self.hooks is None or not self.hooks.has(event, call.name):
            return None
        cwd = state.context.binding.cwd
        fields: dict[str, Any] = {"tool_name": claude_tool_name(call.name),
                                  "tool_input": claude_tool_input(call.name, call.arguments, cwd),
                                  "tool_use_id": call.id}
        if output is not None:
            fields["tool_response"] = claude_tool_response(call.name, call.arguments, output, cwd)
        return await self.hooks.fire(event, session_id=state.session_id, run_id=state.run_id, target=call.name,
                                     **fields)

    async def _ask(self, call: ToolCallPart, subject: str, state: ToolRunState) -> PermissionAnswer:
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[PermissionAnswer] = loop.create_future()
        if state.on_status:
            await state.on_status("waiting_permission")
        self.bus.publish(PermissionRequested(state.run_id, state.session_id, state.agent_label, call.name,
                                             subject, dict(call.arguments), reply, call_id=call.id))
        if not reply.done():  # somebody is asked (a headless run's question is refused as it is published)
            self._notify(call, state)
        try:
            return await reply
        finally:
            if state.on_status:
                await state.on_status("running")

    def _notify(self, call: ToolCallPart, state: ToolRunState) -> None:
        """The user is asked: their Notification hooks hear it (`permission_prompt`, as Claude Code says), without
        the question waiting for them."""
        if self.hooks is None or not self.hooks.has("Notification", "permission_prompt"):
            return
        notify = asyncio.ensure_future(self.hooks.fire(
            "Notification", session_id=state.session_id, run_id=state.run_id, target="permission_prompt",
            message=f"{state.agent_label} needs your permission to use {claude_tool_name(call.name)}",
            title="Permission needed", notification_type="permission_prompt"))
        self._notifying.add(notify)
        notify.add_done_callback(self._notifying.discard)


def _hook_said(text: str, event: str) -> str:
    return framed("hook-output", text, writer=f"a {event} hook (its output may quote files or tools)", event=event)



@dataclass
class _Admitted:
    """A call the rules let through so far: what runs, on what, and the rules' (then the hooks') action."""

    call: ToolCallPart
    tool: Tool
    args: BaseModel
    subject: str
    action: Action


def _writes(admitted: _Admitted) -> bool:
    """The call changes something (bash always may)."""
    return admitted.tool.writes or admitted.call.name == "bash"


def _decide(admitted: _Admitted, state: ToolRunState) -> Action:
    """The permission rules' action on the call: allow, ask or deny."""
    binding = state.context.binding
    return state.permissions.decide(admitted.call.name, admitted.subject, writes=_writes(admitted),
                                    cwd=binding.cwd, roots=binding.roots)


def _error(text: str) -> ToolOutput:
    return ToolOutput(content=text, is_error=True)
