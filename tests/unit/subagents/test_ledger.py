"""The status ledger: rows from bus events, activity text, linger, watchers, and a real run."""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import FrozenInstanceError, dataclass
from pathlib import Path
from typing import Literal

import pytest

from tests.fakellm import Reply, ToolCall
from tests.waiting import until_async
from yeetui import events as ev
from yeetui.bus import Bus
from yeetui.events import RunStatus
from yeetui.messages import Usage
from yeetui.runtime import Runtime
from yeetui.subagents.ledger import Ledger, LedgerRow, format_row, tree_order
from yeetui.subagents.spawner import SpawnRequest
from yeetui.text import tokens_text

RUN, SESSION = "run-1", "sess-1"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def bus() -> Bus:
    return Bus()


@pytest.fixture
def changes(bus: Bus) -> list[ev.LedgerChanged]:
    seen: list[ev.LedgerChanged] = []
    bus.add_listener(lambda e: seen.append(e) if isinstance(e, ev.LedgerChanged) else None)
    return seen


@pytest.fixture
def ledger(bus: Bus, clock: FakeClock) -> Ledger:
    return Ledger(bus, linger=10.0, clock=clock)


def _register(bus: Bus, run_id: str = RUN, session_id: str = SESSION, *, label: str = "oracle#4",
              status: RunStatus = RunStatus.QUEUED, parent: str | None = "parent-1") -> None:
    bus.publish(ev.RunRegistered(run_id, session_id, parent, "oracle", label, "anthropic/claude-sonnet-4-6",
                                 status))


def _status(bus: Bus, status: RunStatus, run_id: str = RUN, reason: str = "") -> None:
    bus.publish(ev.RunStatusChanged(run_id, SESSION, status, reason))


def _registry():
    from yeetui.subagents.tools import agent_tools
    from yeetui.tools.ask_user import AskUserTool
    from yeetui.tools.registry import ToolRegistry, builtin_tools

    return ToolRegistry([*builtin_tools(), AskUserTool(), *agent_tools()])


def _tool(bus: Bus, name: str, run_id: str = RUN, **arguments) -> None:
    """A tool call as the executor publishes it: the activity text comes from the tool."""
    bus.publish(ev.ToolCallStarted(run_id, SESSION, "call-1", name, arguments, _registry().activity(name, arguments)))


def test_queued_run_gets_a_row_and_a_repeated_status_publishes_nothing(bus, ledger, changes) -> None:
    _register(bus)
    _status(bus, RunStatus.QUEUED)
    assert len(changes) == 1
    row = changes[0].row
    assert changes[0].run_id == RUN and row is ledger.get(RUN)
    assert (row.label, row.profile, row.model, row.status, row.activity) == (
        "oracle#4", "oracle", "claude-sonnet-4-6", RunStatus.QUEUED, "queued")
    assert row.parent_session_id == "parent-1" and row.started is None and row.elapsed == 0.0
    assert format_row(row) == "oracle#4 queued · claude-sonnet-4-6"


def test_running_row_shows_elapsed_cost_and_activity(bus, ledger, changes, clock) -> None:
    _register(bus)
    clock.now += 5  # queue time does not count
    _status(bus, RunStatus.RUNNING)
    _tool(bus, "read_file", path="src/auth.py")
    bus.publish(ev.UsageUpdated(RUN, SESSION, Usage(input_tokens=100, output_tokens=10), 0.0312))
    clock.now += 42
    row = ledger.get(RUN)
    assert row is not None and row.status == RunStatus.RUNNING
    assert row.elapsed == 42
    assert format_row(row) == "oracle#4 running · claude-sonnet-4-6 · 0:42 · $0.03 · 110 tok · reading src/auth.py"
    assert [c.row.activity for c in changes] == ["queued", "", "reading src/auth.py", "reading src/auth.py"]
    assert changes[-1].row.cost == pytest.approx(0.0312)


def test_an_external_agents_row_names_the_model_it_says_it_runs(bus, ledger) -> None:
    """The model yeetui chose is cleared for an external agent (it runs its own), then the one it says."""
    _register(bus, status=RunStatus.RUNNING)
    bus.publish(ev.RunModelChanged(RUN, SESSION, ""))
    assert format_row(ledger.get(RUN)).startswith("oracle#4 running · 0:00")
    bus.publish(ev.RunModelChanged(RUN, SESSION, "anthropic/claude-opus-5-5"))
    assert format_row(ledger.get(RUN)).startswith("oracle#4 running · claude-opus-5-5 · 0:00")


