"""ToolRegistry: lookup, specs, and clear errors for unknown tools, malformed JSON and bad arguments."""

from __future__ import annotations

import pytest

from yeetui.errors import ToolError
from yeetui.tools.base import ToolOutput
from yeetui.tools.files import ReadFileTool, WriteFileTool
from yeetui.tools.registry import ToolRegistry, builtin_tools


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(builtin_tools())


def error_text(result: object) -> str:
    assert isinstance(result, ToolOutput) and result.is_error
    return result.content


def test_builtin_tools_and_specs(registry: ToolRegistry) -> None:
    assert registry.names() == ["read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "bash",
                                "complete"]
    specs = registry.specs(["bash", "read_file", "nope"])
    assert [s.name for s in specs] == ["read_file", "bash"]
    read = specs[0]
    assert read.input_schema["required"] == ["path"] and "title" not in read.input_schema
    assert read.input_schema["additionalProperties"] is False
    assert len(registry.specs()) == 8


def test_get_unknown_tool_raises_clearly(registry: ToolRegistry) -> None:
    assert registry.get("grep").name == "grep" and "grep" in registry
    with pytest.raises(ToolError, match=r"Unknown tool 'fetch'\. Available tools: read_file, write_file"):
        registry.get("fetch")


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ValueError, match="read_file"):
        ToolRegistry([ReadFileTool(), ReadFileTool()])


def test_prepare_validates_arguments(registry: ToolRegistry) -> None:
    prepared = registry.prepare("read_file", {"path": "a.py", "offset": "3"}, None)
    assert isinstance(prepared, tuple)
    tool, args = prepared
    assert tool.name == "read_file" and args.model_dump() == {"path": "a.py", "offset": 3, "limit": None}


def test_prepare_reports_unknown_tools(registry: ToolRegistry) -> None:
    text = error_text(registry.prepare("delete_everything", {}, None))
    assert text.startswith("Unknown tool 'delete_everything'. Available tools: read_file")


def test_prepare_reports_each_bad_field(registry: ToolRegistry) -> None:
    text = error_text(registry.prepare("write_file", {"content": 5, "mode": "x"}, None))
    assert text.splitlines() == [
        "write_file: argument 'path' is required.",
        "write_file: argument 'content': Input should be a valid string (got 5).",
        "write_file: argument 'mode' is not accepted by this tool.",
    ]
    text = error_text(registry.prepare("grep", {"pattern": "x", "max_results": 0}, None))
    assert text == "grep: argument 'max_results': Input should be greater than or equal to 1 (got 0)."


def test_prepare_handles_raw_json_text(registry: ToolRegistry) -> None:
    text = error_text(registry.prepare("write_file", None, '{"path": "a.txt", "content": "unterminated'))
    assert text.startswith("write_file: the arguments are not valid JSON (Unterminated string")
    assert "Send the arguments as one JSON object." in text
    assert error_text(registry.prepare("write_file", None, "[1, 2]")) == (
        "write_file: the arguments must be a JSON object, not an array.")
    prepared = registry.prepare("write_file", None, '{"path": "a.txt", "content": "ok"}')
    assert isinstance(prepared, tuple) and prepared[1].model_dump() == {"path": "a.txt", "content": "ok"}
    assert isinstance(ToolRegistry([WriteFileTool()]).prepare("write_file", None, None), ToolOutput)
