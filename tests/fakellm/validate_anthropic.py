"""Anthropic Messages API request rules (`POST /v1/messages`), with error texts shaped like the real ones.

Paths follow the API's validation errors (`messages.3.content.1: …`, `tools.0.custom.name: …`). Consecutive
messages of one role are merged into one turn before tool pairing is checked, as the API does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

BLOCK_TYPES = ("text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking")

_BLOCK_FIELDS = {
    "text": ("text",),
    "image": ("source",),
    "document": ("source",),
    "tool_use": ("id", "name", "input"),
    "tool_result": ("tool_use_id",),
    "thinking": ("thinking", "signature"),
    "redacted_thinking": ("data",),
}
_RESULT_CONTENT_TYPES = ("text", "image", "document", "search_result")
_THINKING_TYPES = ("enabled", "disabled", "adaptive")
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")
_THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"


class _Invalid(Exception):
    pass


def _fail(message: str) -> NoReturn:
    raise _Invalid(message)


def first_problem(body: dict[str, Any], headers: Mapping[str, str]) -> str | None:
    """The error message for the first rule `body` breaks, or None. `headers` have lower-case names."""
    try:
        _anthropic(body, headers)
    except _Invalid as invalid:
        return str(invalid)
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _anthropic(body: dict[str, Any], headers: Mapping[str, str]) -> None:
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            _fail(f"{name}: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        _fail("model: Input should be a valid string with at least 1 character")
    max_tokens = body["max_tokens"]
    if not _is_int(max_tokens):
        _fail("max_tokens: Input should be a valid integer")
    if max_tokens < 1:
        _fail("max_tokens: Input should be greater than or equal to 1")
    _system(body.get("system"))
    _thinking(body.get("thinking"), max_tokens, headers.get("anthropic-beta", ""))
    _anthropic_tools(body.get("tools"))
    _conversation(body["messages"])


def _system(system: Any) -> None:
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        _fail("system: Input should be a valid string or a valid list")
    for k, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            _fail(f"system.{k}.type: Input should be 'text'")
        _text("system", f"system.{k}", block)


def _thinking(thinking: Any, max_tokens: int, beta: str) -> None:
    if thinking is None:
        return
    if not isinstance(thinking, dict):
        _fail("thinking: Input should be a valid dictionary")
    kind = thinking.get("type")
    if kind is None:
        _fail("thinking: Unable to extract tag using discriminator 'type'")
    if kind not in _THINKING_TYPES:
        expected = ", ".join(f"'{t}'" for t in _THINKING_TYPES)
        _fail(f"thinking: Input tag '{kind}' found using 'type' does not match any of the expected tags: {expected}")
    if kind != "enabled":
        return
    budget = thinking.get("budget_tokens")
    if budget is None:
        _fail("thinking.enabled.budget_tokens: Field required")
    if not _is_int(budget):
        _fail("thinking.enabled.budget_tokens: Input should be a valid integer")
    if budget < 1024:
        _fail("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
    if budget >= max_tokens and "interleaved-thinking" not in beta:
        _fail(f"`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation "
              f"at {_THINKING_DOCS}")


def _anthropic_tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        _fail("tools: Input should be a valid list")
    names: set[str] = set()
    for n, tool in enumerate(tools):
        if not isinstance(tool, dict):
            _fail(f"tools.{n}: Input should be a valid dictionary")
        if tool.get("type") not in (None, "custom"):
            continue  # a server tool (bash_20250124, web_search_20250305, …) with its own schema
        where = f"tools.{n}.custom"
        name = tool.get("name")
        if name is None:
            _fail(f"{where}.name: Field required")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            _fail(f"{where}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
        schema = tool.get("input_schema")
        if schema is None:
            _fail(f"{where}.input_schema: Field required")
        if not isinstance(schema, dict):
            _fail(f"{where}.input_schema: Input should be a valid dictionary")
        if schema.get("type") != "object":
            _fail(f"{where}.input_schema.type: Input should be 'object'")
        if name in names:
            _fail("tools: Tool names must be unique.")
        names.add(name)


@dataclass
class _Turn:
    """Consecutive messages of one role, which the API merges into a single turn."""

    role: str
    blocks: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)
    """(message index, block index, block) in order."""
    last: int = 0

    def tool_use_ids(self) -> list[tuple[int, int, str]]:
        return [(i, j, b["id"]) for i, j, b in self.blocks if b["type"] == "tool_use"]


def _conversation(messages: Any) -> None:
    if not isinstance(messages, list):
        _fail("messages: Input should be a valid list")
    if not messages:
        _fail("messages: at least one message is required")
    turns: list[_Turn] = []
    for i, message in enumerate(messages):
        role, blocks = _message(i, message, final=i == len(messages) - 1)
        if i == 0 and role != "user":
            _fail('messages: first message must use the "user" role')
        if not turns or turns[-1].role != role:
            turns.append(_Turn(role))
        turns[-1].blocks.extend((i, j, block) for j, block in blocks)
        turns[-1].last = i
    _unique_tool_use_ids(turns)
    for t, turn in enumerate(turns):
        if turn.role == "assistant":
            _answered(turn, turns[t + 1] if t + 1 < len(turns) else None)
        else:
            _results_match(turn, turns[t - 1] if t > 0 else None)
    _final_whitespace(messages[-1])


def _message(i: int, message: Any, *, final: bool) -> tuple[str, list[tuple[int, dict[str, Any]]]]:
    if not isinstance(message, dict):
        _fail(f"messages.{i}: Input should be a valid dictionary")
    for name in ("role", "content"):
        if name not in message:
            _fail(f"messages.{i}.{name}: Field required")
    role = message["role"]
    if role not in ("user", "assistant"):
        _fail(f"messages.{i}.role: Input should be 'user' or 'assistant'")
    content = message["content"]
    if isinstance(content, str):
        blocks = [(0, {"type": "text", "text": content})] if content else []
    elif isinstance(content, list):
        blocks = list(enumerate(content))
    else:
        _fail(f"messages.{i}.content: Input should be a valid string or a valid list")
    if not blocks and not (final and role == "assistant"):
        _fail(f"messages.{i}: all messages must have non-empty content except for the optional final "
              "assistant message")
    for j, block in blocks:
        _block(i, j, role, block)
    return role, blocks


def _block(i: int, j: int, role: str, block: Any) -> None:
    where = f"messages.{i}.content.{j}"
    if not isinstance(block, dict):
        _fail(f"{where}: Input should be a valid dictionary")
    kind = block.get("type")
    if kind is None:
        _fail(f"{where}: Unable to extract tag using discriminator 'type'")
    if kind not in BLOCK_TYPES:
        expected = ", ".join(f"'{t}'" for t in BLOCK_TYPES)
        _fail(f"{where}: Input tag '{kind}' found using 'type' does not match any of the expected tags: "
              f"{expected}")
    for name in _BLOCK_FIELDS[kind]:
        if name not in block:
            _fail(f"{where}.{kind}.{name}: Field required")
    if kind == "text":
        _text("messages", f"{where}.text", block)
    elif kind == "tool_use":
        if role != "assistant":
            _fail(f"{where}: `tool_use` blocks can only be in `assistant` messages")
        if not isinstance(block["id"], str) or not _TOOL_USE_ID.fullmatch(block["id"]):
            _fail(f"{where}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
        if not isinstance(block["input"], dict):
            _fail(f"{where}.tool_use.input: Input should be a valid dictionary")
    elif kind == "tool_result":
        if role != "user":
            _fail(f"{where}: `tool_result` blocks can only be in `user` messages")
        if not isinstance(block["tool_use_id"], str):
            _fail(f"{where}.tool_result.tool_use_id: Input should be a valid string")
        _result_content(f"{where}.tool_result.content", block.get("content"))


def _text(scope: str, where: str, block: dict[str, Any]) -> None:
    text = block.get("text")
    if not isinstance(text, str):
        _fail(f"{where}.text: Input should be a valid string")
    if not text:
        _fail(f"{scope}: text content blocks must be non-empty")
    if not text.strip():
        _fail(f"{scope}: text content blocks must contain non-whitespace text")


def _result_content(where: str, content: Any) -> None:
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        _fail(f"{where}: Input should be a valid string or a valid list")
    for k, item in enumerate(content):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind not in _RESULT_CONTENT_TYPES:
            expected = ", ".join(f"'{t}'" for t in _RESULT_CONTENT_TYPES)
            _fail(f"{where}.{k}: Input tag '{kind}' found using 'type' does not match any of the expected "
                  f"tags: {expected}")
        if kind == "text":
            _text("messages", f"{where}.{k}.text", item)


def _unique_tool_use_ids(turns: list[_Turn]) -> None:
    seen: set[str] = set()
    for turn in turns:
        for i, j, tool_id in turn.tool_use_ids():
            if tool_id in seen:
                _fail(f"messages.{i}.content.{j}: `tool_use` ids must be unique")
            seen.add(tool_id)


def _answered(turn: _Turn, following: _Turn | None) -> None:
    """Each tool_use needs a tool_result among the blocks that open the next (user) turn."""
    answered: set[str] = set()
    for _, _, block in following.blocks if following is not None else []:
        if block["type"] != "tool_result":
            break  # results must come first: one after other content is not "immediately after"
        answered.add(block["tool_use_id"])
    missing = [tool_id for _, _, tool_id in turn.tool_use_ids() if tool_id not in answered]
    if missing:
        _fail(f"messages.{turn.last}: `tool_use` ids were found without `tool_result` blocks immediately "
              f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` "
              "block in the next message.")


def _results_match(turn: _Turn, previous: _Turn | None) -> None:
    """Each tool_result must answer a tool_use of the turn right before it."""
    known = {tool_id for _, _, tool_id in previous.tool_use_ids()} if previous is not None else set()
    for i, j, block in turn.blocks:
        if block["type"] == "tool_result" and block["tool_use_id"] not in known:
            _fail(f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                  f"{block['tool_use_id']}. Each `tool_result` block must have a corresponding `tool_use` "
                  "block in the previous message.")


def _final_whitespace(last: dict[str, Any]) -> None:
    """A conversation may end with an assistant prefill, but not one ending in whitespace."""
    if last["role"] != "assistant":
        return
    content = last["content"]
    if isinstance(content, list):
        tail = content[-1] if content else None
        content = tail.get("text") if isinstance(tail, dict) and tail.get("type") == "text" else None
    if isinstance(content, str) and content and content != content.rstrip():
        _fail("messages: final assistant content cannot end with trailing whitespace")