def test_unknown_cost_shows_a_question_mark(bus, ledger) -> None:
    _register(bus, status=RunStatus.RUNNING)
    bus.publish(ev.UsageUpdated(RUN, SESSION, Usage(input_tokens=1), None))
    assert "· $? ·" in format_row(ledger.get(RUN)) + " ·"


def test_deltas_flip_the_activity_once_not_per_delta(bus, ledger, changes) -> None:
    _register(bus, status=RunStatus.RUNNING)
    before = len(changes)
    for _ in range(20):
        bus.publish(ev.ThinkingDelta(RUN, SESSION, "hm"))
    for _ in range(50):
        bus.publish(ev.TextDelta(RUN, SESSION, "word "))
    assert [c.row.activity for c in changes[before:]] == ["thinking", "answering"]
    _tool(bus, "bash", command="pytest -q")
    _tool(bus, "bash", command="pytest -q")  # the same activity again: nothing changed
    assert changes[-1].row.activity == "running pytest -q"
    assert len(changes) == before + 3


@pytest.mark.parametrize(("name", "arguments", "text"), [
    ("read_file", {"path": "src/auth.py"}, "reading src/auth.py"),
    ("list_dir", {"path": "src/"}, "listing src/"),
    ("list_dir", {}, "listing ."),
    ("grep", {"pattern": "foo"}, 'searching "foo"'),
    ("glob", {"pattern": "**/*.py"}, "globbing **/*.py"),
    ("bash", {"command": "pytest -q"}, "running pytest -q"),
    ("bash", {"command": "python -m pytest tests/unit/test_something_long.py -x"},
     "running python -m pytest tests/unit/test_somethi…"),
    ("bash", {"command": "echo a &&\n   echo b"}, "running echo a && echo b"),
    ("write_file", {"path": "x.py", "content": "..."}, "writing x.py"),
    ("edit_file", {"path": "x.py"}, "editing x.py"),
    ("spawn_subagent", {"profile": "oracle", "prompt": "why"}, "spawning oracle"),
    ("request_review", {}, "spawning reviewer"),
    ("complete", {"output": "done"}, "finishing"),
    ("mystery_tool", {}, "calling mystery_tool"),
])
def test_tool_activity_text(name: str, arguments: dict, text: str) -> None:
    """Each tool words its own activity; the ledger shows what the executor publishes."""
    assert _registry().activity(name, arguments) == text


def test_permission_wait_and_back_to_the_tool(bus, ledger) -> None:
    _register(bus, status=RunStatus.RUNNING)
    _tool(bus, "bash", command="rm -rf build")
    loop = asyncio.new_event_loop()
    try:
        reply = loop.create_future()
        bus.publish(ev.PermissionRequested(RUN, SESSION, "oracle#4", "bash", "rm -rf build", {}, reply))
    finally:
        loop.close()
    assert ledger.get(RUN).activity == "waiting for permission"
    _status(bus, RunStatus.WAITING_PERMISSION)
    row = ledger.get(RUN)
    assert format_row(row).startswith("oracle#4 needs permission · ")
    assert row.activity == "waiting for permission"
    _status(bus, RunStatus.RUNNING)
    assert ledger.get(RUN).activity == "running rm -rf build"


def test_finished_rows_linger_then_disappear_for_good(bus, ledger, changes, clock) -> None:
    _register(bus, status=RunStatus.RUNNING)
    clock.now += 30
    _status(bus, RunStatus.FAILED, reason="timed out waiting for the model")
    row = ledger.get(RUN)
    assert row.status == RunStatus.FAILED and row.ended == clock.now
    clock.now += 100
    assert row.elapsed == 30  # frozen at the end
    assert format_row(row) == "oracle#4 failed · claude-sonnet-4-6 · 0:30 · $0.00 · timed out waiting for the model"

    ledger.prune()
    assert ledger.rows() == []
    assert changes[-1] == ev.LedgerChanged(RUN, None)
    count = len(changes)
    _tool(bus, "read_file", path="late.txt")
    _status(bus, RunStatus.RUNNING)  # a late event never brings a removed run back
    assert ledger.rows() == [] and len(changes) == count


def test_linger_is_measured_on_the_clock(bus, clock) -> None:
    ledger = Ledger(bus, linger=3.0, clock=clock)
    _register(bus, status=RunStatus.RUNNING)
    _status(bus, RunStatus.COMPLETED)
    clock.now += 2.9
    assert [r.run_id for r in ledger.rows()] == [RUN]
    clock.now += 0.2
    assert ledger.rows() == []


