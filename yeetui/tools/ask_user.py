"""`ask_user`: an exit tool — the run stops as `waiting_user` with the question for the user."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from yeetui.tools.base import Tool, ToolContext, ToolOutput


class AskUserArgs(BaseModel):
    model_config = ConfigDict(defer_build=True)  # the validator is built at the first call, not at start

    question: str = Field(min_length=1, description="What you need from the user, as a complete question.")


class AskUserTool(Tool):
    name = "ask_user"
    description = ("Stop and ask the user a question when you cannot continue without their decision or "
                   "information. The run pauses until the user answers.")
    Args = AskUserArgs
    exit = True

    def activity(self, args: dict[str, Any]) -> str:
        return "asking the user"

    def subject(self, args: BaseModel) -> str:
        return ""

    async def run(self, args: AskUserArgs, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(content="The question was passed to the user.", data={"question": args.question})
