"""What an external agent sends over ACP, read as hostile input: the fields and text of its session updates, a
tool call's output, a usage, the subagent an update names (in the stable or the draft shape), the mode to set
among those it offers, the option of a permission request that gives an answer.

Every field is checked before use, made terminal-safe and capped (`FIELD_CAP`, `TEXT_CAP`); what is not of the
expected shape reads as nothing said. `yeetui.runs.external_run` is the run these readings feed.
"""

from __future__ import annotations

from typing import Any

from yeetui.events import PermissionAnswer
from yeetui.external import spend
from yeetui.messages import Usage
from yeetui.text import cap, terminal_safe

TEXT_CAP = 200_000
"""Characters of one node's text kept (what an agent says is capped like a tool's output)."""
FIELD_CAP = 2000
"""Characters of one field kept (an id, a title, a path, a command)."""
ASKING_MODES = ("default", "manual", "ask", "read-only")
"""Modes, by the ids agents use, in which the agent asks before it changes anything (Codex's adapter has no
`default`: its `read-only` asks before edits, commands outside its sandbox and the network)."""
UNASKING_MODES = frozenset({"agent", "agent-full-access", "auto", "full-access", "workspace-write", "yolo",
                            "autoEdit", "auto_edit", "acceptEdits", "bypassPermissions", "dontAsk"})
"""Modes, by the ids agents use, in which the agent edits files or runs commands without asking: an agent that
offers no asking mode and starts in one of these is not run, unless the profile names its mode."""
_SUBAGENT_STATES = {"completed": "end_turn", "cancelled": "cancelled", "failed": "error", "disconnected": "cancelled"}
"""A draft `subagent_state_update`'s end state → the stop reason of the stable shape's idle state."""


class NoAskingMode(ValueError):
    """The agent offers no mode that asks, and starts in one that does not."""


def field(value: object) -> str:
    """A string field as shown: terminal-safe and capped; '' for anything that is not a string."""
    return cap(terminal_safe(value), FIELD_CAP) if isinstance(value, str) else ""


def text(content: object) -> str:
    """The text of an ACP text content block (terminal-safe, capped); '' for any other content."""
    if isinstance(content, dict) and content.get("type") == "text" and isinstance(content.get("text"), str):
        return cap(terminal_safe(content["text"]), TEXT_CAP)
    return ""


def tool_output(content: object) -> str:
    """A tool call's content as text: its text blocks, and the paths of its diffs."""
    parts: list[str] = []
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict) and item.get("type") == "content":
            parts.append(text(item.get("content")))
        elif isinstance(item, dict) and item.get("type") == "diff":
            parts.append(f"edited {field(item.get('path'))}")
    return cap("\n".join(p for p in parts if p), 20_000)


def usage(raw: object) -> Usage | None:
    """A usage in ACP's shape; each count bounded (`spend.tokens`), one that is not a number taken as 0."""
    if not isinstance(raw, dict):
        return None

    def number(key: str) -> int:
        return spend.tokens(raw.get(key)) or 0

    read, write = number("cachedReadTokens"), number("cachedWriteTokens")
    return Usage(input_tokens=max(0, number("inputTokens") - read - write), output_tokens=number("outputTokens"),
                 cache_read_tokens=read, cache_write_tokens=write)


def quota_usage(answer: dict[str, Any]) -> Usage | None:
    """A turn's usage from its answer's `_meta.quota.token_count`, where the agent says it only there (Gemini CLI:
    `input_tokens`, `output_tokens`); bounded like any count."""
    meta = answer.get("_meta")
    quota = meta.get("quota") if isinstance(meta, dict) else None
    count = quota.get("token_count") if isinstance(quota, dict) else None
    if not isinstance(count, dict):
        return None

    def number(*keys: str) -> int:
        return next((n for k in keys if (n := spend.tokens(count.get(k))) is not None), 0)

    read = number("cached_tokens", "cachedInputTokens", "cache_read_input_tokens")
    return Usage(input_tokens=max(0, number("input_tokens", "inputTokens") - read),
                 output_tokens=number("output_tokens", "outputTokens"), cache_read_tokens=read)


