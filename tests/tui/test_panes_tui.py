"""A subagent in a tmux pane, from the TUI: `/oracle --tmux` starts it in yeetui's tmux server, the ledger
shows it, `/attach` says how to watch it, and its answer is announced in the conversation once it ends."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.processes import gone
from tests.tui.deliberate import SettleClock, answer
from tests.tui.test_app import _main, _text, _type
from tests.waiting import pilot_until
from yeetui import paths
from yeetui.events import RunStatus
from yeetui.system.tmux import TmuxServer, server_name
from yeetui.tui.app import YeetuiApp
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.embedded_pane import EmbeddedPane
from yeetui.tui.widgets.inbox import InboxPanel
from yeetui.tui.widgets.ledger import LedgerPanel

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _ledger_lines(main) -> list[str]:
    ledger = main.query_one(LedgerPanel)
    return [str(ledger.get_option_at_index(i).prompt) for i in range(ledger.option_count)]


async def test_oracle_in_a_pane_from_the_tui(fake_env, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TMUX", "DISPLAY", "WAYLAND_DISPLAY", "TERMINAL"):
        monkeypatch.delenv(name, raising=False)
    fake_env.script(
        Reply(tool_calls=[ToolCall("grep", {"pattern": "x", "path": "."})], when_contains="You are the oracle"),
        Reply(tool_calls=[ToolCall("complete", {"output": "PANE-TUI-ANSWER"})], when_contains="You are the oracle"),
    )
    app = YeetuiApp(cwd=project)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            main = await _main(pilot)
            view = main.query_one(ConversationView)
            await _type(pilot, "/oracle --tmux PANE-TUI-Q: why?")
            await pilot_until(pilot, lambda: "runs in tmux window oracle-1" in _text(view), timeout=30)
            assert "attach-session" in _text(view) or "attach -t" in _text(view)
            await pilot_until(pilot, lambda: "PANE-TUI-ANSWER" in _text(view), timeout=60)
            assert _text(view).count("PANE-TUI-ANSWER") == 1
            inbox = main.query_one(InboxPanel)  # the worker recorded the item; the inbox on screen shows it too
            await pilot_until(pilot, lambda: any((i.data or {}).get("label") == "oracle#1"
                                                 for i in inbox.items.values()), timeout=30)
            assert any(line.startswith("oracle#1") for line in _ledger_lines(main))
            await _type(pilot, "/attach oracle#1")
            await pilot_until(pilot, lambda: "Watch oracle#1 from another terminal: tmux -L" in _text(view), timeout=30)
    finally:
        await TmuxServer(server_name(paths.data_dir())).kill_server()


async def test_a_pane_childs_tokens_stream_into_its_session_view(fake_env, project: Path) -> None:
    """The worker relays its events: opened in the TUI, the pane child's session shows its answer growing
    while the run is still running (not read back from the store after it ended)."""
    words = " ".join(f"LIVE{n}" for n in range(300))
    fake_env.script(Reply(text=words, chunk_size=12, chunk_delay=0.05, when_contains="You are the oracle",
                          tool_calls=[ToolCall("complete", {"output": "streamed"})]))
    app = YeetuiApp(cwd=project)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            main = await _main(pilot)
            view = main.query_one(ConversationView)
            await _type(pilot, "/oracle --tmux STREAM-Q: talk")
            await pilot_until(pilot, lambda: "runs in tmux window oracle-1" in _text(view), timeout=30)
            store = app.surface.store
            runs = [r for r in await store.list_runs() if r.profile == "oracle"]
            await main.open_session(runs[0].session_id)
            await pilot_until(pilot, lambda: "LIVE20" in _text(main.view()), timeout=60)
            run = await store.get_run(runs[0].id)
            assert run is not None and not run.status.is_final, "the text came only after the run ended"
    finally:
        await TmuxServer(server_name(paths.data_dir())).kill_server()


async def test_embed_shows_a_pane_child_inside_the_tui(fake_env, project: Path) -> None:
    """`/embed oracle#1` shows the child's tmux window under the conversation, live; ctrl+] gives the keys
    back to the composer; `/embed` alone closes it (its tmux client is gone)."""
    words = " ".join(f"EMB{n}" for n in range(400))
    fake_env.script(Reply(text=words, chunk_size=12, chunk_delay=0.05, when_contains="You are the oracle",
                          tool_calls=[ToolCall("complete", {"output": "streamed"})]))
    app = YeetuiApp(cwd=project)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            main = await _main(pilot)
            view = main.query_one(ConversationView)
            await _type(pilot, "/oracle --tmux EMBED-Q: talk")
            await pilot_until(pilot, lambda: "runs in tmux window oracle-1" in _text(view), timeout=30)
            await _type(pilot, "/embed oracle#1")
            await pilot_until(pilot, lambda: bool(main.query(EmbeddedPane)), timeout=30)
            pane = main.query_one(EmbeddedPane)
            assert pilot.app.focused is pane
            await pilot_until(pilot, lambda: "EMB30" in pane.text(), timeout=60)
            await pilot.press("ctrl+right_square_bracket")
            await pilot_until(pilot, lambda: pilot.app.focused is main.composer.input)
            client = pane.client
            assert client is not None and client.process is not None
            pid = client.process.pid
            await _type(pilot, "/embed")
            await pilot_until(pilot, lambda: not main.query(EmbeddedPane))
            assert gone(pid)
    finally:
        await TmuxServer(server_name(paths.data_dir())).kill_server()


async def test_a_pane_childs_question_opens_the_permission_dialog(fake_env, project: Path) -> None:
    """The worker in the pane has no dialog: its `ask` comes to the TUI's own, and `y` lets the command run."""
    from yeetui.tui.screens.permission import PermissionScreen

    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "echo PANE-TUI-RAN"})], when_contains="PANE-TUI-ASK"),
        Reply(tool_calls=[ToolCall("complete", {"output": "PANE-TUI-DONE"})], when_contains="PANE-TUI-RAN"),
    )
    app = YeetuiApp(cwd=project)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            main = await _main(pilot)
            view = main.query_one(ConversationView)
            await _type(pilot, "@generic --tmux PANE-TUI-ASK: run it")
            await pilot_until(pilot, lambda: isinstance(pilot.app.screen, PermissionScreen), timeout=60)
            await pilot_until(pilot, lambda: "generic#1" in _text(pilot.app.screen), timeout=30)  # composed, drawn
            shown = _text(pilot.app.screen)
            assert "generic#1" in shown and "echo PANE-TUI-RAN" in shown
            [run] = [r for r in await app.surface.store.list_runs() if r.label == "generic#1"]
            assert run.options["mode"] == "tmux" and run.pid != os.getpid()  # asked by the worker in the pane
            await pilot.press("y")
            await pilot_until(pilot, lambda: "PANE-TUI-DONE" in _text(view), timeout=60)
    finally:
        await TmuxServer(server_name(paths.data_dir())).kill_server()