def test_rows_are_sorted_by_start(bus, ledger, clock) -> None:
    _register(bus, "a", "sa", label="oracle#1")
    clock.now += 1
    _register(bus, "b", "sb", label="oracle#2", status=RunStatus.RUNNING)
    clock.now += 1
    _status(bus, RunStatus.RUNNING, run_id="a")  # a starts after b
    clock.now += 1
    _register(bus, "c", "sc", label="oracle#3")  # still queued: ordered by when it appeared
    assert [r.label for r in ledger.rows()] == ["oracle#2", "oracle#1", "oracle#3"]


def test_a_status_for_an_unregistered_live_run_makes_a_placeholder_row(bus, ledger) -> None:
    _status(bus, RunStatus.RUNNING, run_id="abcdef123456")
    (row,) = ledger.rows()
    assert row.label == "abcdef12" and row.status == RunStatus.RUNNING
    _status(bus, RunStatus.COMPLETED, run_id="never-seen")
    assert len(ledger.rows()) == 1


def test_row_is_frozen_and_json_safe(bus, ledger) -> None:
    _register(bus, status=RunStatus.RUNNING)
    row = ledger.get(RUN)
    assert isinstance(row, LedgerRow)
    with pytest.raises(FrozenInstanceError):
        row.label = "other"  # type: ignore[misc]
    data = json.loads(json.dumps(row.to_json()))
    assert data["status"] == "running" and data["label"] == "oracle#4" and "clock" not in data
    assert json.loads(json.dumps(ev.event_to_json(ev.LedgerChanged(RUN, row))))["row"]["run_id"] == RUN


def test_watcher_row_between_runs(bus, ledger, changes) -> None:
    ledger.watching("wsess", label="pair#2", profile="pair", model="anthropic/claude-sonnet-4-6")
    (row,) = ledger.rows()
    assert format_row(row) == "pair#2 watching · claude-sonnet-4-6"
    bus.publish(ev.RunRegistered("w-run", "wsess", None, "pair", "pair#2", "anthropic/claude-sonnet-4-6",
                                 RunStatus.RUNNING))
    assert [(r.run_id, r.status) for r in ledger.rows()] == [("w-run", RunStatus.RUNNING)]
    bus.publish(ev.RunStatusChanged("w-run", "wsess", RunStatus.COMPLETED))
    assert [r.status for r in ledger.rows()] == ["watching"]  # straight back, no linger
    ledger.stopped_watching("wsess")
    assert ledger.rows() == []
    assert [c.row is None for c in changes] == [False, True, False, True, False, True]


def test_watcher_changed_event_is_understood_when_events_defines_it(bus, ledger, changes, monkeypatch) -> None:
    @dataclass(frozen=True)
    class WatcherChanged:
        session_id: str
        watched_session_id: str
        label: str
        watching: bool
        interjections: int = 0
        model: str = "anthropic/claude-haiku-4-5"
        kind: Literal["watcher"] = "watcher"

    monkeypatch.setattr(ev, "WatcherChanged", WatcherChanged, raising=False)
    bus.publish(WatcherChanged("wsess", "primary", "pair#7", True))
    (row,) = ledger.rows()
    assert format_row(row) == "pair#7 watching · claude-haiku-4-5" and row.parent_session_id == "primary"
    count = len(changes)
    bus.publish(WatcherChanged("wsess", "primary", "pair#7", True, interjections=3))  # nothing the ledger shows
    assert len(changes) == count
    bus.publish(WatcherChanged("wsess", "primary", "pair#7", False))
    assert ledger.rows() == [] and len(changes) == count + 1


def test_the_watcher_event_of_events_py_when_there_is_one(bus, ledger) -> None:
    watcher_changed = getattr(ev, "WatcherChanged", None)
    if watcher_changed is None:
        pytest.skip("events.py defines no WatcherChanged yet")

    def publish(state: str) -> None:
        bus.publish(watcher_changed(session_id="wsess", watched_session_id="primary", label="pair#2", state=state,
                                    profile="pair", model="anthropic/claude-sonnet-4-6"))

    publish("watching")
    assert [format_row(r) for r in ledger.rows()] == ["pair#2 watching · claude-sonnet-4-6"]
    publish("running")
    bus.publish(ev.RunRegistered("w-run", "wsess", "primary", "pair", "pair#2", "anthropic/claude-sonnet-4-6",
                                 RunStatus.QUEUED))
    assert [r.run_id for r in ledger.rows()] == ["w-run"]
    bus.publish(ev.RunStatusChanged("w-run", "wsess", RunStatus.COMPLETED))
    publish("watching")
    assert [r.status for r in ledger.rows()] == ["watching"]
    publish("off")
    assert ledger.rows() == []


