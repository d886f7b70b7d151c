"""ToolRegistry: name → Tool, and turning raw model arguments into a validated `Args` instance.

Anything the model got wrong (unknown tool, arguments that are not JSON, missing or mistyped fields)
comes back from `prepare` as an error ToolOutput that names each problem, never as an exception.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from yeetui.errors import ToolError
from yeetui.providers.base import ToolSpec
from yeetui.text import clip
from yeetui.tools.base import Tool, ToolOutput
from yeetui.tools.complete import CompleteTool
from yeetui.tools.files import EditFileTool, ListDirTool, ReadFileTool, WriteFileTool
from yeetui.tools.search import GlobTool, GrepTool
from yeetui.tools.shell import BashTool


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"Two tools are registered under the name {tool.name!r}.")
            self._tools[tool.name] = tool

    def add(self, tool: Tool) -> None:
        """Register a tool found while running (an MCP server's, once an agent loads it)."""
        if tool.name in self._tools:
            raise ValueError(f"Two tools are registered under the name {tool.name!r}.")
        self._tools[tool.name] = tool

    def names(self) -> list[str]:
        return list(self._tools)

    def tools(self) -> list[Tool]:
        """Every tool, in registration order."""
        return list(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise ToolError(f"Unknown tool {name!r}. Available tools: {', '.join(self._tools)}.") from None

    def activity(self, name: str, arguments: dict[str, Any]) -> str:
        """What a call of `name` is doing, in a few words (an unknown tool: `calling <name>`)."""
        tool = self._tools.get(name)
        return tool.activity(arguments) if tool is not None else f"calling {name}"

    def parallel_safe(self, name: str) -> bool:
        tool = self._tools.get(name)
        return tool is not None and tool.parallel_safe

    def specs(self, names: Iterable[str] | None = None) -> list[ToolSpec]:
        """Specs in registration order, limited to `names` when given (unknown names are skipped)."""
        wanted = None if names is None else set(names)
        return [t.spec() for n, t in self._tools.items() if wanted is None or n in wanted]

    def prepare(self, name: str, raw_arguments: dict[str, Any] | None,
                raw_text: str | None = None) -> tuple[Tool, BaseModel] | ToolOutput:
        """Validate a call. `raw_text` is the unparsed argument text when the provider could not parse it."""
        tool = self._tools.get(name)
        if tool is None:
            return _error(f"Unknown tool {name!r}. Available tools: {', '.join(self._tools)}.")
        arguments: Any = raw_arguments
        if arguments is None and raw_text is not None and raw_text.strip():
            try:
                arguments = json.loads(raw_text)
            except json.JSONDecodeError as exc:
                excerpt = clip(raw_text, 201)
                return _error(f"{name}: the arguments are not valid JSON ({exc.msg} at line {exc.lineno} "
                              f"column {exc.colno}): {excerpt!r}. Send the arguments as one JSON object.")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return _error(f"{name}: the arguments must be a JSON object, not {_json_type(arguments)}.")
        try:
            return tool, tool.Args.model_validate(arguments)
        except ValidationError as exc:
            return _error("\n".join(_describe(name, error) for error in exc.errors()))


def _describe(tool: str, error: Any) -> str:
    loc = ".".join(str(p) for p in error.get("loc", ())) or "(arguments)"
    kind = error.get("type", "")
    if kind == "missing":
        return f"{tool}: argument {loc!r} is required."
    if kind == "extra_forbidden":
        return f"{tool}: argument {loc!r} is not accepted by this tool."
    given = error.get("input")
    shown = clip(json.dumps(given, default=str), 81)
    return f"{tool}: argument {loc!r}: {error.get('msg', 'invalid value')} (got {shown})."


def _json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__)


def _error(text: str) -> ToolOutput:
    return ToolOutput(content=text, is_error=True)


def builtin_tools() -> list[Tool]:
    """The file, search, shell and `complete` tools (the runtime adds `ask_user` and the agent tools)."""
    return [ReadFileTool(), WriteFileTool(), EditFileTool(), ListDirTool(), GlobTool(), GrepTool(),
            BashTool(), CompleteTool()]