async def test_cancel_finds_a_pane_child_by_its_label(fake_env, project: Path, settle_clock: SettleClock) -> None:
    """`/cancel oracle#1` reaches a child another yeetui process runs in a tmux pane: the first asks it to wrap
    up (through the store, as `yeetui agents cancel` does), the second stops it now, and its run ends
    cancelled; `/cancel` alone finds it too, as this session's running child."""
    fake_env.script(Reply(text="pondering " * 2000, chunk_size=30, chunk_delay=1.0, when_contains="PANE-SLOW-Q",
                          repeat=True))
    app = YeetuiApp(cwd=project)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            main = await _main(pilot)
            view = main.query_one(ConversationView)
            store = app.surface.store
            await _type(pilot, "/oracle --tmux PANE-SLOW-Q: think")
            await pilot_until(pilot, lambda: any(line.startswith("oracle#1 running") for line in _ledger_lines(main)),
                         timeout=60)
            await _type(pilot, "/cancel oracle#1")
            await answer(pilot, settle_clock, yes=True)
            await pilot_until(pilot, lambda: "Asked oracle#1 to wrap up" in _text(view), timeout=30)
            [run] = [r for r in await store.list_runs() if r.label == "oracle#1"]
            assert run.pid != os.getpid() and not run.status.is_final  # run by the worker in its pane
            await _type(pilot, "/cancel")
            await answer(pilot, settle_clock, yes=True)
            await pilot_until(pilot, lambda: "Stopped oracle#1." in _text(view), timeout=30)
            await pilot_until(pilot, lambda: any(line.startswith("oracle#1 cancelled") for line in _ledger_lines(main)),
                         timeout=60)
            ended = await store.get_run(run.id)
            assert ended is not None and ended.status == RunStatus.CANCELLED
    finally:
        await TmuxServer(server_name(paths.data_dir())).kill_server()
