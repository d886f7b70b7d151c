"""SessionControl: the interactive conversation without any UI."""

from __future__ import annotations

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.events import RunStatus, SessionBusyChanged
from yeetui.runtime import Runtime
from yeetui.subagents.session_control import SessionControl


@pytest.fixture
async def control(runtime: Runtime) -> SessionControl:
    session = await runtime.launcher.new_session(runtime.profiles.get("generic"))
    return runtime.session_control(session.id)


async def test_prompts_typed_while_busy_are_queued_in_order(control: SessionControl, scripted) -> None:
    busy: list[tuple[bool, int]] = []
    control.bus.add_listener(lambda e: busy.append((e.busy, e.queued)) if isinstance(e, SessionBusyChanged) else None)
    scripted.script(Reply(text="first answer " * 20, chunk_delay=0.02, chunk_size=6, when_contains="FIRST"),
                    Reply(text="second answer", when_contains="SECOND"))
    await control.submit("FIRST")
    await control.submit("SECOND")
    assert control.busy and list(control.queue) == ["SECOND"]
    await control.wait_idle()
    assert not control.busy
    texts = [r.body["messages"][-1]["content"][0]["text"] for r in scripted.requests]
    assert texts == ["FIRST", "SECOND"]
    assert control.last_result.status == RunStatus.WAITING_USER
    assert (True, 1) in busy and busy[-1] == (False, 0)
    second = scripted.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]


async def test_interrupt_cancels_only_this_session(control: SessionControl, scripted) -> None:
    scripted.script(Reply(text="long " * 300, chunk_delay=0.02, chunk_size=5))
    await control.submit("go")
    await scripted.until_requests(1)  # the answer is streaming
    assert await control.interrupt() is True
    assert not control.busy
    (run,) = await control.launcher.store.list_runs(session_id=control.session_id)
    assert run.status == RunStatus.CANCELLED
    assert await control.interrupt() is False


async def test_shell_command_joins_the_conversation(control: SessionControl, scripted) -> None:
    message = await control.shell("echo hello-from-shell; exit 3")
    assert "hello-from-shell" in message.text and "exit 3" in message.text
    scripted.script(Reply(text="I see the output."))
    await control.submit("what did it print?")
    await control.wait_idle()
    assert "hello-from-shell" in scripted.requests[0].text


async def test_user_spawned_subagent_is_a_child_and_reports_back(control: SessionControl, scripted) -> None:
    scripted.script(Reply(tool_calls=[ToolCall("complete", {"output": "THE-ANSWER"})]))
    handle = await control.spawn("oracle", "why?")
    result = await control.spawner.wait(handle.run_id)
    assert result.status == RunStatus.COMPLETED
    child = await control.launcher.store.get_session(handle.session_id)
    assert child.parent_id == control.session_id and child.key.startswith("agent:oracle:subagent:")
    messages = await control.launcher.store.messages(control.session_id)
    assert any(m.message.meta.get("announcement") and "THE-ANSWER" in m.message.text for m in messages)


async def test_a_primary_session_is_titled_by_its_first_prompt_once(control: SessionControl, scripted) -> None:
    scripted.script(Reply(text="ok", repeat=True))
    await control.submit("  \n  fix   the flaky login test in tests/test_auth.py, which sleeps on a wall-clock "
                         "timer\nmore")
    await control.wait_idle()
    session = await control.launcher.store.get_session(control.session_id)
    assert session.title == "fix the flaky login test in tests/test_auth.py, which…"
    await control.submit("a second prompt")
    await control.wait_idle()
    assert (await control.launcher.store.get_session(control.session_id)).title == session.title
