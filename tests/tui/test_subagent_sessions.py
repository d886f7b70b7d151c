"""A subagent's session from the user's side (issue 24, item 10): going back to the parent shows the parent's
end, and a message typed into a finished subagent's session is a follow-up turn of that subagent."""

from __future__ import annotations

from pathlib import Path

from tests.fakellm import Reply, ToolCall
from tests.tui.test_app import _main, _text, _type
from tests.waiting import pilot_until
from yeetui.events import RunStatus
from yeetui.messages import Message
from yeetui.runtime import Runtime
from yeetui.tui.app import YeetuiApp


async def _long_primary(project: Path) -> str:
    """A primary session with a conversation several pages long."""
    runtime = await Runtime.open(cwd=project)
    try:
        session = await runtime.store.create_session(profile="generic", cwd=str(project))
        for i in range(40):
            await runtime.store.append_message(session.id, Message.user(f"question {i}"))
            await runtime.store.append_message(session.id, Message.assistant(f"answer {i}\n\n" + "line\n\n" * 6))
        return session.id
    finally:
        await runtime.close()


async def test_going_back_to_the_parent_shows_the_end_of_its_conversation(fake_env, project: Path) -> None:
    """The user scrolled up in the parent, opened a subagent and went back with ctrl+o: the parent shows its
    end — the subagent's announcement, which arrived meanwhile — not the place they had scrolled to."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "CHILD-VERDICT: all good"})],
                          when_contains="CHILD-TASK"))
    parent_id = await _long_primary(project)
    app = YeetuiApp(cwd=project, resume=parent_id)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        parent = main.view()
        await pilot_until(pilot, lambda: parent.max_scroll_y > 0 and parent.scroll_y == parent.max_scroll_y)
        await _type(pilot, "@generic CHILD-TASK check it")
        spawner = main.surface.runtime.spawner
        await pilot_until(pilot, lambda: bool(spawner.live_runs(parent_id)) or "Started generic" in _text(parent))
        [child] = await main.surface.store.descendants(parent_id)
        await pilot.press("pageup", "pageup")
        await pilot_until(pilot, lambda: not parent.following)
        await main.open_session(child.id)
        await pilot_until(pilot, lambda: "CHILD-VERDICT" in _text(main.view(child.id)))
        await pilot_until(pilot, lambda: "CHILD-VERDICT" in _text(parent))  # the announcement, off screen
        await pilot.press("ctrl+o")
        await pilot_until(pilot, lambda: main.current == parent_id)
        await pilot_until(pilot, lambda: parent.following and parent.scroll_y == parent.max_scroll_y
                     and parent.max_scroll_y > 0)
        last = parent.entries[-1]
        assert "CHILD-VERDICT" in str(last.render()) + _text(last)  # the announcement is what shows last


async def test_a_message_typed_into_a_finished_subagent_continues_it(fake_env, project: Path) -> None:
    """What the user types in a finished subagent's session is a follow-up turn of that subagent, with its
    conversation as context, shown in its session and delivered to the parent like its first answer (it was
    refused with a read-only notice, and the message was lost)."""
    from yeetui.tui.widgets.inbox import InboxPanel
    from yeetui.tui.widgets.session_header import SessionHeader

    fake_env.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "FIRST-VERDICT: the cache"})], when_contains="FIRST-TASK"),
        Reply(text="Looking again.", tool_calls=[ToolCall("complete", {"output": "SECOND-VERDICT: and the lock"})],
              when_contains="ANYTHING-ELSE"),
    )
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        parent_id = main.current
        await _type(pilot, "/oracle FIRST-TASK why slow?")
        inbox = main.query_one(InboxPanel)
        await pilot_until(pilot, lambda: inbox.unread == 1)
        [child] = await main.surface.store.descendants(parent_id)
        await main.open_session(child.id)
        header = main.query_one(SessionHeader)
        await pilot_until(pilot, lambda: "completed · type to follow up" in str(header.render()))

        await _type(pilot, "ANYTHING-ELSE to check?")
        child_view = main.view(child.id)
        await pilot_until(pilot, lambda: "SECOND-VERDICT" in _text(child_view))
        assert "ANYTHING-ELSE to check?" in _text(child_view)  # the message is in the subagent's session
        asked = [r for r in fake_env.requests if "ANYTHING-ELSE" in r.text][-1]
        assert asked.rejected is None and "FIRST-TASK" in asked.text and "FIRST-VERDICT" in asked.text
        await pilot_until(pilot, lambda: inbox.unread == 2)  # delivered to the parent like the first answer
        await pilot_until(pilot, lambda: "SECOND-VERDICT" in _text(main.view(parent_id)))
        runs = await main.surface.store.list_runs(session_id=child.id)
        assert [r.status for r in runs] == [RunStatus.COMPLETED, RunStatus.COMPLETED]
        assert len({r.label for r in runs}) == 1  # the same oracle#1 going on
        await pilot_until(pilot, lambda: "completed · type to follow up" in str(header.render()))


async def test_a_follow_up_that_cannot_start_leaves_the_message_in_the_composer(fake_env, project: Path) -> None:
    """A subagent whose checkout is gone (its worktree merged and removed) cannot go on: the user is told why,
    and the message they typed is back in the composer, not lost."""
    from yeetui.tui.widgets.composer import Composer

    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "VERDICT"})], when_contains="TASK"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        parent_id = main.current
        await _type(pilot, "/oracle TASK")
        await pilot_until(pilot, lambda: "VERDICT" in _text(main.view()))
        [child] = await main.surface.store.descendants(parent_id)
        await main.surface.store.update_session(child.id, cwd=str(project.parent / "removed-worktree"))
        await main.open_session(child.id)
        await _type(pilot, "my long careful question")
        await pilot_until(pilot, lambda: "which is gone" in _text(main.view()))
        assert main.query_one(Composer).text == "my long careful question"
        assert "back in the composer" in _text(main.view())
        assert len(await main.surface.store.list_runs(session_id=child.id)) == 1  # nothing was started
