"""What Claude Code keeps of its own subagents on disk, read back where its ACP adapter does not say it.

Claude Code's ACP adapter announces a subagent as an ACP subagent session and streams its work, but the
`idle` state it ends with carries no usage (the adapter drops the Agent tool's usage when it turns the tool
call into session messages). Claude Code itself records each subagent's conversation, one JSON object per
line, in `<config>/projects/<project>/<session>/subagents/agent-<agent id>.jsonl` — `<config>` being
`$CLAUDE_CONFIG_DIR` or `~/.claude` of the environment the agent ran in — and each assistant message there
carries the usage the provider reported for it. That is the subagent's own usage, so yeetui reads it back.

The file is another program's record, so it is hostile input: the ids that name it must be plain ids (no
path can be smuggled in), only so many bytes are read, a line that is not what is expected is skipped, and the
counts are bounded (`yeetui.external.spend`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from yeetui.external import spend
from yeetui.messages import Usage

SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
READ_CAP = 32 * 1024 * 1024
"""Bytes of one subagent's record read at most (its usage is spread through it)."""


def claude_config_dir(env: Mapping[str, str]) -> Path | None:
    """Where Claude Code, run with `env`, keeps its records."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"])
    return Path(env["HOME"]) / ".claude" if env.get("HOME") else None


def subagent_usage(env: Mapping[str, str], session_id: str, agent_id: str) -> Usage | None:
    """The usage Claude Code recorded for its subagent `agent_id` of session `session_id`, or None when it
    recorded none (another agent, another version, or nothing to read)."""
    config = claude_config_dir(env)
    if config is None or not SAFE_ID.fullmatch(session_id) or not SAFE_ID.fullmatch(agent_id):
        return None
    records = sorted((config / "projects").glob(f"*/{session_id}/subagents/agent-{agent_id}.jsonl"))
    for record in records:
        if record.is_file() and (usage := _usage_in(record)) is not None:
            return usage
    return None


def _usage_in(record: Path) -> Usage | None:
    """The sum over the record's assistant messages. Claude Code writes a message once per content block,
    each line with the message's id and its usage: each message counts once (its last line)."""
    by_message: dict[str, Usage] = {}
    unnamed = Usage()
    try:
        with record.open("rb") as lines:
            text = lines.read(READ_CAP)
    except OSError:
        return None
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "assistant" else None
        usage = _anthropic_usage(message.get("usage")) if isinstance(message, dict) else None
        if usage is None:
            continue
        message_id = message.get("id") if isinstance(message, dict) else None
        if isinstance(message_id, str):
            by_message[message_id] = usage
        else:
            unnamed = unnamed + usage
    if not by_message and unnamed.total_tokens == 0:
        return None
    return spend.bounded(sum(by_message.values(), unnamed))


def _anthropic_usage(raw: object) -> Usage | None:
    """A usage in the Anthropic API's shape (`input_tokens`, `cache_read_input_tokens`, …)."""
    if not isinstance(raw, dict):
        return None

    def number(key: str) -> int:
        return spend.tokens(raw.get(key)) or 0

    usage = Usage(input_tokens=number("input_tokens"), output_tokens=number("output_tokens"),
                  cache_read_tokens=number("cache_read_input_tokens"),
                  cache_write_tokens=number("cache_creation_input_tokens"))
    return usage if usage.total_tokens else None


def tool_response_usage(update: Mapping[str, object]) -> Usage | None:
    """The usage older Claude Code adapters put on the Agent tool call's update
    (`_meta.claudeCode.toolResponse.usage`), when the subagent is shown through that call."""
    meta = update.get("_meta")
    claude = meta.get("claudeCode") if isinstance(meta, dict) else None
    response = claude.get("toolResponse") if isinstance(claude, dict) else None
    return _anthropic_usage(response.get("usage")) if isinstance(response, dict) else None
