"""Compaction: `/compact` and automatic compaction near the context limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.events import RunStatus
from yeetui.runs.compaction import compact_session
from yeetui.runtime import Runtime

SUMMARISER = "compacting a coding-agent conversation"


@pytest.fixture
async def runtime(fake_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("YEETUI_RETRY__BASE_DELAY", "0")
    monkeypatch.setenv("YEETUI_COMPACT_AT_TOKENS", "5000")
    project = tmp_path / "project"
    project.mkdir()
    rt = await Runtime.open(cwd=project)
    yield rt
    await rt.close()


async def test_auto_compaction_replaces_history_with_summary(runtime: Runtime, fake_env) -> None:
    fake_env.script(
        Reply(text="SUMMARY-OF-WORK so far", when_contains=SUMMARISER),
        Reply(tool_calls=[ToolCall("list_dir", {"path": "."})], usage={"input_tokens": 9000, "output_tokens": 5},
              when_contains="ORIGINAL-TASK"),
        Reply(tool_calls=[ToolCall("complete", {"output": "done after compaction"})],
              when_contains="SUMMARY-OF-WORK"),
    )
    result = await runtime.run_prompt("ORIGINAL-TASK: list the files")
    assert result.status == RunStatus.COMPLETED, result.error
    summariser, after = fake_env.requests[1], fake_env.requests[2]
    assert SUMMARISER in summariser.text and "ORIGINAL-TASK" in summariser.text
    assert "tools" not in summariser.body or not summariser.body["tools"]
    assert "ORIGINAL-TASK" not in after.text and "SUMMARY-OF-WORK" in after.text
    stored = await runtime.store.messages(result.session_id)
    assert any("ORIGINAL-TASK" in m.message.text for m in stored)  # nothing is lost in the store
    assert result.usage.input_tokens > 9000  # the summary call is paid for by the run


async def test_compact_command_then_next_run_starts_from_summary(runtime: Runtime, fake_env) -> None:
    fake_env.script(Reply(text="first answer", when_contains="EARLY-QUESTION"))
    first = await runtime.run_prompt("EARLY-QUESTION", interactive=True)
    fake_env.script(Reply(text="COMPACT-SUMMARY", when_contains=SUMMARISER),
                    Reply(text="later answer", when_contains="LATER-QUESTION"))
    summary = await compact_session(runtime, first.session_id)
    assert summary == "COMPACT-SUMMARY"
    await runtime.run_prompt("LATER-QUESTION", session_id=first.session_id, interactive=True)
    last = fake_env.requests[-1]
    assert "EARLY-QUESTION" not in last.text and "COMPACT-SUMMARY" in last.text
    assert [m["role"] for m in last.body["messages"]] == ["user"]  # consecutive user turns merged on the wire
