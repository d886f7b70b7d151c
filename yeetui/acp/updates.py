"""yeetui's typed events as ACP session updates: what an editor shows of a turn.

Pure functions of one event each (no connection, no state): the agent's text and thinking as message and thought
chunks, a tool call as `tool_call` (edits with diff content, so the editor can show them) and its ending as
`tool_call_update`. The call an agent ends its turn with (`complete`'s output, `ask_user`'s question) is the
turn's answer, and an editor shows it as the agent's text (`answer`). Whatever a tool or the model produced is
capped before it leaves.
"""

from __future__ import annotations

from typing import Any

from acp import schema

from yeetui.events import ThinkingDelta, ToolCallFinished, ToolCallStarted
from yeetui.messages import ToolCallPart
from yeetui.text import cap, terminal_safe

TOOL_OUTPUT_CAP = 20_000
"""Characters of a tool's output an update carries (the model saw at most what the tool's own cap let through)."""
KINDS: dict[str, schema.ToolKind] = {
    "read_file": "read", "list_dir": "search", "glob": "search", "grep": "search", "edit_file": "edit",
    "write_file": "edit", "bash": "execute", "web_fetch": "fetch", "spawn_subagent": "think", "think": "think",
}


ANSWERS = {"complete": "output", "ask_user": "question"}
"""The tools an agent ends its turn with, and the argument that is its answer to the user."""


def tool_kind(name: str) -> schema.ToolKind:
    return KINDS.get(name, "other")


def answer(name: str, arguments: dict[str, Any]) -> str | None:
    """The turn's answer a call carries (`complete(output=…)`), or None for any other call."""
    text = arguments.get(ANSWERS[name]) if name in ANSWERS else None
    return text if isinstance(text, str) and text.strip() else None


def after(said: str, text: str) -> str:
    """`text` as it follows what the agent already said in the turn (`said`): a paragraph of its own."""
    if not said or said.endswith("\n\n"):
        return text
    return ("\n" if said.endswith("\n") else "\n\n") + text


def text_chunk(text: str) -> schema.AgentMessageChunk:
    return schema.AgentMessageChunk(session_update="agent_message_chunk",
                                    content=schema.TextContentBlock(type="text", text=text))


def user_chunk(text: str) -> schema.UserMessageChunk:
    return schema.UserMessageChunk(session_update="user_message_chunk",
                                   content=schema.TextContentBlock(type="text", text=text))


def thought_chunk(event: ThinkingDelta) -> schema.AgentThoughtChunk:
    return thought(event.text)


def thought(text: str) -> schema.AgentThoughtChunk:
    return schema.AgentThoughtChunk(session_update="agent_thought_chunk",
                                    content=schema.TextContentBlock(type="text", text=text))


def tool_title(name: str, arguments: dict[str, Any], activity: str = "") -> str:
    """`bash: make test`, `edit_file app.py`: what the editor lists."""
    if activity:
        return cap(terminal_safe(activity), 200)
    subject = arguments.get("command") or arguments.get("path") or arguments.get("pattern") or ""
    return cap(terminal_safe(f"{name} {subject}".strip()), 200)


def tool_started(event: ToolCallStarted) -> schema.ToolCallStart:
    return tool_call(event.call_id, event.name, event.arguments, event.activity)


def stored_call(call: ToolCallPart) -> schema.ToolCallStart:
    """A call of a stored message (`session/load`): what was shown of it live, but for its activity."""
    return tool_call(call.id, call.name, call.arguments)


def tool_call(call_id: str, name: str, arguments: dict[str, Any], activity: str = "") -> schema.ToolCallStart:
    content: list[Any] | None = None
    path = arguments.get("path")
    if name == "edit_file" and isinstance(path, str):
        content = [schema.FileEditToolCallContent(type="diff", path=path, old_text=str(arguments.get("old", "")),
                                                  new_text=str(arguments.get("new", "")))]
    elif name == "write_file" and isinstance(path, str):
        content = [schema.FileEditToolCallContent(type="diff", path=path, old_text=None,
                                                  new_text=str(arguments.get("content", "")))]
    locations = [schema.ToolCallLocation(path=path)] if isinstance(path, str) else None
    return schema.ToolCallStart(session_update="tool_call", tool_call_id=call_id,
                                title=tool_title(name, arguments, activity), kind=tool_kind(name),
                                status="in_progress", raw_input=arguments, content=content, locations=locations)


def tool_finished(event: ToolCallFinished) -> schema.ToolCallProgress:
    return tool_result(event.call_id, event.content, event.is_error)


def tool_result(call_id: str, content: str, is_error: bool) -> schema.ToolCallProgress:
    text = cap(terminal_safe(content), TOOL_OUTPUT_CAP)
    return schema.ToolCallProgress(
        session_update="tool_call_update", tool_call_id=call_id, status="failed" if is_error else "completed",
        content=[schema.ContentToolCallContent(type="content", content=schema.TextContentBlock(type="text", text=text))]
        if text else None)


def refused_answer(call_id: str, name: str, content: str) -> schema.ToolCallStart:
    """An answer the tool refused (`complete` with output that fails its schema): its text was shown as the
    agent's, and the refusal is a failed call of its own, which the agent will answer again after."""
    text = cap(terminal_safe(content), TOOL_OUTPUT_CAP)
    return schema.ToolCallStart(
        session_update="tool_call", tool_call_id=call_id, title=name, kind=tool_kind(name), status="failed",
        content=[schema.ContentToolCallContent(type="content", content=schema.TextContentBlock(type="text", text=text))]
        if text else None)


_PLAN_STATUS: dict[str, schema.PlanEntryStatus] = {"done": "completed", "running": "in_progress",
                                                  "skipped": "completed", "failed": "completed"}


def plan(steps: tuple[tuple[str, str], ...]) -> schema.AgentPlanUpdate:
    """A multi-step run's steps as the agent's plan: done (or given up: failed, skipped) steps completed, the
    running one in progress, the rest pending (a step blocked on the user stays pending, high priority)."""
    entries = []
    for what, status in steps:
        note = f" [{status}]" if status in ("failed", "skipped", "blocked") else ""
        entries.append(schema.PlanEntry(content=cap(terminal_safe(what + note), 500),
                                        priority="high" if status == "blocked" else "medium",
                                        status=_PLAN_STATUS.get(status, "pending")))
    return schema.AgentPlanUpdate(session_update="plan", entries=entries)


def prompt_text(blocks: list[Any]) -> str:
    """An ACP prompt as yeetui's prompt text: text as written, an embedded file as a fenced block under its URI,
    a link as a mention of it. Images and audio are not taken (the agent does not advertise them)."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"[{block.name or block.uri}]({block.uri})")
        elif kind == "resource":
            resource = block.resource
            body = getattr(resource, "text", None)
            if body is not None:
                parts.append(f"Contents of {resource.uri}:\n```\n{body}\n```")
            else:
                parts.append(f"(binary resource {resource.uri}, not shown)")
    return "\n\n".join(p for p in parts if p)


def usage(spent: Any) -> schema.Usage:
    """Tokens in ACP's shape (a turn's `PromptResponse.usage`, a subagent's on its idle state): yeetui's input
    tokens exclude what was read from the cache, ACP's include it."""
    total = spent.input_tokens + spent.output_tokens + spent.cache_read_tokens + spent.cache_write_tokens
    return schema.Usage(total_tokens=total, input_tokens=spent.input_tokens + spent.cache_read_tokens
                        + spent.cache_write_tokens, output_tokens=spent.output_tokens,
                        cached_read_tokens=spent.cache_read_tokens or None,
                        cached_write_tokens=spent.cache_write_tokens or None)
