"""Headless progress: the run id at once, then subagents, tools and retries, one timed line each."""

from __future__ import annotations

import io

from yeetui import events as ev
from yeetui.bus import Bus
from yeetui.cli.progress import HeadlessProgress
from yeetui.events import RunStatus
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
