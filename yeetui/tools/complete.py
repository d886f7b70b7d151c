"""`complete`: how a subagent ends its run. Its validated arguments become the run's result.

With an `output_schema` (from a workflow), `output` must be a JSON document that validates against it;
the schema is shown to the model in the tool description so it can comply the first time.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field

from yeetui.errors import ConfigError, ToolError
from yeetui.providers.base import ToolSpec
from yeetui.tools.base import Tool, ToolContext, ToolOutput
from yeetui.tools.files import StrictArgs

_MAX_SCHEMA_ERRORS = 10


class CompleteArgs(StrictArgs):
    output: str = Field(description="The result of your task: the answer, report or summary for the caller.")
    status: Literal["success", "partial", "blocked"] = Field(
        "success", description="success: done; partial: some of it done; blocked: could not proceed.")
    artifacts: list[str] | dict[str, Any] = Field(
        default_factory=list,
        description="Paths or ids of things you produced, or the structured result your instructions ask for "
                    "(e.g. a review verdict with findings).")
    files_modified: list[str] = Field(default_factory=list, description="Files you created or changed.")
    next_steps: list[str] = Field(default_factory=list, description="What should happen next, if anything.")


class CompleteTool(Tool):
    name = "complete"
    description = ("Finish your task and hand the result back. Call it exactly once, when you are done or "
                   "cannot continue; nothing you do after it is seen.")
    Args = CompleteArgs
    exit = True

    def activity(self, args: dict[str, Any]) -> str:
        return "finishing"

    def __init__(self, output_schema: dict[str, Any] | None = None) -> None:
        self.output_schema = output_schema
        self._validator: Any = None
        if output_schema is not None:
            import jsonschema  # lazy: only workflows with a schema need it

            cls = jsonschema.validators.validator_for(output_schema)
            try:
                cls.check_schema(output_schema)
            except jsonschema.SchemaError as exc:
                raise ConfigError(f"The output schema for `complete` is not a valid JSON schema: "
                                  f"{exc.message}.") from exc
            self._validator = cls(output_schema)

    def spec(self) -> ToolSpec:
        base = super().spec()
        if self.output_schema is None:
            return base
        hint = (" `output` must be a JSON document (as a string) matching this JSON schema: "
                + json.dumps(self.output_schema, separators=(",", ":")))
        return ToolSpec(name=base.name, description=base.description + hint, input_schema=base.input_schema)

    def subject(self, args: Any) -> str:
        return ""

    async def run(self, args: CompleteArgs, ctx: ToolContext) -> ToolOutput:
        if self._validator is not None:
            self._check_output(args.output)
        return ToolOutput(content="Run completed.", data=args.model_dump())

    def _check_output(self, output: str) -> None:
        try:
            document = json.loads(output)
        except json.JSONDecodeError as exc:
            raise ToolError(f"complete: `output` must be JSON matching the required schema, but it is not "
                            f"valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}). Call complete "
                            "again with `output` set to a JSON document.") from exc
        errors = sorted(self._validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        if not errors:
            return
        problems = [
            f"- at {'/'.join(str(p) for p in e.absolute_path) or 'the top level'}: {e.message}"
            for e in errors[:_MAX_SCHEMA_ERRORS]
        ]
        if len(errors) > _MAX_SCHEMA_ERRORS:
            problems.append(f"- … and {len(errors) - _MAX_SCHEMA_ERRORS} more")
        raise ToolError("complete: `output` does not match the required schema:\n" + "\n".join(problems)
                        + "\nFix these and call complete again.")
