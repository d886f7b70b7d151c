"""complete: validated arguments become the result; optional JSON-schema check of `output`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yeetui.errors import ConfigError, ToolError
from yeetui.tools.base import ToolContext
from yeetui.tools.complete import CompleteTool
from yeetui.tools.registry import ToolRegistry
from yeetui.workspace import WorkspaceBinding

VERDICT = {
    "type": "object",
    "properties": {"verdict": {"enum": ["approve", "request_changes"]}, "comments": {"type": "array"}},
    "required": ["verdict"],
}


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(binding=WorkspaceBinding(cwd=tmp_path))


async def test_complete_returns_the_validated_arguments(ctx: ToolContext) -> None:
    tool = CompleteTool()
    args = tool.Args(output="Done.", status="partial", files_modified=["a.py"], next_steps=["test"])
    out = await tool.run(args, ctx)
    assert out.content == "Run completed." and not out.is_error
    assert out.data == {"output": "Done.", "status": "partial", "artifacts": [], "files_modified": ["a.py"],
                        "next_steps": ["test"]}
    defaults = await tool.run(tool.Args(output="x"), ctx)
    assert defaults.data is not None and defaults.data["status"] == "success"


def test_bad_status_and_missing_output_are_reported_by_the_registry() -> None:
    registry = ToolRegistry([CompleteTool()])
    result = registry.prepare("complete", {"status": "done"}, None)
    assert not isinstance(result, tuple) and result.is_error
    assert "complete: argument 'output' is required." in result.content
    assert "complete: argument 'status': Input should be 'success', 'partial' or 'blocked'" in result.content


async def test_schema_valid_output_passes(ctx: ToolContext) -> None:
    tool = CompleteTool(output_schema=VERDICT)
    out = await tool.run(tool.Args(output=json.dumps({"verdict": "approve"})), ctx)
    assert out.data is not None and json.loads(out.data["output"]) == {"verdict": "approve"}


async def test_schema_mismatch_lists_each_problem(ctx: ToolContext) -> None:
    tool = CompleteTool(output_schema=VERDICT)
    with pytest.raises(ToolError) as err:
        await tool.run(tool.Args(output=json.dumps({"verdict": "maybe", "comments": "no"})), ctx)
    text = str(err.value)
    assert text.startswith("complete: `output` does not match the required schema:")
    assert "- at comments: 'no' is not of type 'array'" in text
    assert "- at verdict: 'maybe' is not one of ['approve', 'request_changes']" in text
    with pytest.raises(ToolError, match="at the top level: 'verdict' is a required property"):
        await tool.run(tool.Args(output="{}"), ctx)


async def test_schema_with_non_json_output_says_so(ctx: ToolContext) -> None:
    tool = CompleteTool(output_schema=VERDICT)
    with pytest.raises(ToolError, match=r"not valid JSON \(Expecting value at line 1 column 1\)"):
        await tool.run(tool.Args(output="Looks good to me"), ctx)


def test_invalid_schema_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not a valid JSON schema"):
        CompleteTool(output_schema={"type": "no-such-type"})


def test_schema_is_shown_to_the_model() -> None:
    plain, strict = CompleteTool().spec(), CompleteTool(output_schema=VERDICT).spec()
    assert "schema" not in plain.description
    assert json.dumps(VERDICT, separators=(",", ":")) in strict.description
    assert strict.input_schema["required"] == ["output"]
