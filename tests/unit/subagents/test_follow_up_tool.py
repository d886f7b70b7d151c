"""A parent talks to a finished subagent again (`send_message`): the subagent goes on in its own session with
its earlier context, and its new answer reaches the parent once, as the first did."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.errors import YeetuiError
from yeetui.events import RunStatus
from yeetui.runs.spec import RunResult
from yeetui.runtime import Runtime
from yeetui.subagents.host import AgentHost


async def test_a_finished_oracle_answers_a_follow_up_with_its_earlier_context(runtime: Runtime, scripted) -> None:
    scripted.script(
        # the oracle: its follow-up (that request holds its whole earlier conversation too), then its task
        Reply(tool_calls=[ToolCall("complete", {"output": "SECOND-ANSWER: the cache, too"})],
              when_contains="Message from generic"),
        Reply(tool_calls=[ToolCall("complete", {"output": "FIRST-ANSWER: the timer"})],
              when_contains="ORACLE-TASK"),
        # the parent: spawn, then message the finished oracle, then end its turn
        Reply(tool_calls=[ToolCall("complete", {"output": "It is looking into it again."})],
              when_contains="goes on with your message"),
        Reply(tool_calls=[ToolCall("send_message", {"run_id": "oracle#1", "message": "FOLLOW-Q and the cache?"})],
              when_contains="FIRST-ANSWER"),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "ORACLE-TASK why flaky?",
                                                      "blocking": True})]))
    first = await runtime.launcher.run_prompt("PARENT go", interactive=False)
    # the parent's conversation says the oracle can be asked again (under its report)
    after_spawn = next(r for r in scripted.requests if "FIRST-ANSWER" in r.text and "Message from" not in r.text
                       and "You are the oracle" not in r.text)
    assert "oracle#1 keeps its context: ask it more with send_message to oracle#1" in after_spawn.text
    assert first.status == RunStatus.COMPLETED
    # the follow-up runs on; its answer is announced to the parent's session once
    oracle_session = (await runtime.store.children(first.session_id))[0]
    runs = await runtime.store.list_runs(session_id=oracle_session.id, limit=5)
    assert len(runs) == 2
    assert [r.label for r in runs] == ["oracle#1", "oracle#1"]  # the same child, by the same name
    ended = await asyncio.wait_for(runtime.spawner.wait(runs[0].id), 30) or runs[0]
    assert isinstance(ended, RunResult)  # (a RunRecord, the run's row, has no output)
    assert ended.status == RunStatus.COMPLETED and "SECOND-ANSWER" in ended.output
    follow_up_request = next(r for r in scripted.requests if "FOLLOW-Q" in r.text and "ORACLE-TASK" in r.text)
    assert "FIRST-ANSWER" in follow_up_request.text  # its own earlier answer: the same conversation
    await runtime.spawner.delivery.flush(first.session_id)
    announced = [m for m in await runtime.store.messages(first.session_id)
                 if m.message.meta.get("announcement") and "SECOND-ANSWER" in m.message.text]
    assert len(announced) == 1


async def test_a_released_subagent_is_not_asked_again(runtime: Runtime, scripted) -> None:
    scripted.script(Reply(tool_calls=[ToolCall("complete", {"output": "ANSWER"})], when_contains="ORACLE-TASK"),
                    Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "ORACLE-TASK go",
                                                                  "blocking": True})]),
                    Reply(tool_calls=[ToolCall("complete", {"output": "parent done"})], repeat=True))
    first = await runtime.launcher.run_prompt("PARENT go")
    # the runs layer types the host it is handed as `object`; the runtime hands it an AgentHost
    host = cast(AgentHost, runtime.launcher.agent_host(session_id=first.session_id, run_id=first.run_id,
                                                       label="generic#1"))
    listed = await host.children()
    assert [(c["label"], c["can_be_asked_again"]) for c in listed] == [("oracle#1", True)]
    assert "released" in await host.release("oracle#1")
    assert [c["can_be_asked_again"] for c in await host.children()] == [False]
    with pytest.raises(YeetuiError, match="was released by its parent"):
        await host.send("oracle#1", "one more thing")
