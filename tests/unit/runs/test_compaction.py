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


# -- children's results and compaction: each interleaving forced -------------------------------------------

RESULT = "CHILD-RESULT-7f3"
"""What the child reported: counted in what the parent's model is sent."""


async def _child_result(runtime: Runtime, parent_session_id: str, *, announce: bool = True) -> int:
    """A finished child of `parent_session_id`, its result handed to delivery (announced at once when the
    parent is idle, kept pending while a run of it is live). The inbox item's id."""
    store = runtime.store
    child = await store.create_session(profile="oracle", parent_id=parent_session_id)
    run = await store.create_run(session_id=child.id, profile="oracle", model=None, prompt="look",
                                 status=RunStatus.COMPLETED, options={"parent_session_id": parent_session_id})
    item, _ = await runtime.delivery.completion(
        recipient_session_id=parent_session_id, run_id=run.id, child_session_id=child.id, label="oracle#7",
        status=RunStatus.COMPLETED, output=RESULT, error=None, result={"output": RESULT}, announce=announce)
    return item.id


def _deliver_during_list_dir(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child finishes while the parent's `list_dir` runs (the parent is live: its result waits, pending,
    for the parent's next turn)."""
    from yeetui.tools.files import ListDirTool

    original = ListDirTool.run

    async def run(self, args, ctx):
        await _child_result(runtime, ctx.session_id)
        return await original(self, args, ctx)

    monkeypatch.setattr(ListDirTool, "run", run)


async def test_a_result_delivered_just_before_a_compaction_comes_again_after_the_summary_once(
        runtime: Runtime, scripted, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pending during the parent's tool call, announced at its next turn, compacted away before any model
    turn saw it: delivered again after the summary — and the model is sent it exactly once."""
    _deliver_during_list_dir(runtime, monkeypatch)
    scripted.script(
        Reply(text="SUMMARY-OF-WORK", when_contains=SUMMARISER),
        Reply(tool_calls=[ToolCall("list_dir", {"path": "."})], usage={"input_tokens": 9000, "output_tokens": 5},
              when_contains="ORIGINAL-TASK"),
        Reply(tool_calls=[ToolCall("complete", {"output": "used it"})], when_contains="SUMMARY-OF-WORK"))
    result = await runtime.launcher.run_prompt("ORIGINAL-TASK: list the files")
    assert result.status == RunStatus.COMPLETED, result.error
    summariser, after = scripted.requests[1], scripted.requests[2]
    assert RESULT in summariser.text  # it was in the conversation the summary was made of …
    assert after.text.count(RESULT) == 1 and "SUMMARY-OF-WORK" in after.text  # … and comes once after it
    unseen = await runtime.store.announcements.unseen_before(result.session_id, "9999")
    assert unseen == []  # the turn after the summary saw it: consumed


async def test_a_result_the_model_already_saw_is_not_replayed_after_compaction(runtime: Runtime, scripted) -> None:
    first = await _session_with_seen_result(runtime, scripted)
    scripted.script(Reply(text="COMPACT-SUMMARY", when_contains=SUMMARISER),
                    Reply(text="later answer", when_contains="LATER-QUESTION"))
    await runtime.launcher.compact(first)
    await runtime.launcher.run_prompt("LATER-QUESTION", session_id=first, interactive=True)
    assert RESULT not in scripted.requests[-1].text
    stored = [m for m in await runtime.store.messages(first) if RESULT in m.message.text]
    assert len(stored) == 1  # announced once, never again


async def test_a_result_returned_inline_and_compacted_before_it_was_seen_comes_again_once(
        runtime: Runtime, scripted) -> None:
    """A blocking spawn's result (delivered as its tool result, no announcement), then `/compact` before any
    model turn saw it: the summary is followed by the result, once."""
    scripted.script(Reply(text="first answer", when_contains="EARLY-QUESTION"))
    first = await runtime.launcher.run_prompt("EARLY-QUESTION", interactive=True)
    item_id = await _child_result(runtime, first.session_id, announce=False)
    await runtime.store.announcements.mark_announced(item_id)  # delivered inline, not seen by any turn
    scripted.script(Reply(text="COMPACT-SUMMARY", when_contains=SUMMARISER),
                    Reply(text="later answer", when_contains="LATER-QUESTION"))
    await runtime.launcher.compact(first.session_id)
    await runtime.launcher.run_prompt("LATER-QUESTION", session_id=first.session_id, interactive=True)
    assert scripted.requests[-1].text.count(RESULT) == 1


async def test_a_crash_between_compaction_and_delivering_again_is_made_good_once_on_resume(
        runtime: Runtime, scripted) -> None:
    """The summary was stored but the process died before the unseen result came again: the next run of the
    conversation delivers it after the summary; the one after that does not deliver it a third time."""
    from yeetui.runs.compaction import compaction_message

    scripted.script(Reply(text="first answer", when_contains="EARLY-QUESTION"))
    first = await runtime.launcher.run_prompt("EARLY-QUESTION", interactive=True)
    await _child_result(runtime, first.session_id)  # announced (the parent is idle), not seen
    await runtime.store.append_message(first.session_id, compaction_message("CRASH-SUMMARY"))  # then: the crash
    scripted.script(Reply(text="answer two", when_contains="SECOND-QUESTION"),
                    Reply(text="answer three", when_contains="THIRD-QUESTION"))
    await runtime.launcher.run_prompt("SECOND-QUESTION", session_id=first.session_id, interactive=True)
    assert scripted.requests[-1].text.count(RESULT) == 1 and "CRASH-SUMMARY" in scripted.requests[-1].text
    await runtime.launcher.run_prompt("THIRD-QUESTION", session_id=first.session_id, interactive=True)
    assert scripted.requests[-1].text.count(RESULT) == 1  # still the one delivery after the summary
    stored = [m for m in await runtime.store.messages(first.session_id) if RESULT in m.message.text]
    assert len(stored) == 2  # the first delivery (before the summary) and the one after it


async def _session_with_seen_result(runtime: Runtime, scripted) -> str:
    scripted.script(Reply(text="first answer", when_contains="EARLY-QUESTION"),
                    Reply(text="noted", when_contains="NEXT-QUESTION"))
    first = await runtime.launcher.run_prompt("EARLY-QUESTION", interactive=True)
    await _child_result(runtime, first.session_id)  # the parent is idle: announced at once
    await runtime.launcher.run_prompt("NEXT-QUESTION", session_id=first.session_id, interactive=True)
    assert scripted.requests[-1].text.count(RESULT) == 1  # this turn saw it
    return first.session_id
