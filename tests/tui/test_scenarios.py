"""The rest of the everyday moves under Pilot against the fake LLM server: the pair watcher, /orchestrate with the
switcher, queued permission questions, profile hotkeys, a provider that drops mid-stream, and a resize while
an answer streams. Every test asserts on what the user sees; the fake server's request log proves what
reached (or did not reach) the model."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any, cast

import pytest
from textual.message import Message as TextualMessage
from textual.widgets import ContentSwitcher

from tests.fakellm import Fault, Reply, ToolCall
from tests.gitrepo import git_project
from tests.integration.helpers import run_yeetui, stored_pid, stored_status
from tests.processes import gone
from tests.tui.deliberate import SettleClock, answer
from tests.tui.test_app import _main, _text, _type
from tests.waiting import pilot_until
from yeetui.text import tokens_text
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.main import MainScreen
from yeetui.tui.screens.permission import PermissionScreen
from yeetui.tui.screens.switcher import SessionTree, SwitcherScreen
from yeetui.tui.widgets.composer import Composer
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.inbox import InboxPanel
from yeetui.tui.widgets.ledger import LedgerPanel, row_content
from yeetui.tui.widgets.message_views import AnnouncementView, NoticeView
from yeetui.tui.widgets.session_header import SessionHeader
from yeetui.tui.widgets.tool_views import ToolCallView

PRIMARY = "You are yeetui's coding agent"
PAIR = "You are the pair programmer sitting next to the user"
PLANNER = "You are the planner."
BUILDER = "You are a builder."
REVIEWER = "You are a code reviewer."
"""Phrases from each profile's system prompt: each occurs only in that profile's requests."""


def _ledger_lines(main: MainScreen) -> list[str]:
    ledger = main.query_one(LedgerPanel)
    return [str(ledger.get_option_at_index(i).prompt) for i in range(ledger.option_count)]


def _inbox_lines(main: MainScreen) -> list[str]:
    inbox = main.query_one(InboxPanel)
    return [str(inbox.get_option_at_index(i).prompt) for i in range(inbox.option_count)]


def _complete(output: str, **extra) -> ToolCall:
    return ToolCall("complete", {"output": output, **extra})


def _requests(fake_env, marker: str) -> list:
    return [r for r in fake_env.requests if marker in r.text]


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)


# -- 1. pair ------------------------------------------------------------------------------------------------


async def test_pair_hotkey_watches_interjects_a_blocker_and_stops(fake_env, project: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YEETUI_WATCHER__DEBOUNCE", "0.05")
    monkeypatch.setenv("YEETUI_WATCHER__MIN_INTERVAL", "0")
    blocker = "PAIR-BLOCKER: rm -rf build/ deletes the build output the user asked to keep; stop."
    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "rm -rf build/ && make"})], when_contains=PRIMARY),
        Reply(text="Understood, I left build/ alone. PRIMARY-DONE-1", when_contains=PRIMARY),
        Reply(text="Here is the second answer. PRIMARY-DONE-2", when_contains=PRIMARY),
        # The pair's look at the delta that holds the bash call ends in a blocker; every other look is silent.
        Reply(tool_calls=[_complete(blocker, artifacts={"severity": "blocker"})],
              when_contains="Agent runs `bash`"),
        Reply(tool_calls=[_complete("", artifacts={"severity": "none"})], when_contains=PAIR, repeat=True),
    )
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await pilot.press("f2")
        await pilot_until(pilot, lambda: any(line.startswith("pair#1 watching") for line in _ledger_lines(main)))
        assert "Pair watcher on." in _text(view)
        await pilot.press("ctrl+s")  # the switcher shows the watcher as the ledger does
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, SwitcherScreen))
        pair_node = next(n for n in cast(SwitcherScreen, pilot.app.screen).nodes if n.profile == "pair")
        assert "pair#1 · watching" in str(pilot.app.screen.query_one(SessionTree).label_text(pair_node))
        await pilot.press("escape")
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, MainScreen))

        await _type(pilot, "clean the build dir and rebuild")
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, PermissionScreen))
        assert "rm -rf build/ && make" in _text(pilot.app.screen)
        # The pair saw the tool call while the question is open: its blocker is in the inbox, severity shown.
        inbox = main.query_one(InboxPanel)
        await pilot_until(pilot, lambda: any(i.kind == "interjection" for i in inbox.items.values()))
        line = next(t for t in _inbox_lines(main) if "pair#1" in t)
        assert "blocker" in line and "PAIR-BLOCKER" in line
        assert inbox.unread >= 1
        await pilot.press("n")

        # The blocker is announced in the conversation before the agent's next step, and the agent got it.
        await pilot_until(pilot, lambda: "PRIMARY-DONE-1" in _text(view))
        shown = _text(view)
        assert "[Pair: pair#1] Blocker: PAIR-BLOCKER" in shown
        second = _requests(fake_env, PRIMARY)[1]
        assert "[Pair: pair#1] Blocker: PAIR-BLOCKER" in second.text and "denied" in second.text

        watcher = app.surface.runtime.watchers.get(main.current or "")
        assert watcher is not None
        await watcher.wait_idle(10)
        await pilot_until(pilot, lambda: any(line.startswith("pair#1 watching") for line in _ledger_lines(main)))
        # alt+a on the remark says what it did (it was silent): accepted, and the pair counts it
        remark = next(i for i in inbox.items.values() if i.kind == "interjection")
        inbox.focus()
        inbox.highlighted = next(n for n in range(inbox.option_count) if inbox.get_option_at_index(n).id == str(
            remark.id))
        await pilot.press("alt+a")
        await pilot_until(pilot, lambda: any("Accepted the pair's remark" in n.message and "counts it as useful"
                                        in n.message for n in pilot.app._notifications))  # (run_test shows no toasts)
        assert not any(n.markup for n in pilot.app._notifications if "the pair's remark" in n.message)
        await pilot.press("f2")
        await pilot_until(pilot, lambda: not any(line.startswith("pair#") for line in _ledger_lines(main)))
        assert "Pair watcher off." in _text(view)

        looks = len(_requests(fake_env, PAIR))
        assert looks >= 1
        await _type(pilot, "anything else?")
        await pilot_until(pilot, lambda: "PRIMARY-DONE-2" in _text(view))
        await pilot.pause(0.5)  # ten debounce periods: a live watcher would have looked by now
        assert len(_requests(fake_env, PAIR)) == looks
        assert app.surface.runtime.watchers.get(main.current or "") is None


# -- 2. orchestrate -----------------------------------------------------------------------------------------

APP_PY = 'def health():\n    return {"status": "ok"}  # HEALTH-ENDPOINT\n'


def _git_repo(root: Path) -> None:
    git_project(root, {"app.py": "def health():\n    raise NotImplementedError\n"})


async def test_orchestrate_shows_children_in_ledger_and_switcher_and_jumps_between_them(
        fake_env, project: Path) -> None:
    _git_repo(project)
    fake_env.script(
        Reply(tool_calls=[_complete("Add health() in app.py with a test. PLANNER-SUMMARY")], when_contains=PLANNER),
        Reply(text="Writing the endpoint. ", tool_calls=[ToolCall("write_file", {"path": "app.py", "content": APP_PY})],
              when_contains=BUILDER),
        Reply(tool_calls=[_complete("Added /health in app.py. BUILDER-REPORT", files_modified=["app.py"])],
              when_contains=BUILDER),
        Reply(tool_calls=[_complete("Looks right. REVIEWER-OK", artifacts={"verdict": "approve", "findings": []})],
              when_contains=REVIEWER),
    )
    posted: list[TextualMessage] = []
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 36), message_hook=posted.append) as pilot:
        main = await _main(pilot)
        primary = main.current
        view = main.query_one(ConversationView)
        await _type(pilot, "/orchestrate add a /health endpoint with tests")
        assert any(isinstance(m, Composer.Submitted) and m.text.startswith("/orchestrate add a /health")
                   for m in posted)
        await pilot_until(pilot, lambda: "Started orchestrator#1." in _text(view))
        # The ledger is a tree, as the switcher is: the orchestrator's children indented under its row.
        for row in ("orchestrator#1", "└ planner#1", "└ builder#1", "└ reviewer#1"):

            def in_the_ledger(row: str = row) -> bool:
                return any(line.startswith(row + " ") for line in _ledger_lines(main))

            await pilot_until(pilot, in_the_ledger)
        await pilot_until(pilot, lambda: any(a.label == "orchestrator#1" for a in view.query(AnnouncementView)))
        announcement = next(a for a in view.query(AnnouncementView) if a.label == "orchestrator#1")
        assert "Orchestrator finished: plan ✓ → build ✓ → review ✓" in str(announcement.render())
        assert announcement.status == "completed"
        inbox = main.query_one(InboxPanel)  # progress went to the ledger; the inbox holds the end, once
        await pilot_until(pilot, lambda: len(inbox.items) == 1)
        assert [(i.kind, i.title) for i in inbox.items.values()] == [("completion", "orchestrator#1 — completed")]
        review = _requests(fake_env, REVIEWER)[0].text
        assert "HEALTH-ENDPOINT" in review and "BUILDER-REPORT" in review  # the reviewer got the diff and report

        await pilot.press("ctrl+s")
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, SwitcherScreen))
        tree = pilot.app.screen.query_one(SessionTree)
        nodes = {n.label: n for n in cast(SwitcherScreen, pilot.app.screen).nodes}
        orchestrator = next(node for node in _walk(tree.root) if node.data == nodes["orchestrator#1"].id)
        assert orchestrator.parent.data == primary
        assert sorted(tree.sessions[c.data].label for c in orchestrator.children) == [
            "builder#1", "planner#1", "reviewer#1"]
        assert "builder#1 · completed" in str(tree.label_text(nodes["builder#1"]))
        builder_spent, tree_spent = (nodes[label].tokens for label in ("builder#1", "orchestrator#1"))
        assert 0 < builder_spent < tree_spent  # what each spent, the orchestrator's with its children's
        assert f"builder#1 · completed · {tokens_text(builder_spent)} $" in str(tree.label_text(nodes["builder#1"]))
        builder = nodes["builder#1"].id
        for _ in range(len(nodes) + 2):  # move the cursor with the keys until it is on the builder
            if tree.cursor_node is not None and tree.cursor_node.data == builder:
                break
            await pilot.press("down")
        assert tree.cursor_node.data == builder
        await pilot.press("enter")
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, MainScreen) and main.current == builder)
        header = main.query_one(SessionHeader)
        await pilot_until(pilot, lambda: "builder#1" in str(header.render()))
        assert str(header.render()).startswith(
            "primary › orchestrator#1 › builder#1 · completed · type to follow up · ")
        builder_view = main.view(builder)
        assert builder_view.display and main.query_one("#conversations", ContentSwitcher).current == f"conv-{builder}"
        blocks = [b for b in builder_view.query(ToolCallView) if b.tool_name == "write_file"]
        assert blocks and "app.py" in _text(blocks[0]) and "✓" in _text(blocks[0])
        assert "BUILDER-REPORT" not in _text(view)  # the builder's work stays out of the primary transcript

        await pilot.press("ctrl+o")
        await pilot_until(pilot, lambda: main.current == nodes["orchestrator#1"].id)
        assert "add a /health endpoint with tests" in _text(main.view())
        await pilot.press("ctrl+o")
        await pilot_until(pilot, lambda: main.current == primary)
        assert main.query_one("#conversations", ContentSwitcher).current == f"conv-{primary}"


# -- 3. permission queue ------------------------------------------------------------------------------------


async def test_two_children_asking_at_once_get_one_modal_at_a_time(fake_env, project: Path) -> None:
    spawn = [ToolCall("spawn_subagent", {"profile": "generic", "prompt": f"TASK-{x} please run the echo"})
             for x in "AB"]
    fake_env.script(
        Reply(tool_calls=spawn, when_contains="run both helpers"),
        *[Reply(tool_calls=[ToolCall("bash", {"command": f"echo TASK-{x}-RAN"})], when_contains=f"TASK-{x} please")
          for x in "AB"],
        *[Reply(tool_calls=[_complete(f"DONE-{x}")], when_contains=f"TASK-{x}-RAN") for x in "AB"],
        Reply(text="Both helpers reported back. PRIMARY-END", when_contains="DONE-B"),
    )
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await _type(pilot, "run both helpers")
        # Both children wait for an answer at the same time, yet only one question is on screen.
        await pilot_until(pilot, lambda: sum("needs permission" in line for line in _ledger_lines(main)) == 2)
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, PermissionScreen))
        assert sum(isinstance(s, PermissionScreen) for s in pilot.app.screen_stack) == 1
        runs = await app.surface.store.list_runs(limit=10)
        task_of = {r.label: x for r in runs for x in "AB" if f"TASK-{x} please" in (r.prompt or "")}
        assert len(task_of) == 2 and all(label.startswith("generic#") for label in task_of)

        first = cast(PermissionScreen, pilot.app.screen)
        first_task = task_of[first.agent_label]
        assert first.agent_label in _text(first) and f"echo TASK-{first_task}-RAN" in _text(first)
        await pilot.press("y")

        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, PermissionScreen)
                          and pilot.app.screen is not first)
        second = cast(PermissionScreen, pilot.app.screen)
        assert sum(isinstance(s, PermissionScreen) for s in pilot.app.screen_stack) == 1
        second_task = task_of[second.agent_label]
        assert second_task != first_task
        assert second.agent_label in _text(second) and f"echo TASK-{second_task}-RAN" in _text(second)
        await pilot.press("n")

        await pilot_until(pilot, lambda: "PRIMARY-END" in _text(view))
        assert isinstance(pilot.app.screen, MainScreen)
        allowed = _requests(fake_env, f"TASK-{first_task}-RAN")[-1].text
        denied = _requests(fake_env, f"TASK-{second_task}-RAN")[-1].text
        assert "denied" not in allowed and "denied" in denied


# -- 4. profile hotkeys -------------------------------------------------------------------------------------


def _profile(root: Path, name: str, hotkey: str) -> None:
    agents = root / ".yeetui" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / f"{name}.md").write_text(
        f"---\ndescription: A project helper bound to {hotkey}.\ncapabilities: [subtask]\n"
        f"triggers:\n  hotkey: {hotkey}\n---\nYou are {name}, a project helper.\n")


async def test_profile_hotkeys_built_in_wins_a_collision_and_a_free_key_prefills(fake_env, project: Path) -> None:
    _profile(project, "grabber", "ctrl+s")
    _profile(project, "helper", "f5")
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        warning = "Profile 'grabber': hotkey ctrl+s is already bound to a built-in action; the built-in wins."
        await pilot_until(pilot, lambda: warning in _text(view))
        notices = [n for n in view.query(NoticeView) if "grabber" in str(n.render())]
        assert notices and all(n.level == "warning" for n in notices)

        await pilot.press("ctrl+s")
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, SwitcherScreen))
        await pilot.press("escape")
        await pilot_until(pilot, lambda: isinstance(pilot.app.screen, MainScreen))
        composer = main.query_one(Composer)
        assert composer.text == ""

        await pilot.press("f5")
        await pilot_until(pilot, lambda: composer.text == "@helper ")
        assert composer.has_focus_within
        assert not fake_env.requests  # a hotkey only prefills; nothing is sent


async def test_a_hotkey_collision_is_reported_once(fake_env, project: Path) -> None:
    _profile(project, "grabber", "ctrl+s")
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await pilot_until(pilot, lambda: "grabber" in _text(view))
        await pilot.pause(0.3)
        assert sum("'grabber': hotkey ctrl+s" in str(n.render()) for n in view.query(NoticeView)) == 1


# -- 5. provider error mid-stream ---------------------------------------------------------------------------


async def test_a_stream_that_drops_shows_a_readable_error_and_the_next_prompt_works(
        fake_env, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YEETUI_RETRY__MAX_ATTEMPTS", "1")
    partial = "The flaky part of the answer that made it through before the connection"
    fake_env.script(
        Reply(text=partial + " was cut off here.", fault=Fault.drop(after_chars=len(partial)), chunk_size=8),
        Reply(text="A complete second answer. SECOND-OK"),
    )
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(100, 30)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await _type(pilot, "first question")
        await pilot_until(pilot, lambda: any(n.level == "error" for n in view.query(NoticeView)))
        error = str(next(n for n in view.query(NoticeView) if n.level == "error").render())
        assert "connection to Anthropic" in error and "dropped" in error
        assert "Traceback" not in error and "MARKERKEY" not in error
        assert len(error) < 600 and error.count("\n") < 6, error  # a sentence or two, not a dump
        shown = _text(view)
        assert "The flaky part of the answer" in shown  # what arrived before the drop is kept
        assert len(fake_env.requests) == 1  # no retries left

        await pilot_until(pilot, lambda: not main.controls[main.current].busy)
        await _type(pilot, "second question")
        await pilot_until(pilot, lambda: "SECOND-OK" in _text(view))
        assert isinstance(pilot.app.screen, MainScreen) and main.query_one(Composer).display
        second = fake_env.requests[-1].text
        assert "first question" in second and "second question" in second


# -- 6. resize while streaming ------------------------------------------------------------------------------


async def test_resizing_to_60x20_while_an_answer_streams(fake_env, project: Path) -> None:
    words = " ".join(f"word{i}" for i in range(100))
    fake_env.script(Reply(text="Ready. WARM-OK"),
                    Reply(text=f"# Streaming\n\n{words} STREAM-END", chunk_size=5, chunk_delay=0.02))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await _type(pilot, "warm up")  # the SDK is loaded and connected before the stream that matters
        await pilot_until(pilot, lambda: "WARM-OK" in _text(view))
        await _type(pilot, "stream something long")
        await pilot_until(pilot, lambda: "word3 " in _text(view))
        assert "STREAM-END" not in _text(view)  # still streaming when the terminal shrinks
        await pilot.resize_terminal(60, 20)
        await pilot.pause(0.1)
        await pilot_until(pilot, lambda: "STREAM-END" in _text(view))
        await pilot.pause(0.2)
        assert pilot.app.size == (60, 20) and isinstance(pilot.app.screen, MainScreen)
        composer = main.query_one(Composer)
        region = composer.region
        assert composer.display and region.height >= 1 and region.width > 0
        assert region.right <= 60 and region.bottom <= 20  # fully on screen
        assert not main.query_one(InboxPanel).display  # narrow: the inbox steps aside
        assert view.region.width > 0 and view.region.right <= 60
        await _type(pilot, "/help")  # still usable after the resize
        await pilot_until(pilot, lambda: type(pilot.app.screen).__name__ == "HelpScreen")


# -- runs of other processes ----------------------------------------------------------------------------------


async def test_a_detached_worker_s_run_is_in_the_ledger_and_can_be_steered_and_aborted(
        fake_env, project: Path, tmp_path: Path, settle_clock: SettleClock) -> None:
    """`yeetui agents start` runs in a worker process of its own; the TUI shows it in the ledger (cost, the
    process it lives in), guidance typed in its session reaches it, and alt+x on its row (confirmed) stops it."""
    flag = project / "go-on"  # where the sandboxed command sees it
    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": f"until [ -e {flag} ]; do sleep 0.02; done"})],
              when_contains="WORKER-TASK"),
        Reply(tool_calls=[ToolCall("bash", {"command": "sleep 300"})], when_contains="WORKER-GUIDANCE"),
    )
    started = await asyncio.to_thread(run_yeetui, "agents", "start", "generic", "WORKER-TASK: wait for the flag",
                                      "--yes", "--json", cwd=project)
    assert started.returncode == 0, started.stderr
    worker = json.loads(started.stdout)
    app = YeetuiApp(cwd=project)
    try:
        async with app.run_test(size=(120, 32)) as pilot:
            main = await _main(pilot)
            # Queued until the worker takes a run slot (a moment on a busy machine), then running — in the
            # process the run records: the worker's own (`agents start` printed the one it started, the worker's
            # stand-in when it is forked warm).
            try:
                await pilot_until(pilot, lambda: any(line.startswith("generic#1 running · ") and
                                                f"in process {stored_pid(worker['run_id'])}" in line
                                                for line in _ledger_lines(main)))
            except AssertionError as exc:
                run_id = worker["run_id"]
                raise AssertionError(f"the ledger shows {_ledger_lines(main)}; the run is {stored_status(run_id)} in"
                                     f" process {stored_pid(run_id)}; `agents start` printed {worker}") from exc
            lives_in = stored_pid(worker["run_id"])
            assert lives_in is not None and not gone(lives_in)

            ledger = main.query_one(LedgerPanel)
            ledger.focus()
            await pilot.press("enter")  # its session opens; what is typed there is guidance for it
            await pilot_until(pilot, lambda: main.current == worker["session_id"])
            await _type(pilot, "WORKER-GUIDANCE: stop waiting")
            view = main.view(worker["session_id"])
            await pilot_until(pilot, lambda: f"in process {lives_in}" in _text(view) and "next turn" in _text(view))
            flag.touch()
            await pilot_until(pilot, lambda: bool(_requests(fake_env, "WORKER-GUIDANCE")), timeout=30)

            ledger.focus()
            await pilot.press("alt+x")
            await answer(pilot, settle_clock, yes=True)
            await pilot_until(pilot, lambda: any(line.startswith("generic#1 cancelled")
                                                 for line in _ledger_lines(main)), timeout=30)
        assert _process_gone(worker["pid"]) and _process_gone(lives_in)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker["pid"], signal.SIGKILL)


def _process_gone(pid: int) -> bool:
    for _ in range(200):
        if gone(pid):
            return True
        time.sleep(0.05)
    return False


async def test_a_second_cancel_or_cancel_bang_stops_a_subagent_now(fake_env, project: Path,
                                                                  settle_clock: SettleClock) -> None:
    """`/cancel` asks the subagent to wrap up (it may take its time); `/cancel` again stops it at once, as
    does `/cancel!`. Each asks first."""
    fake_env.script(Reply(text="pondering " * 600, chunk_size=30, chunk_delay=1.0, when_contains="SLOW-Q"),
                    Reply(text="pondering " * 600, chunk_size=30, chunk_delay=1.0, when_contains="SLOWER-Q"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await _type(pilot, "/oracle SLOW-Q why?")
        await pilot_until(pilot, lambda: any(line.startswith("oracle#1 running") for line in _ledger_lines(main)))
        await _type(pilot, "/cancel oracle#1")
        await answer(pilot, settle_clock, yes=True)
        await pilot_until(pilot, lambda: "Asked oracle#1 to wrap up" in _text(view))
        assert any(line.startswith("oracle#1 running") for line in _ledger_lines(main))
        await _type(pilot, "/cancel oracle#1")
        await answer(pilot, settle_clock, yes=True)
        await pilot_until(pilot, lambda: "Stopped oracle#1." in _text(view))
        await pilot_until(pilot, lambda: any(line.startswith("oracle#1 cancelled") for line in _ledger_lines(main)))

        await _type(pilot, "/oracle SLOWER-Q why not?")
        await pilot_until(pilot, lambda: any(line.startswith("oracle#2 running") for line in _ledger_lines(main)))
        await _type(pilot, "/cancel! oracle#2")
        await answer(pilot, settle_clock, yes=True)
        await pilot_until(pilot, lambda: any(line.startswith("oracle#2 cancelled") for line in _ledger_lines(main)))


async def test_cancelling_a_queued_subagent_takes_it_out_of_the_queue_and_the_ledger(
        fake_env, project: Path, settle_clock: SettleClock) -> None:
    """Issue 24, item 10: `oracle#2 queued` stayed in the ledger after its /cancel. The question says what a
    cancel does to a run that has not started; the row reads cancelled, then goes like a finished one."""
    fake_env.script(Reply(text="pondering " * 600, chunk_size=30, chunk_delay=1.0, when_contains="SLOW-Q"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        main.surface.runtime.spawner.slots.limit = 1  # the second oracle waits for the first one's slot
        main.ledger.linger = 0.5  # finished rows go sooner than the 10 s a user gets to read them
        panel, drawn_rows = main.query_one(LedgerPanel), []
        update_row = panel.update_row

        def recording(run_id: str, row: Any) -> None:  # every row the ledger is given, however briefly shown
            if row is not None:
                drawn_rows.append(str(row_content(row)))
            update_row(run_id, row)

        panel.update_row = recording  # type: ignore[method-assign]
        view = main.query_one(ConversationView)
        await _type(pilot, "/oracle SLOW-Q why?")
        await pilot_until(pilot, lambda: any(line.startswith("oracle#1 running") for line in _ledger_lines(main)))
        await _type(pilot, "/oracle QUEUED-Q and this?")
        await pilot_until(pilot, lambda: any(line.startswith("oracle#2 queued") for line in _ledger_lines(main)))
        await _type(pilot, "/cancel oracle#2")
        await pilot_until(pilot, lambda: "has not started" in _text(pilot.app.screen))
        await answer(pilot, settle_clock, yes=True)
        await pilot_until(pilot, lambda: "Cancelled oracle#2 before it started." in _text(view))
        # The row read "cancelled" (for the linger, which a loaded machine's polling may miss), then went.
        await pilot_until(pilot, lambda: any(line.startswith("oracle#2 cancelled") for line in drawn_rows))
        await pilot_until(pilot, lambda: not any(line.startswith("oracle#2") for line in _ledger_lines(main)))
        assert any(line.startswith("oracle#1 running") for line in _ledger_lines(main))


async def test_an_openai_only_user_gets_oracle_and_pair_on_openai_models(fake_env, project: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """No Anthropic key, YEETUI_MODEL=openai/…: /oracle runs on OpenAI's strong model and F2's pair on its fast
    one (the profiles ask for tiers), end to end through litellm and the fake server's OpenAI API."""
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("YEETUI_MODEL", "openai/gpt-5")
    monkeypatch.setenv("YEETUI_WATCHER__DEBOUNCE", "0.05")
    monkeypatch.setenv("YEETUI_WATCHER__MIN_INTERVAL", "0")
    fake_env.script(
        Reply(tool_calls=[_complete("ORACLE-ON-OPENAI")], when_contains="WHY-Q"),
        Reply(tool_calls=[_complete("", artifacts={"severity": "none"})], when_contains=PAIR, repeat=True),
        Reply(text="primary answer", when_contains=PRIMARY, repeat=True),
    )
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 32)) as pilot:
        main = await _main(pilot)
        view = main.query_one(ConversationView)
        await _type(pilot, "/oracle WHY-Q does it fail?")
        await pilot_until(pilot, lambda: "ORACLE-ON-OPENAI" in _text(view), timeout=30)
        (oracle_request,) = _requests(fake_env, "WHY-Q")[:1]
        assert oracle_request.api == "openai" and oracle_request.body["model"] == "gpt-5.1"
        await pilot.press("f2")
        await pilot_until(pilot, lambda: any(line.startswith("pair#1 watching") for line in _ledger_lines(main)))
        await _type(pilot, "hello")
        await pilot_until(pilot, lambda: bool(_requests(fake_env, PAIR)), timeout=30)
        assert _requests(fake_env, PAIR)[0].body["model"] == "gpt-5-mini"
        assert not [r for r in fake_env.requests if r.api == "anthropic"]
