"""The ledger's fast path for streaming deltas: a delta that changes nothing is settled without a new row,
yet every real change of activity still shows."""

from __future__ import annotations

from yeetui import events as ev
from yeetui.bus import Bus
from yeetui.events import RunStatus
from yeetui.subagents.ledger import Ledger

RUN, SESSION = "run-1", "sess-1"


def _setup() -> tuple[Bus, Ledger, list[ev.LedgerChanged]]:
    bus = Bus()
    changes: list[ev.LedgerChanged] = []
    bus.add_listener(lambda e: changes.append(e) if isinstance(e, ev.LedgerChanged) else None)
    ledger = Ledger(bus, linger=10.0, clock=lambda: 1000.0)
    bus.publish(ev.RunRegistered(RUN, SESSION, "parent-1", "oracle", "oracle#4", "anthropic/claude-sonnet-4-6",
                                 RunStatus.RUNNING))
    return bus, ledger, changes


def test_activity_follows_thinking_tools_and_answers_through_many_deltas() -> None:
    bus, ledger, changes = _setup()
    start = len(changes)
    for _ in range(30):
        bus.publish(ev.ThinkingDelta(RUN, SESSION, "hm"))
    for _ in range(30):
        bus.publish(ev.TextDelta(RUN, SESSION, "word "))
    bus.publish(ev.ToolCallStarted(RUN, SESSION, "call-1", "read_file", {"path": "a.py"}, "reading a.py"))
    for _ in range(30):
        bus.publish(ev.TextDelta(RUN, SESSION, "more "))
    bus.publish(ev.ThinkingDelta(RUN, SESSION, "again"))
    assert [c.row.activity for c in changes[start:]] == ["thinking", "answering", "reading a.py", "answering",
                                                        "thinking"]
    assert ledger.get(RUN).activity == "thinking"


def test_deltas_after_the_end_or_for_unknown_runs_change_nothing() -> None:
    bus, ledger, changes = _setup()
    bus.publish(ev.RunStatusChanged(RUN, SESSION, RunStatus.COMPLETED, ""))
    final = ledger.get(RUN)
    count = len(changes)
    bus.publish(ev.TextDelta(RUN, SESSION, "late"))
    bus.publish(ev.ThinkingDelta(RUN, SESSION, "late"))
    bus.publish(ev.TextDelta("never-registered", SESSION, "stray"))
    assert ledger.get(RUN) == final and final.status == RunStatus.COMPLETED
    assert ledger.get("never-registered") is None
    assert len(changes) == count


def test_a_permission_wait_is_not_undone_by_a_delta_but_resumes_after_it() -> None:
    bus, ledger, _ = _setup()
    bus.publish(ev.TextDelta(RUN, SESSION, "x"))
    bus.publish(ev.RunStatusChanged(RUN, SESSION, RunStatus.WAITING_PERMISSION, ""))
    assert ledger.get(RUN).activity == "waiting for permission"
    bus.publish(ev.RunStatusChanged(RUN, SESSION, RunStatus.RUNNING, ""))
    assert ledger.get(RUN).activity == "answering"  # restored from before the wait
    bus.publish(ev.TextDelta(RUN, SESSION, "y"))
    assert ledger.get(RUN).activity == "answering"