async def test_rows_disappear_by_timer_without_further_events(bus, changes) -> None:
    ledger = Ledger(bus, linger=0.1)
    _register(bus, status=RunStatus.RUNNING)
    _status(bus, RunStatus.CANCELLED, reason="cancelled")
    assert ledger.get(RUN).activity == ""  # the reason only repeats the status
    async def gone() -> bool:
        return ledger.rows() == []

    await until_async("the row to leave", gone)  # its linger's timer, with nothing else happening
    assert changes[-1].row is None
    ledger.close()


@pytest.fixture
def project_dir(project_dir: Path) -> Path:
    (project_dir / "notes.txt").write_text("the flake is a race\n")
    return project_dir


async def test_a_real_run_shows_up_and_goes(runtime: Runtime, scripted) -> None:
    ledger = Ledger(runtime.bus, linger=0.2)
    seen: list[str] = []
    rows: list[LedgerRow | None] = []
    gone = asyncio.Event()

    def collect(event: ev.Event) -> None:
        if isinstance(event, ev.LedgerChanged):
            rows.append(event.row)
            seen.append(format_row(event.row) if event.row else "<gone>")
            if event.row is None:
                gone.set()

    runtime.bus.add_listener(collect)
    scripted.script(
        Reply(text="Let me look.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})],
              when_contains="LEDGER-Q", chunk_delay=0.01),
        Reply(tool_calls=[ToolCall("complete", {"output": "a race"})], when_contains="the flake is a race"),
    )
    handle = await runtime.spawner.spawn(SpawnRequest("oracle", "LEDGER-Q why?", blocking=True,
                                                      requested_by="user"))
    assert handle.result.status == RunStatus.COMPLETED
    label = handle.label
    assert label.startswith("oracle#")
    assert seen[0] == f"{label} queued · claude-opus-4-5"
    assert any(s.startswith(f"{label} running") and s.endswith("answering") for s in seen)
    assert any(s.startswith(f"{label} running") and s.endswith("reading notes.txt") for s in seen)
    assert any(s.startswith(f"{label} running") and s.endswith("finishing") for s in seen)
    assert any(s.startswith(f"{label} completed") for s in seen)
    assert ledger.rows()[0].status == RunStatus.COMPLETED
    assert all(a != b for a, b in itertools.pairwise(rows))  # every publish is a real change
    async with asyncio.timeout(5):
        await gone.wait()  # by the linger timer, with no further events
    assert ledger.rows() == [] and seen[-1] == "<gone>"


def test_a_primary_waiting_for_the_user_has_answered_a_subagent_needs_input() -> None:
    def row(parent: str | None) -> LedgerRow:
        return LedgerRow(run_id="r", session_id="s", parent_session_id=parent, label="x#1", profile="generic",
                         model="m", status=RunStatus.WAITING_USER, registered=0.0, started=0.0, ended=1.0)

    assert format_row(row(None)).startswith("x#1 answered · m")
    assert format_row(row("parent")).startswith("x#1 needs input · m")


def test_small_costs_keep_their_digits() -> None:
    """A real but small cost is not `$0.00`: the ledger shows `$0.0012`."""
    from yeetui.text import dollars

    assert [dollars(c) for c in (None, 0.0, 0.0012, 0.00004, 0.031, 2.5)] == [
        "$?", "$0.00", "$0.0012", "<$0.0001", "$0.03", "$2.50"]


def test_an_orchestrator_s_progress_is_its_row_s_activity(bus: Bus, ledger: Ledger) -> None:
    _register(bus, label="orchestrator#1", status=RunStatus.RUNNING)
    bus.publish(ev.RunProgress(RUN, SESSION, "plan ✓ → build … → review"))
    assert ledger.get(RUN).activity == "plan ✓ → build … → review"
    assert format_row(ledger.get(RUN)).endswith(" · plan ✓ → build … → review")


def test_rows_are_ordered_as_a_tree_with_depths(clock: FakeClock) -> None:
    def row(run_id: str, session: str, parent: str | None) -> LedgerRow:
        return LedgerRow(run_id=run_id, session_id=session, parent_session_id=parent, label=run_id, profile="p",
                         model="m", status=RunStatus.RUNNING, registered=0.0, clock=clock)

    rows = [row("primary", "s0", None), row("orch", "s1", "s0"), row("oracle", "s2", "s0"),
            row("builder", "s3", "s1"), row("stray", "s9", "gone")]
    assert [(r.run_id, depth) for r, depth in tree_order(rows)] == [
        ("primary", 0), ("orch", 1), ("builder", 2), ("oracle", 1), ("stray", 0)]
    assert [r.run_id for r, _ in tree_order([rows[3], rows[1]])] == ["orch", "builder"], "parents first"


