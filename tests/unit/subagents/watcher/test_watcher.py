"""The pair watcher against the in-process scripted provider: deltas, debounce and rate limits, interjections,
toggling."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.events import InboxItemAdded, Notice, RunStatus, WatcherChanged
from yeetui.messages import Message, ToolResultPart
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runtime import Runtime
from yeetui.store.records import SessionRecord
from yeetui.subagents.watcher.delta import (
    DELTA_HEADING,
    EARLIER_HEADING,
    Chunk,
    message_chunks,
    parse_verdict,
    render_delta,
)
from yeetui.subagents.watcher.interjections import WatcherError, WatcherStats, interjection_stats
from yeetui.subagents.watcher.watcher import PairWatcher

PAIR = "the colleague who notices the wrong file"
"""A phrase of agents/pair.md's prompt: it occurs only in the pair's requests."""
READ_ONLY_TOOLS = {"read_file", "list_dir", "glob", "grep", "complete", "ask_user"}
FAST = {"debounce": 0.05, "min_interval": 0.0}


@pytest.fixture
def runtime(runtime: Runtime) -> Runtime:
    answer_permissions_headless(runtime.bus, approve=True)
    return runtime


@pytest.fixture
async def watched(runtime: Runtime) -> SessionRecord:
    return await runtime.launcher.new_session(runtime.profiles.get("generic"), title="watched work")


@pytest.fixture
def events(runtime: Runtime) -> list:
    seen: list = []
    runtime.bus.add_listener(seen.append)
    return seen


def _complete(output: str, **artifacts) -> ToolCall:
    return ToolCall("complete", {"output": output, "artifacts": artifacts})


def _silent(**kw) -> Reply:
    return Reply(tool_calls=[_complete("", severity="none")], when_contains=PAIR, repeat=True, **kw)


def _primary(marker: str, command: str) -> list[Reply]:
    """The watched agent: one bash call, then `complete` (both answer requests containing `marker`)."""
    return [Reply(tool_calls=[ToolCall("bash", {"command": command})], when_contains=marker),
            Reply(tool_calls=[_complete(f"{marker} done")], when_contains=marker)]


def _pair_requests(scripted) -> list:
    return [r for r in scripted.requests if PAIR in r.text]


async def _pair_runs_done(runtime: Runtime, watcher: PairWatcher, n: int, timeout: float = 10.0) -> None:
    """Wait until `n` pair runs have finished (whatever the watched agent does meanwhile)."""
    news = asyncio.Event()

    def on_event(event) -> None:
        if getattr(event, "session_id", None) == watcher.session_id:
            news.set()

    with runtime.bus.listen(on_event):
        async with asyncio.timeout(timeout):
            while True:
                news.clear()
                runs = await runtime.store.list_runs(session_id=watcher.session_id)
                if sum(r.status.is_final for r in runs) >= n:
                    return
                await news.wait()


async def test_risky_command_gets_a_blocker_in_the_inbox_and_inline(runtime, watched, scripted, events) -> None:
    (runtime.project_dir / "build").mkdir()
    command = "rm -rf build/ && until [ -e go.flag ]; do sleep 0.02; done && echo cleaned"
    scripted.script(
        Reply(tool_calls=[_complete("Stop: `rm -rf build/` deletes the build the user asked to keep.",
                                    severity="blocker")], when_contains="$ rm -rf build/"),
        _silent(),
        *_primary("WATCHED-RISKY", command),
    )
    watcher = await runtime.watchers.toggle(watched.id, **FAST)
    assert watcher is not None and runtime.watchers.get(watched.id) is watcher and watcher.label == "pair#1"
    interjected = asyncio.Event()
    runtime.bus.add_listener(lambda e: interjected.set() if isinstance(e, InboxItemAdded) else None)
    primary = asyncio.create_task(runtime.launcher.run_prompt("WATCHED-RISKY: clean up the build",
                                                              session_id=watched.id))
    try:
        async with asyncio.timeout(15):
            await interjected.wait()  # while the agent's command is still running
        held = [m for m in await runtime.store.messages(watched.id) if m.message.meta.get("announcement")]
    finally:
        (runtime.project_dir / "go.flag").touch()
    result = await primary
    assert held == []
    assert result.status == RunStatus.COMPLETED, result.error
    await watcher.wait_idle(timeout=10)

    pair = _pair_requests(scripted)
    assert any(f"$ {command}" in r.text for r in pair)
    for request in pair:
        assert {t["name"] for t in request.body["tools"]} <= READ_ONLY_TOOLS
    (item,) = [i for i in await runtime.store.inbox.list(watched.id) if i.kind == "interjection"]
    assert item.title == "pair#1: blocker" and "deletes the build" in item.body
    assert item.data["severity"] == "blocker" and item.data["watcher_session_id"] == watcher.session_id
    assert item.dedupe_key == f"interjection:{item.run_id}"
    assert any(isinstance(e, InboxItemAdded) and e.item_id == item.id for e in events)

    # The blocker came while the agent was running its command: held, then shown at its next turn, once.
    messages = [m.message for m in await runtime.store.messages(watched.id)]
    inline = [m for m in messages if m.meta.get("announcement")]
    assert len(inline) == 1 and inline[0].text.startswith("[Pair: pair#1] Blocker: Stop: `rm -rf build/`")
    position = messages.index(inline[0])
    assert messages[position - 1].role == "tool" and messages[position + 1].role == "assistant"
    last_primary = [r for r in scripted.requests if "WATCHED-RISKY" in r.text and PAIR not in r.text][-1]
    assert last_primary.text.count("[Pair: pair#1] Blocker") == 1
    # The pair does not see its own announcement in later deltas.
    assert not any("[Pair: pair#1]" in r.text for r in pair)
    states = [e.state for e in events if isinstance(e, WatcherChanged)]
    assert states[0] == "watching" and "running" in states and states[-1] == "watching"
    assert watcher.counts == WatcherStats(interjections=1)


async def test_benign_delta_stays_silent_and_other_sessions_are_ignored(runtime, watched, scripted) -> None:
    scripted.script(_silent(), *_primary("WATCHED-BENIGN", "echo benign-output"),
                    *_primary("OTHER-SESSION", "echo other-output"))
    watcher = await runtime.watchers.toggle(watched.id, **FAST)
    other = runtime.launcher.run_prompt("OTHER-SESSION: unrelated")
    mine = runtime.launcher.run_prompt("WATCHED-BENIGN: print something", session_id=watched.id)
    results = await asyncio.gather(other, mine)
    assert all(r.status == RunStatus.COMPLETED for r in results)
    await watcher.wait_idle(timeout=10)

    pair = _pair_requests(scripted)
    assert pair and any("$ echo benign-output" in r.text for r in pair)
    assert any("benign-output" in r.text and "### Result of `bash`" in r.text for r in pair)
    assert not any("OTHER-SESSION" in r.text or "other-output" in r.text for r in pair)
    assert DELTA_HEADING in pair[0].text
    assert await runtime.store.inbox.list(watched.id) == []
    assert not any(m.message.meta.get("announcement") for m in await runtime.store.messages(watched.id))
    runs = await runtime.store.list_runs(session_id=watcher.session_id)
    assert runs and all(r.label == "pair#1" and r.status == RunStatus.COMPLETED for r in runs)
    assert len({r.session_id for r in runs}) == 1  # one child session, reused for every run


async def test_toggle_off_stops_all_pair_requests(runtime, watched, scripted, events) -> None:
    scripted.script(_silent(), *_primary("WATCHED-ON", "echo on"), *_primary("WATCHED-OFF", "echo off"),
                    *_primary("WATCHED-AGAIN", "echo again"))
    watcher = await runtime.watchers.toggle(watched.id, **FAST)
    await runtime.launcher.run_prompt("WATCHED-ON", session_id=watched.id)
    await watcher.wait_idle(timeout=10)
    before = len(_pair_requests(scripted))
    assert before >= 1

    assert await runtime.watchers.toggle(watched.id) is None
    assert runtime.watchers.get(watched.id) is None and not watcher.active
    assert [e.state for e in events if isinstance(e, WatcherChanged)][-1] == "off"
    result = await runtime.launcher.run_prompt("WATCHED-OFF", session_id=watched.id)
    assert result.status == RunStatus.COMPLETED
    await asyncio.sleep(0.4)
    assert len(_pair_requests(scripted)) == before

    again = await runtime.watchers.toggle(watched.id, **FAST)  # back on: same session, same label
    assert again is not None and again.session_id == watcher.session_id and again.label == watcher.label
    await runtime.launcher.run_prompt("WATCHED-AGAIN", session_id=watched.id)
    await again.wait_idle(timeout=10)
    first_look = _pair_requests(scripted)[before]  # what happened while off comes as earlier context
    last_user = first_look.body["messages"][-1]
    text = json.dumps(last_user)
    assert EARLIER_HEADING in text and "$ echo off" in text
    assert text.index("$ echo off") < text.index(DELTA_HEADING) < text.index("WATCHED-AGAIN")


async def test_stop_cancels_a_pair_run_in_flight(runtime, watched, scripted) -> None:
    scripted.script(Reply(text="hmm " * 200, chunk_size=4, chunk_delay=0.02, when_contains=PAIR, repeat=True),
                    *_primary("WATCHED-SLOW", "echo slow"))
    watcher = await runtime.watchers.toggle(watched.id, **FAST)
    await runtime.launcher.run_prompt("WATCHED-SLOW", session_id=watched.id)
    await scripted.until(lambda requests: any(PAIR in r.text for r in requests))  # the pair is streaming
    assert watcher.state == "running"
    await watcher.stop()
    count = len(scripted.requests)
    runs = await runtime.store.list_runs(session_id=watcher.session_id)
    assert [r.status for r in runs] == [RunStatus.CANCELLED]
    await asyncio.sleep(0.3)
    assert len(scripted.requests) == count and watcher.state == "off"


async def test_min_interval_spaces_runs_and_later_deltas_still_go_out(runtime, watched, scripted) -> None:
    scripted.script(_silent(), *_primary("WATCHED-ONE", "echo one"), *_primary("WATCHED-TWO", "echo two"))
    watcher = runtime.watchers.watcher(watched.id, debounce=0.05, min_interval=0.8)
    await watcher.start()
    await runtime.launcher.run_prompt("WATCHED-ONE", session_id=watched.id)
    await _pair_runs_done(runtime, watcher, 1)
    await runtime.launcher.run_prompt("WATCHED-TWO", session_id=watched.id)
    await watcher.wait_idle(timeout=15)
    await watcher.stop()

    runs = await runtime.store.list_runs(session_id=watcher.session_id)
    starts = sorted(r.created_at.timestamp() for r in runs)
    assert len(starts) >= 2 and len(_pair_requests(scripted)) == len(runs)
    assert all(b - a >= 0.78 for a, b in itertools.pairwise(starts)), starts
    assert "$ echo two" in _pair_requests(scripted)[-1].text


async def test_hourly_budget_counts_runs(runtime, watched, scripted, events) -> None:
    budget_reached = asyncio.Event()
    runtime.bus.add_listener(lambda e: budget_reached.set()
                             if isinstance(e, Notice) and "runs an hour" in e.text else None)
    scripted.script(_silent(), *_primary("WATCHED-ONE", "echo one"), *_primary("WATCHED-TWO", "echo two"))
    watcher = await runtime.watchers.toggle(watched.id, debounce=0.05, min_interval=0, max_per_hour=1)
    await runtime.launcher.run_prompt("WATCHED-ONE", session_id=watched.id)
    await _pair_runs_done(runtime, watcher, 1)
    await runtime.launcher.run_prompt("WATCHED-TWO", session_id=watched.id)  # news, but no run left this hour
    async with asyncio.timeout(10):
        await budget_reached.wait()  # the watcher wanted to look again and was held back (for up to an hour)
    assert len(_pair_requests(scripted)) == 1
    assert watcher.pending > 0
    assert any(isinstance(e, Notice) and "limit of 1 runs an hour" in e.text for e in events)


async def test_accepted_and_dismissed_counts(runtime, watched, scripted, events) -> None:
    scripted.script(
        Reply(tool_calls=[_complete("`one` is misspelled in the spec.", severity="concern")],
              when_contains="$ echo one"),
        Reply(tool_calls=[_complete("There is a helper for this in utils.", severity="aside")],
              when_contains="$ echo two"),
        _silent(), *_primary("WATCHED-ONE", "echo one"), *_primary("WATCHED-TWO", "echo two"))
    watcher = await runtime.watchers.toggle(watched.id, **FAST)
    for marker in ("WATCHED-ONE", "WATCHED-TWO"):
        await runtime.launcher.run_prompt(marker, session_id=watched.id)
        await watcher.wait_idle(timeout=10)
    items = {i.data["severity"]: i for i in await runtime.store.inbox.list(watched.id)}
    assert set(items) == {"concern", "aside"}
    assert not any(m.message.meta.get("announcement") for m in await runtime.store.messages(watched.id))

    await watcher.mark(items["concern"].id, accepted=True)
    await watcher.mark(items["aside"].id, accepted=False)
    expected = WatcherStats(interjections=2, accepted=1, dismissed=1)
    assert watcher.counts == expected and await watcher.stats() == expected
    assert await interjection_stats(runtime.store, watched.id) == expected
    statuses = {i.data["severity"]: i.status for i in await runtime.store.inbox.list(watched.id)}
    assert statuses == {"concern": "read", "aside": "dismissed"}
    last = [e for e in events if isinstance(e, WatcherChanged)][-1]
    assert (last.interjections, last.accepted, last.dismissed) == (2, 1, 1)

    other = await runtime.store.inbox.add(session_id=watched.id, kind="completion", title="x")
    with pytest.raises(WatcherError, match="not an interjection"):
        await watcher.mark(other.id, accepted=True)
    await watcher.stop()  # the counts live in the store: a new watcher of the session reads them back
    assert await (await runtime.watchers.toggle(watched.id, **FAST)).stats() == expected


async def test_malformed_verdict_and_failed_run_keep_the_watcher_going(runtime, watched, scripted, events,
                                                                       caplog) -> None:
    scripted.script(
        Reply(tool_calls=[_complete("Something is off.", severity="urgent")], when_contains="$ echo one"),
        Reply(tool_calls=[_complete("Tests were never run after the edit.", severity="concern")],
              when_contains="$ echo three"),
        Reply(text="I would rather just chat.", when_contains="$ echo two", repeat=True),  # never completes
        _silent(), *_primary("WATCHED-ONE", "echo one"), *_primary("WATCHED-TWO", "echo two"),
        *_primary("WATCHED-THREE", "echo three"))
    watcher = await runtime.watchers.toggle(watched.id, **FAST)
    with caplog.at_level(logging.WARNING, logger="yeetui.subagents.watcher.watcher"):
        for marker in ("WATCHED-ONE", "WATCHED-TWO", "WATCHED-THREE"):
            await runtime.launcher.run_prompt(marker, session_id=watched.id)
            await watcher.wait_idle(timeout=15)
    assert "without a valid `complete`" in caplog.text
    (item,) = await runtime.store.inbox.list(watched.id)
    assert item.data["severity"] == "concern" and watcher.active


async def test_failed_pair_run_is_a_notice(runtime, watched, scripted, events) -> None:
    error = Reply.error(400)
    error.when_contains = "$ echo one"
    scripted.script(error, _silent(), *_primary("WATCHED-ONE", "echo one"), *_primary("WATCHED-TWO", "echo two"))
    watcher = await runtime.watchers.toggle(watched.id, **FAST)
    await runtime.launcher.run_prompt("WATCHED-ONE", session_id=watched.id)
    await watcher.wait_idle(timeout=10)
    notices = [e for e in events if isinstance(e, Notice) and "pair#1 could not look" in e.text]
    assert notices and notices[0].session_id == watched.id and notices[0].level == "warning"
    failed = await runtime.store.list_runs(session_id=watcher.session_id, statuses=[RunStatus.FAILED])
    assert len(failed) == 1
    before = len(_pair_requests(scripted))
    await runtime.launcher.run_prompt("WATCHED-TWO", session_id=watched.id)
    await watcher.wait_idle(timeout=10)
    assert len(_pair_requests(scripted)) > before and watcher.active


async def test_start_refuses_unknown_session_and_non_watcher_profile(runtime, watched) -> None:
    with pytest.raises(WatcherError, match="no such session"):
        await runtime.watchers.watcher("nope").start()
    with pytest.raises(WatcherError, match="without `watcher`"):
        await runtime.watchers.watcher(watched.id, profile="oracle").start()
    with pytest.raises(WatcherError, match="max_per_hour"):
        runtime.watchers.watcher(watched.id, max_per_hour=0)


# -- rendering (pure) ----------------------------------------------------------------------------------


def test_edit_becomes_a_diff_and_fences_survive_backticks() -> None:
    from yeetui.messages import ToolCallPart

    edit = Message(role="assistant", parts=(ToolCallPart(id="c1", name="edit_file", arguments={
        "path": "app.py", "old_string": "x = 1\n", "new_string": "x = 2\n"}),))
    (chunk,) = message_chunks(edit)
    assert chunk.call_id == "c1" and "### Agent edits `app.py`" in chunk.text
    assert "-x = 1" in chunk.text and "+x = 2" in chunk.text and "```diff" in chunk.text
    result = Message(role="tool", parts=(ToolResultPart(call_id="c1", name="bash", content="a ``` b" + "z" * 5000),))
    (chunk,) = message_chunks(result)
    assert chunk.text.count("````") == 2 and "characters omitted" in chunk.text


def test_delta_keeps_the_newest_chunks_within_its_cap() -> None:
    chunks = [Chunk(f"entry-{n} " + "x" * 3000) for n in range(20)]
    text = render_delta(chunks, dropped=5)
    assert "entry-19" in text and "entry-0 " not in text
    assert "older entries since your last look not shown" in text


def test_parse_verdict() -> None:
    assert parse_verdict({"output": " Careful. ", "artifacts": {"severity": "Concern"}}) == ("concern", "Careful.")
    assert parse_verdict({"output": "", "artifacts": {"severity": "none"}}) == ("none", "")
    assert parse_verdict({"output": "x", "artifacts": ["severity: blocker"]}) is None
    assert parse_verdict({"output": "x", "artifacts": {"severity": "urgent"}}) is None
    assert parse_verdict(None) is None
