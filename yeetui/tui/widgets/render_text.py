"""Pure text helpers for the conversation views: tool-call titles, previews, announcement parsing.

Kept free of widgets so they are easy to read and to test, and so the view modules stay small.
"""

from __future__ import annotations

import json
import re
from typing import Any

SUMMARY_KEYS = ("command", "path", "pattern", "profile", "target", "run_id", "question", "query", "url")
"""Argument names that best describe a tool call in one line, most telling first."""

RESULT_LINES = 12
RESULT_CHARS = 2000
ARG_VALUE_CHARS = 300
ANNOUNCEMENT_LINES = 6

_OUTPUT_RE = re.compile(r"<subagent-output[^>]*>\n?(?P<body>.*?)\n?</subagent-output>", re.DOTALL)
_HEAD_RE = re.compile(r"^\[Subagent: [^\]]*\]\s*")


def one_line(text: str, width: int = 60) -> str:
    """`text` on a single line, cut to `width` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def tool_summary(name: str, arguments: dict[str, Any], width: int = 60) -> str:
    """The one-line gist of a call: `pytest -q` for bash, the path for read_file, …"""
    for key in SUMMARY_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            if key == "profile" and isinstance(arguments.get("label"), str):
                value = f"{value} · {arguments['label']}"
            return one_line(value, width)
    for value in arguments.values():
        if isinstance(value, str) and value.strip():
            return one_line(value, width)
    return ""


def _value_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > ARG_VALUE_CHARS:
        lines = text.count("\n") + 1
        return text[:ARG_VALUE_CHARS] + f"… ({len(text)} characters, {lines} lines)"
    return text


def tool_arguments_text(name: str, arguments: dict[str, Any]) -> str:
    """The arguments as shown inside an expanded tool block (`$ cmd` for bash, `key: value` otherwise)."""
    if name == "bash" and isinstance(arguments.get("command"), str):
        rest = {k: v for k, v in arguments.items() if k != "command"}
        head = "$ " + _value_text(arguments["command"])
        return "\n".join([head, *(f"{k}: {_value_text(v)}" for k, v in rest.items())])
    if not arguments:
        return "(no arguments)"
    return "\n".join(f"{key}: {_value_text(value)}" for key, value in arguments.items())


def preview(text: str, max_lines: int = RESULT_LINES, max_chars: int = RESULT_CHARS) -> str:
    """The head of a long tool result plus a line saying how much was left out."""
    text = text.rstrip("\n")
    lines = text.splitlines()
    shown = lines[:max_lines]
    body = "\n".join(shown)
    cut_chars = len(body) > max_chars
    if cut_chars:
        body = body[:max_chars]
    hidden = len(lines) - len(shown)
    if hidden > 0:
        return f"{body}\n… {hidden} more line{'s' if hidden != 1 else ''}"
    if cut_chars:
        return f"{body}\n… {len(text) - max_chars} more characters"
    return body or "(no output)"


def split_announcement(text: str) -> tuple[str, str]:
    """Split `announcement_text()` output into its status line (label prefix dropped) and the child's output."""
    head_line = text.split("\n", 1)[0]
    head = _HEAD_RE.sub("", head_line).strip()
    match = _OUTPUT_RE.search(text)
    if match:
        body = match.group("body").strip()
    else:
        body = text.split("\n", 1)[1].strip() if "\n" in text else ""
    return head, body
