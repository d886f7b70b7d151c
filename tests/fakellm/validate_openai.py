"""OpenAI chat-completions request rules (`POST /v1/chat/completions`), with error texts and `param`
paths shaped like the real ones (`messages[0].role` for schema errors, `messages.[3].role` for tool pairing).
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

ROLES = ("system", "developer", "user", "assistant", "tool")

_FUNCTION_NAME = re.compile(r"[a-zA-Z0-9_-]+")


class _Invalid(Exception):
    def __init__(self, message: str, param: str | None) -> None:
        super().__init__(message)
        self.param = param


def _fail(message: str, param: str | None = None) -> NoReturn:
    raise _Invalid(message, param)


def first_problem(body: dict[str, Any]) -> tuple[str, str | None] | None:
    """(message, param) for the first rule `body` breaks, or None."""
    try:
        _openai(body)
    except _Invalid as invalid:
        return str(invalid), invalid.param
    return None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for kind, name in ((str, "string"), (int, "integer"), (float, "number"), (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _expect(value: Any, kind: type, noun: str, param: str) -> None:
    if not isinstance(value, kind) or isinstance(value, bool):
        _fail(f"Invalid type for '{param}': expected {noun}, but got {_json_kind(value)} instead.", param)


def _require(container: dict[str, Any], key: str, param: str) -> Any:
    if container.get(key) is None:
        _fail(f"Missing required parameter: '{param}'.", param)
    return container[key]


def _openai(body: dict[str, Any]) -> None:
    if body.get("model") is None:
        _fail("you must provide a model parameter")
    _expect(body["model"], str, "a string", "model")
    messages = _require(body, "messages", "messages")
    _expect(messages, list, "an array", "messages")
    if not messages:
        _fail("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty "
              "array instead.", "messages")
    _openai_tools(body.get("tools"))
    for i, message in enumerate(messages):
        _openai_message(i, message)
    _tool_call_pairing(messages)


def _openai_message(i: int, message: Any) -> None:
    where = f"messages[{i}]"
    _expect(message, dict, "an object", where)
    role = _require(message, "role", f"{where}.role")
    if role not in ROLES:
        supported = ", ".join(f"'{r}'" for r in ROLES[:-1]) + f", and '{ROLES[-1]}'"
        _fail(f"Invalid value: '{role}'. Supported values are: {supported}.", f"{where}.role")
    calls = message.get("tool_calls")
    if role == "assistant":
        if message.get("content") is None and not calls:
            _fail("Invalid value for 'content': expected a string, got null.", f"messages.[{i}].content")
    else:
        _require(message, "content", f"{where}.content")
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        _fail(f"Invalid type for '{where}.content': expected one of a string or array of objects, but got "
              f"{_json_kind(content)} instead.", f"{where}.content")
    if role == "tool":
        _expect(_require(message, "tool_call_id", f"{where}.tool_call_id"), str, "a string",
                f"{where}.tool_call_id")
    if role == "assistant" and calls is not None:
        _expect(calls, list, "an array", f"{where}.tool_calls")
        for k, call in enumerate(calls):
            _openai_call(f"{where}.tool_calls[{k}]", call)


def _openai_call(where: str, call: Any) -> None:
    _expect(call, dict, "an object", where)
    _expect(_require(call, "id", f"{where}.id"), str, "a string", f"{where}.id")
    if _require(call, "type", f"{where}.type") != "function":
        _fail(f"Invalid value: '{call['type']}'. Supported values are: 'function'.", f"{where}.type")
    function = _require(call, "function", f"{where}.function")
    _expect(function, dict, "an object", f"{where}.function")
    _expect(_require(function, "name", f"{where}.function.name"), str, "a string", f"{where}.function.name")
    arguments = _require(function, "arguments", f"{where}.function.arguments")
    _expect(arguments, str, "a string", f"{where}.function.arguments")


def _tool_call_pairing(messages: list[dict[str, Any]]) -> None:
    """Tool messages answer the tool_calls of the assistant message before them, all of them, before
    anything else comes."""
    open_ids: set[str] = set()
    pending: list[str] = []
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            if not open_ids:
                _fail("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                      "with 'tool_calls'.", f"messages.[{i}].role")
            call_id = message["tool_call_id"]
            if call_id not in open_ids:
                _fail(f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in 'tool_calls' of previous "
                      "message.", f"messages.[{i}].tool_call_id")
            pending = [p for p in pending if p != call_id]
            continue
        _unanswered(pending, i)
        calls = message.get("tool_calls") if message["role"] == "assistant" else None
        pending = [call["id"] for call in calls or []]
        open_ids = set(pending)
    _unanswered(pending, len(messages) - 1)


def _unanswered(pending: list[str], i: int) -> None:
    if pending:
        _fail("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
              f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}",
              f"messages.[{i}].role")


def _openai_tools(tools: Any) -> None:
    if tools is None:
        return
    _expect(tools, list, "an array", "tools")
    for n, tool in enumerate(tools):
        where = f"tools[{n}]"
        _expect(tool, dict, "an object", where)
        if _require(tool, "type", f"{where}.type") != "function":
            _fail(f"Invalid value: '{tool['type']}'. Supported values are: 'function'.", f"{where}.type")
        function = _require(tool, "function", f"{where}.function")
        _expect(function, dict, "an object", f"{where}.function")
        name = _require(function, "name", f"{where}.function.name")
        _expect(name, str, "a string", f"{where}.function.name")
        if len(name) > 64:
            _fail(f"Invalid '{where}.function.name': string too long. Expected a string with maximum length 64, "
                  f"but got a string with length {len(name)} instead.", f"{where}.function.name")
        if not _FUNCTION_NAME.fullmatch(name):
            _fail(f"Invalid '{where}.function.name': string does not match pattern. Expected a string that "
                  "matches the pattern '^[a-zA-Z0-9_-]+$'.", f"{where}.function.name")
        parameters = function.get("parameters")
        if parameters is None:
            continue
        _expect(parameters, dict, "an object", f"{where}.function.parameters")
        if parameters and parameters.get("type") != "object":
            _fail(f"Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"', "
                  f"got 'type: \"{parameters.get('type')}\"'.", f"{where}.function.parameters")
