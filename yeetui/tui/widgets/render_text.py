"""Pure text helpers for the conversation views: tool-call titles, previews, announcement parsing, and the
cheap height guesses that decide how many messages a conversation mounts.

Kept free of widgets so they are easy to read and to test, and so the view modules stay small.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from textual.content import Content

from yeetui.messages import Message

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


_FOLLOW_UP = re.compile(r"(?P<label>\S+) keeps its context: ask it more with send_message to .*")
_MERGE_HINT = re.compile(r"; the user's checkout is untouched\. Merge it into the user's branch only when the user "
                         r"says so: (?P<merge>/merge \S+).*?; throw it away: (?P<discard>/discard \S+)\.$")


def yeetui_notes(text: str) -> list[str]:
    """What yeetui itself added after the child's framed output (`[yeetui] builder#1 left 1 commit(s) on
    branch …`): lines of its own, never the child's, which is all inside the frame — said to the user, not in
    the words meant for the parent model (`send_message …`, "only when the user says so")."""
    tail = text.rsplit("</subagent-output>", 1)[1] if "</subagent-output>" in text else ""
    return [_for_the_user(line.removeprefix("[yeetui] ")) for line in tail.splitlines()
            if line.startswith("[yeetui] ")]


def _for_the_user(note: str) -> str:
    """`oracle#1 keeps its context: /send oracle#1 … asks it more.`; `… your checkout is untouched: /merge
    builder#1 (alt+m) takes it, /discard builder#1 throws it away.`"""
    if match := _FOLLOW_UP.fullmatch(note):
        return f"{match['label']} keeps its context: /send {match['label']} … asks it more."
    if match := _MERGE_HINT.search(note):
        return (note[:match.start()] + f"; your checkout is untouched: {match['merge']} (alt+m) takes it, "
                f"{match['discard']} throws it away.")
    return note


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


def wrapped_rows(text: str, width: int) -> int:
    """About how many rows `text` takes wrapped at `width` (every line at least one)."""
    width = max(width, 8)
    return sum(len(line) // width + 1 for line in text.splitlines())


def estimate_rows(message: Message, width: int) -> int:
    """A cheap guess (no rendering) at the rows a message's views take at `width`, margins included.

    Tool results add nothing (they fill their call's block, collapsed to one row); announcements and
    steering are previews of a few lines."""
    text = message.text
    if message.role == "tool":
        return 0
    if message.role == "user":
        if message.meta.get("announcement"):
            return 4 + min(wrapped_rows(text, width), ANNOUNCEMENT_LINES)
        if message.meta.get("steer") or message.meta.get("nudge"):
            return 1 + min(wrapped_rows(text, width), 3)
        return 2 + wrapped_rows(text, width)
    calls = len(message.tool_calls)
    shown = wrapped_rows(text, width) if text.strip() else 0
    shown += any(part.kind == "thinking" for part in message.parts) + bool(message.meta.get("interrupted"))
    return max(1, (1 + shown if shown else 0) + (1 + calls if calls else 0))


@dataclass(frozen=True, slots=True)
class Item:
    """One thing a conversation shows, kept so that its views can be rebuilt after being unmounted: a
    message (`id` None for one never stored, like an abandoned stream) or a notice (`level`, `text`)."""

    id: int | None
    message: Message | None = None
    partial: bool = False
    notice: tuple[str, str] | None = None

    @property
    def is_result(self) -> bool:
        """A tool result: shown inside its call's block, so never the first of a run of mounted items."""
        return self.message is not None and self.message.role == "tool"

    def rows(self, width: int) -> int:
        return estimate_rows(self.message, width) if self.message is not None else 2


def chunk_start(items: Sequence[Item], width: int, rows: int) -> int:
    """Where a run of the newest `items` that fills about `rows` rows at `width` starts (never at a result
    whose call is in an earlier item: call and result show as one block)."""
    start, total = len(items), 0
    while start > 0 and (total < rows or start == len(items)):  # one item at least
        start -= 1
        total += items[start].rows(width)
    while start > 0 and items[start].is_result:
        start -= 1
    return start


def chunk_end(items: Sequence[Item], width: int, rows: int) -> int:
    """Where a run of the oldest `items` that fills about `rows` rows at `width` ends (results of its last
    calls included)."""
    end, total = 0, 0
    while end < len(items) and (total < rows or end == 0):
        total += items[end].rows(width)
        end += 1
    while end < len(items) and items[end].is_result:
        end += 1
    return end


_INLINE = re.compile(r"\*\*(?P<bold>.+?)\*\*|__(?P<bold2>.+?)__|`(?P<code>[^`]+)`"
                     r"|(?<![\w*])\*(?P<em>[^*\s](?:[^*]*[^*\s])?)\*|\[(?P<link>[^\]]+)\]\([^)\s]+\)")
_BLOCK_PREFIX = re.compile(r"^(?P<indent>\s*)(?:#{1,6}\s+|>\s?|(?P<bullet>[-*+]|\d+[.)])\s+)")


def inline_markdown(text: str) -> Content:
    """Short Markdown (a preview line, an announcement's head) as styled text: **bold**, *italic*, `code`
    and [links](…) styled, heading and quote marks dropped, list items bulleted — never the raw syntax."""
    lines = []
    for line in text.split("\n"):
        match = _BLOCK_PREFIX.match(line)
        prefix = ""
        if match:
            prefix = match.group("indent") + ("• " if match.group("bullet") else "")
            line = line[match.end():]
        pieces: list[Content] = [Content(prefix)] if prefix else []
        at = 0
        for found in _INLINE.finditer(line):
            pieces.append(Content(line[at:found.start()]))
            if found.group("bold") or found.group("bold2"):
                pieces.append(Content.styled(found.group("bold") or found.group("bold2"), "bold"))
            elif found.group("code"):
                pieces.append(Content.styled(found.group("code"), "$text-accent"))
            elif found.group("em"):
                pieces.append(Content.styled(found.group("em"), "italic"))
            else:
                pieces.append(Content.styled(found.group("link"), "underline"))
            at = found.end()
        pieces.append(Content(line[at:]))
        lines.append(Content.assemble(*pieces))
    return Content("\n").join(lines)
