"""Agent tools: how an agent hands work to subagents and manages them.

They act through `ctx.agents` (a yeetui.subagents.host.AgentHost bound to the calling run); a run without one
is not allowed to spawn and never gets these tools offered.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from yeetui.errors import ToolError, YeetuiError
from yeetui.events import RunStatus
from yeetui.runs.budget import Budget
from yeetui.subagents.host import AgentHost
from yeetui.subagents.inbox import announcement_text, follow_up_note, worktree_note
from yeetui.subagents.spawner import SpawnHandle
from yeetui.text import one_line
from yeetui.tools.base import Tool, ToolContext, ToolOutput

_STRICT = ConfigDict(extra="forbid", defer_build=True)  # validators built at the first call, not at start


def _host(ctx: ToolContext) -> AgentHost:
    if not isinstance(ctx.agents, AgentHost):
        raise ToolError("This agent may not use subagents.")
    return ctx.agents


def _json(data: object) -> ToolOutput:
    return ToolOutput(content=json.dumps(data, ensure_ascii=False, indent=1))


def _report(handle: SpawnHandle, *, with_artifacts: bool = False) -> ToolOutput:
    """A non-blocking spawn's acceptance, or a blocking one's result as the same capped, untrusted-framed
    announcement a non-blocking child would get (so the parent sees one format either way)."""
    result = handle.result
    if result is None:
        return _json(handle.to_json())
    artifacts = (result.result or {}).get("artifacts")
    findings = json.dumps(artifacts, ensure_ascii=False) if with_artifacts and artifacts else None
    text = announcement_text(handle.label, result.status, result.output, result.error, findings)
    if handle.worktree is not None:
        text += "\n" + worktree_note(handle.label, handle.worktree)
    if result.status == RunStatus.COMPLETED:
        text += "\n" + follow_up_note(handle.label)
    return ToolOutput(content=text, is_error=result.status != RunStatus.COMPLETED,
                      data={"run_id": handle.run_id, "status": result.status.value})


class SpawnBudget(BaseModel):
    model_config = _STRICT
    max_cost_usd: float | None = Field(None, gt=0, description="US dollars.")
    max_tokens: int | None = Field(None, ge=1, description="Input plus output tokens.")
    max_turns: int | None = Field(None, ge=1, description="Model requests.")
    max_minutes: float | None = Field(None, gt=0, description="Minutes of wall-clock time.")


class SpawnArgs(BaseModel):
    model_config = _STRICT
    profile: str = Field(description="Profile to run, e.g. oracle, reviewer, planner, builder, generic.")
    prompt: str = Field(min_length=1, description="The complete, self-contained task for the subagent.")
    blocking: bool = Field(True, description="Wait for the result (true), or return at once and get the result "
                                             "announced later (false).")
    label: str | None = Field(None, description="Short title for the subagent's session (shown in the switcher).")
    model: str | None = Field(None, description="Override the model (provider/model).")
    timeout: float | None = Field(None, gt=0, le=1800, description="Seconds before the subagent is stopped.")
    context: str = Field("none", description="Context to pass: none, summary_markdown, compact_markdown, "
                                             "transcript:<n>, session_id:<id>, file:<path>.")
    budget: SpawnBudget | None = Field(None, description="What the subagent and every agent it starts may spend "
                                       "together; reaching a limit halts them all (your own budget still holds).")
    mode: Literal["in_process", "tmux"] | None = Field(
        None, description="Where it runs: in_process, or tmux (its own window the user can watch). Default: "
                          "the profile's or the user's setting.")


class SpawnSubagentTool(Tool):
    name = "spawn_subagent"
    description = ("Hand a self-contained task to a subagent that runs in its own session with its own tools. "
                   "Its tool calls never enter your context; you get its final report. Several calls in one "
                   "message run concurrently.")
    Args = SpawnArgs
    spawns = True
    parallel_safe = True

    def activity(self, args: dict[str, Any]) -> str:
        return f"spawning {one_line(args.get('profile', ''))}"

    def subject(self, args: BaseModel) -> str:
        return str(getattr(args, "profile", ""))

    async def run(self, args: SpawnArgs, ctx: ToolContext) -> ToolOutput:
        try:
            budget = Budget(**args.budget.model_dump()) if args.budget is not None else None
            handle = await _host(ctx).spawn(args.profile, args.prompt, blocking=args.blocking, label=args.label,
                                            model=args.model, timeout=args.timeout, context=args.context,
                                            mode=args.mode, budget=budget)
        except YeetuiError as exc:
            return ToolOutput(content=str(exc), is_error=True)
        return _report(handle)


class ReviewArgs(BaseModel):
    model_config = _STRICT
    target: str | None = Field(None, description="A ref or range to review (e.g. main...feature, HEAD~1); "
                                                 "omit for the uncommitted changes.")
    focus: str | None = Field(None, description="What the reviewer should pay most attention to.")
    blocking: bool = True


class RequestReviewTool(Tool):
    name = "request_review"
    description = "Ask the read-only reviewer subagent for a verdict (approve | request_changes) on a diff."
    Args = ReviewArgs
    spawns = True
    parallel_safe = True

    def activity(self, args: dict[str, Any]) -> str:
        return "spawning reviewer"

    async def run(self, args: ReviewArgs, ctx: ToolContext) -> ToolOutput:
        try:
            handle = await _host(ctx).review(target=args.target, focus=args.focus, blocking=args.blocking)
        except YeetuiError as exc:
            return ToolOutput(content=str(exc), is_error=True)
        return _report(handle, with_artifacts=True)


class NoArgs(BaseModel):
    model_config = _STRICT


class ListAgentsTool(Tool):
    name = "list_agents"
    description = "List your subagents with their run ids and statuses."
    Args = NoArgs
    spawns = True
    parallel_safe = True

    async def run(self, args: NoArgs, ctx: ToolContext) -> ToolOutput:
        return _json(await _host(ctx).children())


class ResultArgs(BaseModel):
    model_config = _STRICT
    run_id: str
    wait: bool = Field(False, description="Wait for the subagent to finish.")
    timeout: float | None = Field(None, gt=0, le=1800, description="With wait: give up after this many seconds.")


class GetAgentResultTool(Tool):
    name = "get_agent_result"
    description = "The status of one of your subagents and, once it has finished, its report."
    Args = ResultArgs
    spawns = True
    parallel_safe = True

    async def run(self, args: ResultArgs, ctx: ToolContext) -> ToolOutput:
        try:
            return _json(await _host(ctx).result(args.run_id, wait=args.wait, timeout=args.timeout))
        except YeetuiError as exc:
            return ToolOutput(content=str(exc), is_error=True)


class CancelArgs(BaseModel):
    model_config = _STRICT
    run_id: str
    mode: Literal["graceful", "abort"] = Field("graceful", description="graceful: ask it to wrap up and "
                                               "complete; abort: stop it at once.")


class CancelAgentTool(Tool):
    name = "cancel_agent"
    description = "Stop one of your subagents (gracefully by default)."
    Args = CancelArgs
    spawns = True

    async def run(self, args: CancelArgs, ctx: ToolContext) -> ToolOutput:
        try:
            what = await _host(ctx).cancel(args.run_id, graceful=args.mode == "graceful")
        except YeetuiError as exc:
            return ToolOutput(content=str(exc), is_error=True)
        return ToolOutput(content=f"Subagent {args.run_id}: {what}.")


class SendArgs(BaseModel):
    model_config = _STRICT
    run_id: str
    message: str = Field(min_length=1, description="What to tell the subagent.")


class SendMessageTool(Tool):
    name = "send_message"
    description = ("Message one of your subagents. A running one reads it at the start of its next turn; a "
                   "finished one goes on with it in its own session, with everything it did before, and its new "
                   "answer is announced to you (ask a follow-up question instead of spawning anew).")
    Args = SendArgs
    spawns = True

    async def run(self, args: SendArgs, ctx: ToolContext) -> ToolOutput:
        try:
            said = await _host(ctx).send(args.run_id, args.message)
        except YeetuiError as exc:
            return ToolOutput(content=str(exc), is_error=True)
        return ToolOutput(content=said)


class ReleaseArgs(BaseModel):
    model_config = _STRICT
    run_id: str = Field(description="The finished subagent's run id or label (oracle#2).")


class ReleaseAgentTool(Tool):
    name = "release_agent"
    description = ("Let a finished subagent go for good: it will not be asked again (until then, send_message "
                   "continues it with its whole context).")
    Args = ReleaseArgs
    spawns = True

    async def run(self, args: ReleaseArgs, ctx: ToolContext) -> ToolOutput:
        try:
            return ToolOutput(content=await _host(ctx).release(args.run_id))
        except YeetuiError as exc:
            return ToolOutput(content=str(exc), is_error=True)


def agent_tools() -> list[Tool]:
    return [SpawnSubagentTool(), RequestReviewTool(), ListAgentsTool(), GetAgentResultTool(), CancelAgentTool(),
            SendMessageTool(), ReleaseAgentTool()]