def named_child(update: dict[str, Any]) -> str | None:
    """The subagent session a tool's output names (OpenCode's task tool: `rawOutput.metadata.sessionId`)."""
    raw = update.get("rawOutput")
    metadata = raw.get("metadata") if isinstance(raw, dict) else None
    child = metadata.get("sessionId") if isinstance(metadata, dict) else None
    return field(child) or None


def legacy_parent(update: dict[str, Any]) -> str | None:
    """The tool call an older Claude Code adapter tags its subagent's updates with
    (`_meta.claudeCode.parentToolUseId`)."""
    meta = update.get("_meta")
    claude = meta.get("claudeCode") if isinstance(meta, dict) else None
    parent = claude.get("parentToolUseId") if isinstance(claude, dict) else None
    return field(parent) or None


def asking_mode(modes: object, wanted: str | None) -> str | None:
    """The mode to set: the profile's, if the agent offers it; else one that asks before changes; else none
    (the agent's own default stays — yeetui never picks a mode that skips its questions). `NoAskingMode` when
    the profile names none, the agent offers none that asks, and it starts in one known to edit or run commands
    unasked (Codex's adapter starts in `agent`)."""
    available = modes.get("availableModes") if isinstance(modes, dict) else None
    ids = [m.get("id") for m in available if isinstance(m, dict)] if isinstance(available, list) else []
    if wanted is not None:
        return wanted if wanted in ids else None
    chosen = next((m for m in ASKING_MODES if m in ids), None)
    current = modes.get("currentModeId") if isinstance(modes, dict) else None
    if chosen is None and isinstance(current, str) and current in UNASKING_MODES:
        offered = ", ".join(field(i) for i in ids if isinstance(i, str)) or field(current)
        raise NoAskingMode(f"it starts in mode {field(current)}, which edits or runs commands without asking, and "
                           f"offers no mode that asks ({offered}): name the one to run in as the profile's acp.mode")
    return chosen


def stable_subagent(update: dict[str, Any]) -> dict[str, Any] | None:
    """A subagent announcement in the stable `subagent_update` shape: as it came, or translated from the draft
    shapes (`subagent_spawned` with `subagentSessionId`, `name`, `task`; `subagent_state_update` with a state
    name), which Codex's adapter sends some clients. None for any other update."""
    kind = update.get("sessionUpdate")
    if kind == "subagent_update":
        return update
    if kind not in ("subagent_spawned", "subagent_state_update"):
        return None
    stable: dict[str, Any] = {"sessionUpdate": "subagent_update", "sessionId": update.get("subagentSessionId")}
    if kind == "subagent_spawned":
        stable.update(title=update.get("name"), description=update.get("task"),
                      capabilities=update.get("capabilities"), state={"state": "running"})
        return stable
    state = update.get("state")
    if isinstance(state, dict):
        stable["state"] = state
    elif state in ("running", "requires_action"):
        stable["state"] = {"state": state}
    elif isinstance(state, str) and state in _SUBAGENT_STATES:
        stable["state"] = {"state": "idle", "stopReason": _SUBAGENT_STATES[state],
                           **({"error": {"message": f"the subagent {state}"}} if state == "disconnected" else {})}
    return stable


def option(options: list[dict[str, Any]], answer: PermissionAnswer) -> str | None:
    """The id of the permission request's option that gives `answer` (None: there is none)."""
    wanted = {"allow_once": ("allow_once",), "allow_always": ("allow_always", "allow_once")}.get(
        answer, ("reject_once", "reject_always"))
    for kind in wanted:
        for offered in options:
            if offered.get("kind") == kind and isinstance(offered.get("optionId"), str):
                return str(offered["optionId"])
    return None  # no such option: cancelled, which refuses
