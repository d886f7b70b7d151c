"""Headless progress: the run id at once, then subagents, tools and retries, one timed line each."""

from __future__ import annotations

import asyncio
import io
from datetime import UTC, datetime

from yeetui import events as ev
from yeetui.bus import Bus
from yeetui.cli.agents import show_ending
from yeetui.cli.progress import HeadlessProgress, PaneView
from yeetui.events import RunStatus
from yeetui.messages import Usage
from yeetui.store.records import RunRecord
from yeetui.subagents.ledger import Ledger, format_row


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_lines_say_what_happens_as_it_happens() -> None:
    bus, out, clock = Bus(), io.StringIO(), Clock()
    HeadlessProgress(bus, out=out, clock=clock)
    bus.publish(ev.RunRegistered("a" * 32, "s1", None, "orchestrator", "orchestrator#1", "anthropic/x",
                                 RunStatus.RUNNING))
    clock.now += 3
    bus.publish(ev.RunRegistered("b" * 32, "s2", "s1", "planner", "planner#1", "anthropic/x", RunStatus.RUNNING))
    bus.publish(ev.ToolCallStarted("b" * 32, "s2", "c1", "read_file", {"path": "a.py"}, activity="reading a.py"))
    bus.publish(ev.ProviderRetrying("b" * 32, "s2", 1, 4.0, "Anthropic is overloaded (529)", max_attempts=5))
    clock.now += 62
    bus.publish(ev.RunStatusChanged("b" * 32, "s2", RunStatus.COMPLETED))
    assert out.getvalue().splitlines() == [
        "[0:00] run aaaaaaaaaaaa · orchestrator#1 on anthropic/x",
        "[0:03] planner#1 started",
        "[0:03] planner#1: reading a.py",
        "[0:03] planner#1: retrying (2/5) in 4 s — Anthropic is overloaded (529)",
        "[1:05] planner#1 done after 62 s",
    ]


def test_a_retry_shows_in_the_ledger_row() -> None:
    bus = Bus()
    ledger = Ledger(bus)
    bus.publish(ev.RunRegistered("r1", "s1", None, "oracle", "oracle#1", "anthropic/claude-opus-4-5",
                                 RunStatus.RUNNING))
    bus.publish(ev.ProviderRetrying("r1", "s1", 2, 8.0, "Anthropic is overloaded (529)", max_attempts=5))
    row = ledger.get("r1")
    assert row is not None
    assert format_row(row).endswith("retrying (3/5) in 8 s — Anthropic is overloaded (529)")


def test_progress_says_where_a_pane_child_runs_and_other_notices() -> None:
    """Issue 24, item 6: `yeetui run` says where a pane child runs (and what else the run says to the user)."""
    bus, out = Bus(), io.StringIO()
    HeadlessProgress(bus, out=out, clock=Clock())
    bus.publish(ev.Notice("info", "oracle#2 runs in tmux window 3: tmux -L yeetui-x attach -t yeetui:3", "s1"))
    bus.publish(ev.Notice("warning", "builder#1: could not commit its work\x1b[2J in /w", "s1"))
    assert out.getvalue().splitlines() == [
        "[0:00] oracle#2 runs in tmux window 3: tmux -L yeetui-x attach -t yeetui:3",
        "[0:00] warning: builder#1: could not commit its work in /w",
    ]


async def test_a_panes_window_says_when_its_permission_question_was_answered() -> None:
    """The window said "waiting for the answer in yeetui"; once the answer is there it says what it was, so the
    window no longer reads as waiting."""
    bus, out = Bus(), io.StringIO()
    PaneView(bus, "r1", out=out)
    reply: asyncio.Future[ev.PermissionAnswer] = asyncio.get_running_loop().create_future()
    bus.publish(ev.PermissionRequested("r1", "s1", "builder#1", "bash", "make deploy", {}, reply))
    assert "waiting for the answer in yeetui" in out.getvalue()
    reply.set_result("allow_once")
    await asyncio.sleep(0)  # done callbacks run on the next loop iteration
    assert out.getvalue().splitlines()[-1].endswith("builder#1: bash allowed once")


def test_a_panes_window_ends_with_the_runs_answer() -> None:
    """A `complete` call's output is never streamed as text: the window prints it when the run ends."""
    out = io.StringIO()
    run = RunRecord(id="r1", session_id="s1", parent_run_id=None, profile="oracle", model="anthropic/x",
                    prompt="why?", status=RunStatus.COMPLETED, usage=Usage(), cost=None, error=None,
                    label="oracle#1", workflow=None, worktree=None, created_at=datetime.now(UTC), started_at=None,
                    finished_at=None, pid=None, options={},
                    result={"output": "Because \x1b[31mthe cache\x1b[0m is stale."})
    show_ending(run, out)
    text = out.getvalue()
    assert "oracle#1's answer:\nBecause the cache is stale." in text
    assert "\x1b" not in text and "oracle#1 completed." in text


async def test_a_pane_nobody_follows_never_says_it_waits_for_an_answer() -> None:
    bus, out = Bus(), io.StringIO()
    PaneView(bus, "r1", out=out, asked_in_yeetui=False)
    reply: asyncio.Future[ev.PermissionAnswer] = asyncio.get_running_loop().create_future()
    bus.publish(ev.PermissionRequested("r1", "s1", "generic#2", "bash", "touch x", {}, reply))
    reply.set_result("unattended")
    await asyncio.sleep(0)
    lines = out.getvalue().splitlines()
    assert "waiting" not in out.getvalue() and lines[0].endswith("nobody can answer here")
    assert lines[-1].endswith("generic#2: bash refused: nobody could be asked")
