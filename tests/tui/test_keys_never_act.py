"""Keys never act or trust by accident: a word typed while the inbox or the ledger has the focus goes into the
composer (typing "make" merges nothing); what changes the user's repository or stops work asks first, in a
dialog that keys typed ahead cannot answer."""

from __future__ import annotations

from pathlib import Path

from textual.message import Message

from tests.fakellm import Reply, ToolCall
from tests.tui.deliberate import SettleClock, answer, shown
from tests.tui.test_app import _main, _text, _type
from tests.tui.test_scenarios import _ledger_lines
from tests.tui.test_worktree_commands import PRIMARY, _build, _repo, git
from tests.waiting import pilot_until
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.confirm import ConfirmScreen
from yeetui.tui.widgets.composer import Composer, ComposerInput
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.inbox import InboxPanel
from yeetui.tui.widgets.ledger import LedgerPanel

# -- the inbox: typing goes to the composer; merging asks ---------------------------------------


async def test_typing_make_with_the_inbox_focused_writes_make_and_merges_only_when_confirmed(
        fake_env, project: Path, settle_clock: SettleClock) -> None:
    _repo(project)
    fake_env.script(
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "builder", "prompt": "BUILD-MUL: add mul.py"})],
              when_contains="build mul"),
        *_build("BUILD-MUL", "mul.py"),
        Reply(text="The builder finished. PRIMARY-DONE", when_contains=PRIMARY, repeat=True),
    )
    app = YeetuiApp(cwd=project)
    messages: list[Message] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        composer = main.query_one(Composer)
        await _type(pilot, "build mul")
        inbox = main.query_one(InboxPanel)
        await pilot_until(pilot, lambda: any((i.data or {}).get("worktree") for i in inbox.items.values()), timeout=30)
        item = next(i for i in inbox.items.values() if (i.data or {}).get("worktree"))
        worktree_id = item.data["worktree"]["id"]  # type: ignore[index]
        store = app.surface.store

        async def unmerged() -> bool:
            wt = await store.worktree_records.get(worktree_id)
            return wt is not None and wt.status == "active" and not (project / "mul.py").exists() \
                and "Merging" not in _text(view)

        inbox.focus()
        inbox.highlighted = inbox.get_option_index(str(item.id))
        await pilot.pause()
        await pilot.press(*"make")
        assert composer.text == "make" and isinstance(app.focused, ComposerInput)
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert not [m for m in messages if isinstance(m, InboxPanel.Action)]
        assert await unmerged()

        # alt+m asks first; an enter typed ahead does not answer, nor does "No".
        composer.text = ""
        inbox.focus()
        await pilot.pause()
        await pilot.press("alt+m")
        screen = await shown(pilot)
        assert "Merge builder#1 into your branch?" in str(screen.query_one("#confirm-question").render())
        await pilot.press("tab", "enter")
        await pilot.pause()
        assert app.screen is screen and await unmerged()
        await answer(pilot, settle_clock, yes=False)
        await pilot.pause()
        assert await unmerged()

        inbox.focus()
        await pilot.pause()
        await pilot.press("alt+m")
        await answer(pilot, settle_clock, yes=True)
        await pilot_until(pilot, lambda: "merged into main" in _text(view), timeout=30)
        assert (project / "mul.py").read_text() == "# BUILD-MUL\n"
        assert git(project, "symbolic-ref", "--short", "HEAD").strip() == "main"


# -- the ledger: typing goes to the composer; cancel and abort ask ---------------------------------


async def test_typing_with_the_ledger_focused_writes_to_the_composer_and_stopping_asks(
        fake_env, project: Path, settle_clock: SettleClock) -> None:
    fake_env.script(Reply(text="pondering " * 600, chunk_size=30, chunk_delay=1.0, when_contains="SLOW-Q"))
    app = YeetuiApp(cwd=project)
    messages: list[Message] = []
    async with app.run_test(size=(120, 32), message_hook=messages.append) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        composer = main.query_one(Composer)
        await _type(pilot, "/oracle SLOW-Q why?")
        await pilot_until(pilot, lambda: any(line.startswith("oracle#1 running") for line in _ledger_lines(main)))
        ledger = main.query_one(LedgerPanel)
        run_id = next(run_id for run_id, row in ledger.rows.items() if row.label == "oracle#1")
        ledger.highlighted = ledger.get_option_index(run_id)
        spawner = app.surface.runtime.spawner

        def running() -> bool:
            return spawner.is_live(run_id) and not spawner.wrapping_up(run_id) and \
                any(line.startswith("oracle#1 running") for line in _ledger_lines(main))

        ledger.focus()
        await pilot.pause()
        await pilot.press(*"scxte")
        assert composer.text == "scxte" and isinstance(app.focused, ComposerInput)
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert not [m for m in messages if isinstance(m, LedgerPanel.Action)]
        assert running()

        composer.text = ""
        for key in ("alt+c", "alt+x"):  # each asks; typed-ahead keys and "No" leave the run alone
            ledger.focus()
            await pilot.pause()
            await pilot.press(key)
            screen = await shown(pilot)
            await pilot.press("tab", "enter")
            await pilot.pause()
            assert app.screen is screen and running()
            await answer(pilot, settle_clock, yes=False)
            await pilot.pause()
            assert running() and "wrap up" not in _text(view)

        ledger.focus()
        await pilot.pause()
        await pilot.press("alt+c")
        await answer(pilot, settle_clock, yes=True)
        await pilot_until(pilot, lambda: spawner.wrapping_up(run_id) or not spawner.is_live(run_id))
        ledger.focus()
        await pilot.pause()
        await pilot.press("alt+x")
        await answer(pilot, settle_clock, yes=True)
        await pilot_until(pilot, lambda: any(line.startswith("oracle#1 cancelled") for line in _ledger_lines(main)))
