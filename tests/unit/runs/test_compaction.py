"""Compaction: `/compact` and automatic compaction near the context limit."""

from __future__ import annotations

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.events import RunStatus
from yeetui.runtime import Runtime

SUMMARISER = "compacting a coding-agent conversation"


@pytest.fixture
def runtime_env() -> dict[str, str]:
    return {"YEETUI_COMPACT_AT_TOKENS": "5000"}


async def test_auto_compaction_replaces_history_with_summary(runtime: Runtime, scripted) -> None:
    scripted.script(
        Reply(text="SUMMARY-OF-WORK so far", when_contains=SUMMARISER),
        Reply(tool_calls=[ToolCall("list_dir", {"path": "."})], usage={"input_tokens": 9000, "output_tokens": 5},
              when_contains="ORIGINAL-TASK"),
        Reply(tool_calls=[ToolCall("complete", {"output": "done after compaction"})],
              when_contains="SUMMARY-OF-WORK"),
    )
    result = await runtime.launcher.run_prompt("ORIGINAL-TASK: list the files")
    assert result.status == RunStatus.COMPLETED, result.error
    summariser, after = scripted.requests[1], scripted.requests[2]
    assert SUMMARISER in summariser.text and "ORIGINAL-TASK" in summariser.text
    assert "tools" not in summariser.body or not summariser.body["tools"]
    assert "ORIGINAL-TASK" not in after.text and "SUMMARY-OF-WORK" in after.text
    stored = await runtime.store.messages(result.session_id)
    assert any("ORIGINAL-TASK" in m.message.text for m in stored)  # nothing is lost in the store
    assert result.usage.input_tokens > 9000  # the summary call is paid for by the run


async def test_compact_command_then_next_run_starts_from_summary(runtime: Runtime, scripted) -> None:
    scripted.script(Reply(text="first answer", when_contains="EARLY-QUESTION"))
    first = await runtime.launcher.run_prompt("EARLY-QUESTION", interactive=True)
    scripted.script(Reply(text="COMPACT-SUMMARY", when_contains=SUMMARISER),
                    Reply(text="later answer", when_contains="LATER-QUESTION"))
    summary = await runtime.launcher.compact(first.session_id)
    assert summary == "COMPACT-SUMMARY"
    await runtime.launcher.run_prompt("LATER-QUESTION", session_id=first.session_id, interactive=True)
    last = scripted.requests[-1]
    assert "EARLY-QUESTION" not in last.text and "COMPACT-SUMMARY" in last.text
    assert [m["role"] for m in last.body["messages"]] == ["user"]  # consecutive user turns merged on the wire