def test_token_counts_read_short() -> None:
    assert [tokens_text(n) for n in (850, 1234, 12_345, 2_500_000)] == ["850 tok", "1.2k tok", "12k tok", "2.5M tok"]


def test_a_model_without_a_price_shows_an_unknown_cost_from_the_start(bus: Bus, ledger: Ledger) -> None:
    """Issue 24, item 13: `$?`, never `$0.00`, for a model whose price yeetui does not know — before its first
    usage arrives too."""
    bus.publish(ev.RunRegistered("r-x", "s-x", None, "generic", "generic#1", "openrouter/some-new/model-9",
                                 RunStatus.RUNNING))
    bus.publish(ev.RunRegistered("r-y", "s-y", None, "generic", "generic#2", "anthropic/claude-sonnet-4-6",
                                 RunStatus.RUNNING))
    unknown, known = (format_row(row) for row in sorted(ledger.rows(), key=lambda r: r.label))
    assert "$?" in unknown and "$0.00" not in unknown
    assert "$0.00" in known



@pytest.mark.parametrize("when", ["queued", "at once", "running"])
async def test_a_cancelled_child_shows_cancelled_then_leaves(runtime: Runtime, scripted, when: str) -> None:
    """Issue 24, item 10: `builder#8 queued` stayed in the ledger after its cancel (a run cancelled while it
    waited for a slot ended in the store, but nobody told the bus; one cancelled before its task first ran
    was not even ended in the store)."""
    ledger = Ledger(runtime.bus, linger=0.2)
    gone = asyncio.Event()
    ended: list[str] = []
    runtime.spawner.slots.limit = 1  # a second child waits, visibly queued
    scripted.script(Reply(text="slow " * 400, chunk_size=4, chunk_delay=0.05, when_contains="RUNNING-JOB"))
    first = await runtime.spawner.spawn(SpawnRequest("generic", "RUNNING-JOB", requested_by="user"))
    await scripted.until_requests(1)
    if when == "running":
        handle = first
    else:
        handle = await runtime.spawner.spawn(SpawnRequest("generic", "QUEUED-JOB", requested_by="user"))
        assert ledger.get(handle.run_id).status == RunStatus.QUEUED
    if when == "queued":
        async def waiting() -> bool:
            return (await runtime.store.slots.counts()).get("waiting") == 1
        await until_async("the run to wait", waiting)

    def collect(event: ev.Event) -> None:
        if isinstance(event, ev.LedgerChanged) and event.run_id == handle.run_id:
            if event.row is None:
                gone.set()
            elif event.row.is_final:
                ended.append(format_row(event.row))

    runtime.bus.add_listener(collect)
    await runtime.spawner.cancel(handle.run_id)  # a queued run stops at once; a running one is asked
    if when == "running":
        await runtime.spawner.cancel(handle.run_id, graceful=False)
    async with asyncio.timeout(5):
        await gone.wait()  # shown as cancelled, then gone like a finished row
    assert ended and ended[0].startswith(f"{handle.label} cancelled")
    assert ledger.get(handle.run_id) is None
    assert (await runtime.store.get_run(handle.run_id)).status == RunStatus.CANCELLED
    ledger.close()


def test_a_running_row_with_no_progress_for_stall_after_reads_stalled_with_what_it_waits_on(
        bus: Bus, clock: FakeClock) -> None:
    ledger = Ledger(bus, clock=clock, stall_after=60.0)
    _register(bus, status=RunStatus.RUNNING)
    bus.publish(ev.ToolCallStarted(RUN, SESSION, "c1", "bash", {"command": "make"}, activity="running make"))
    clock.now += 59.0
    assert "oracle#4 running" in format_row(ledger.rows()[0])
    clock.now += 2.0
    row = ledger.rows()[0]
    assert row.stalled and format_row(row).startswith("oracle#4 stalled") and "running make" in format_row(row)
    # any progress (here a streamed token) makes it running again; so does a permission question (not stalled)
    bus.publish(ev.TextDelta(RUN, SESSION, "x"))
    assert not ledger.rows()[0].stalled
    clock.now += 61.0
    assert ledger.rows()[0].stalled
    _status(bus, RunStatus.WAITING_PERMISSION)
    clock.now += 600.0
    assert not ledger.rows()[0].stalled
    # no stall_after: never stalled
    quiet = Ledger(Bus(), clock=clock)
    assert quiet.stall_after is None
