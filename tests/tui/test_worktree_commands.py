"""Getting a builder's work back from the TUI: the announcement says where it is, /worktrees lists it, /merge
brings it into the user's branch, /discard throws another away; the checkout is untouched until then. Merging
and discarding ask first (`answer` confirms past the dialog's window, see tests/tui/deliberate.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.gitrepo import git_project
from tests.tui.deliberate import SettleClock, answer, shown
from tests.tui.test_app import _main, _text, _type
from tests.waiting import pilot_until
from yeetui.events import InboxItemAdded
from yeetui.tui.app import YeetuiApp
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.inbox import InboxPanel

PRIMARY = "You are yeetui's coding agent"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@e.st", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def _repo(project: Path) -> None:
    git_project(project, {"calc.py": "def add(a, b):\n    return a + b\n"})


def _build(marker: str, name: str) -> list[Reply]:
    return [
        Reply(tool_calls=[ToolCall("write_file", {"path": name, "content": f"# {marker}\n"})], when_contains=marker),
        Reply(tool_calls=[ToolCall("complete", {"output": f"{marker} done"})], when_contains=marker),
    ]


async def test_merge_and_discard_a_builders_worktree_from_the_tui(fake_env, project: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 settle_clock: SettleClock) -> None:
    for name in ("TMUX", "DISPLAY", "WAYLAND_DISPLAY", "TERMINAL"):  # no tmux or window to open a shell in
        monkeypatch.delenv(name, raising=False)
    _repo(project)
    fake_env.script(
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "builder", "prompt": "BUILD-MUL: add mul.py"}),
                          ToolCall("spawn_subagent", {"profile": "builder", "prompt": "BUILD-DIV: add div.py"})],
              when_contains="build mul and div"),
        *_build("BUILD-MUL", "mul.py"), *_build("BUILD-DIV", "div.py"),
        Reply(text="Both builders finished. PRIMARY-DONE", when_contains=PRIMARY, repeat=True),
    )
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await _type(pilot, "build mul and div")
        await pilot_until(pilot, lambda: "PRIMARY-DONE" in _text(view), timeout=30)
        # Each builder's card says where its work is and how to take it, whatever the child wrote.
        await pilot_until(pilot, lambda: _text(view).count("/merge builder#") >= 2, timeout=30)
        assert "left 1 commit(s) on branch yeetui/build/builder-" in _text(view)
        assert not (project / "mul.py").exists() and not (project / "div.py").exists()

        await _type(pilot, "/worktrees")
        await pilot_until(pilot, lambda: "Worktrees (/merge NAME" in _text(view))
        assert "builder#1" in _text(view) and "builder#2" in _text(view) and "1 commit(s)" in _text(view)

        trees = await app.surface.store.worktree_records.list(statuses=("active",))
        mul = next(w.label for w in trees if (w.path / "mul.py").is_file())
        div = next(w.label for w in trees if (w.path / "div.py").is_file())
        inbox = main.query_one(InboxPanel)
        # alt+w on a builder's inbox item opens its worktree: here, with no tmux or display, the `cd` to type.
        div_item = next(i for i in inbox.items.values() if (i.data or {}).get("label") == div)
        div_path = next(w.path for w in trees if w.label == div)
        inbox.focus()
        inbox.highlighted = inbox.get_option_index(str(div_item.id))
        await pilot.press("alt+w")
        await pilot_until(pilot, lambda: f"{div}'s worktree (branch yeetui/build/" in _text(view))
        assert f"cd {div_path}" in _text(view)
        # alt+m on the builder's inbox item merges its branch, once confirmed.
        item = next(i for i in inbox.items.values() if (i.data or {}).get("label") == mul)
        assert (item.data or {})["worktree"]["commits"] == 1
        inbox.focus()
        inbox.highlighted = inbox.get_option_index(str(item.id))
        await pilot.press("alt+m")
        await answer(pilot, settle_clock, yes=True)
        await pilot_until(pilot, lambda: "merged into main" in _text(view), timeout=30)
        assert (project / "mul.py").read_text() == "# BUILD-MUL\n"
        assert git(project, "symbolic-ref", "--short", "HEAD").strip() == "main"

        # alt+w on an item telling of both builders' worktrees (an orchestrator's ending, in plan order) after the
        # first was merged: the shell opens in the one still there, named by its builder's label.
        worktrees = [{"id": w.id, "label": w.label, "branch": w.branch} for w in
                     sorted(trees, key=lambda w: w.label != mul)]
        store = app.surface.store
        ending = await store.inbox.add(session_id=main.current, kind="orchestrator", title="orchestrator#1 — completed",
                                       data={"event": "end", "status": "completed", "worktrees": worktrees})
        app.surface.bus.publish(InboxItemAdded(ending.id, main.current, None, ending.kind, ending.title, "",
                                               ending.data or {}))
        await pilot_until(pilot, lambda: str(ending.id) in [str(o.id) for o in inbox.options])
        inbox.focus()
        inbox.highlighted = inbox.get_option_index(str(ending.id))
        await pilot.press("alt+w")
        await pilot_until(pilot, lambda: _text(view).count(f"{div}'s worktree (branch yeetui/build/") == 2)
        assert f"{mul}'s worktree" not in _text(view)

        main.query_one("Composer").focus()
        await _type(pilot, f"/discard {div}")
        screen = await shown(pilot)
        await pilot.press("tab", "enter")  # typed ahead: no answer
        await pilot.pause()
        assert pilot.app.screen is screen and (div_path / "div.py").is_file()
        await answer(pilot, settle_clock, yes=False)  # "No": nothing is thrown away
        await pilot.pause()
        assert f"Discarded {div}" not in _text(view) and (div_path / "div.py").is_file()
        await _type(pilot, f"/discard {div}")
        await answer(pilot, settle_clock, yes=True)
        await pilot_until(pilot, lambda: f"Discarded {div}" in _text(view), timeout=30)
        assert not (project / "div.py").exists()
        await _type(pilot, "/merge builder#9")
        await pilot_until(pilot, lambda: "There is no active worktree named 'builder#9'" in _text(view))
