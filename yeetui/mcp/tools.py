"""What an MCP server offers and answers, made safe: its tools taken or skipped (names that fit a model's
tool-name rules, object schemas of a bounded size, descriptions cut and made terminal-safe) and a call's result
turned into capped text.

A server is hostile input: `take_tools` says why each tool it offered and yeetui did not take was skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from yeetui.text import cap, one_line, terminal_safe

MAX_TOOLS = 500
"""Tools of one server read (`tools/list`, page by page); more are left out."""
MAX_SCHEMA_BYTES = 64 * 1024
MAX_DESCRIPTION = 2_000
RESULT_CAP = 100_000

_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_.\-/]{1,64}$")
MAX_QUALIFIED = 128
"""Anthropic's and OpenAI's limit for a tool name."""


def qualified_name(server: str, tool: str) -> str:
    """`mcp__{server}__{tool}`, as Claude Code names them, with characters a model's tool names may not hold
    replaced by `_`."""
    return _TOOL_NAME.sub("_", f"mcp__{server}__{tool}")


@dataclass(frozen=True)
class McpTool:
    server: str
    name: str
    """As the server names it (what a call sends)."""
    qualified: str
    """As the model sees it: `mcp__git__git_status`."""
    description: str
    input_schema: dict[str, Any]
    read_only_hint: bool = False


@dataclass(frozen=True)
class CallResult:
    text: str
    is_error: bool


def take_tools(server: str, offered: list[Any]) -> tuple[list[McpTool], list[str]]:
    """The tools `server` offered that are taken, and a line for each one skipped saying why."""
    taken: dict[str, McpTool] = {}
    skipped: list[str] = []
    for tool in offered:
        name = getattr(tool, "name", None)
        if not isinstance(name, str) or not name.strip():
            skipped.append("a tool without a name")
            continue
        shown = one_line(terminal_safe(name))[:80]
        if not _PLAIN_NAME.match(name):  # the index lists names in the system prompt: no sentences, no newlines
            skipped.append(f"{shown}: not a plain tool name (letters, digits, '_', '-', '.', '/', at most 64)")
            continue
        qualified = qualified_name(server, name)
        if len(qualified) > MAX_QUALIFIED:
            skipped.append(f"{shown}: its name is too long for a model's tool name")
            continue
        if qualified in taken:
            skipped.append(f"{shown}: another tool's name maps to {qualified}")
            continue
        schema = getattr(tool, "input_schema", None)
        if not isinstance(schema, dict) or schema.get("type", "object") != "object":
            skipped.append(f"{shown}: its input schema is not a JSON object schema")
            continue
        try:
            size = len(json.dumps(schema))
        except (TypeError, ValueError):
            skipped.append(f"{shown}: its input schema is not JSON")
            continue
        if size > MAX_SCHEMA_BYTES:
            skipped.append(f"{shown}: its input schema is {size:,} bytes (more than {MAX_SCHEMA_BYTES:,})")
            continue
        annotations = getattr(tool, "annotations", None)
        description = terminal_safe(str(getattr(tool, "description", "") or ""))
        taken[qualified] = McpTool(
            server=server, name=name, qualified=qualified, description=cap(description, MAX_DESCRIPTION),
            input_schema={"type": "object", **schema},
            read_only_hint=bool(getattr(annotations, "read_only_hint", False)))
    return list(taken.values()), skipped


def result_text(result: Any) -> str:
    """A tool result as text for the model: text parts as they are, other parts named, the structured
    content as JSON when there is no text; capped."""
    parts: list[str] = []
    for item in getattr(result, "content", None) or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(str(getattr(item, "text", "")))
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {getattr(item, 'mime_type', '?')}, {len(str(getattr(item, 'data', '')))} "
                         "base64 characters, not shown]")
        elif kind == "resource":
            resource = getattr(item, "resource", None)
            text = getattr(resource, "text", None)
            parts.append(str(text) if text is not None else f"[resource {getattr(resource, 'uri', '?')}]")
        elif kind == "resource_link":
            parts.append(f"[resource link {getattr(item, 'uri', '?')}]")
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        try:
            parts.append(json.dumps(structured, ensure_ascii=False))
        except (TypeError, ValueError):
            parts.append(str(structured))
    return cap("\n".join(parts) if parts else "(no content)", RESULT_CAP)
