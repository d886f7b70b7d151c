"""Permission questions between processes, without tmux: a worker's `AskThroughStore` on one store connection,
the following process's `RunsElsewhere` on another, the dialog played by a bus listener."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import until_async
from yeetui.bus import Bus
from yeetui.errors import StoreError
from yeetui.events import PermissionAnswer, PermissionRequested, RunStatus
from yeetui.runs.asking import AskThroughStore
from yeetui.store import Store
from yeetui.subagents.elsewhere import RunsElsewhere
from yeetui.subagents.inbox import Delivery

WAIT = 20.0


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[tuple[Store, Store]]:
    """Two connections to one database: the worker's and the front end's."""
    worker = await Store.open(tmp_path / "yeetui.db")
    front = await Store.open(tmp_path / "yeetui.db")
    try:
        yield worker, front
    finally:
        await worker.close()
        await front.close()


def _request(run_id: str, subject: str = "make build") -> PermissionRequested:
    reply: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()
    return PermissionRequested(run_id, "session-1", "builder#1", "bash", subject, {"command": subject}, reply)


async def _pane_run(store: Store) -> str:
    """A live pane run, executed by this (live) process as its worker."""
    session = await store.create_session(profile="builder")
    run = await store.create_run(session_id=session.id, profile="builder", model="anthropic/x", prompt="p",
                                 options={"mode": "tmux", "pane": {"server": "s", "window": "w", "pane": "%1"}})
    await store.update_run(run.id, status=RunStatus.RUNNING, pid=os.getpid())
    return run.id


@dataclass
class Pair:
    """A pane's worker asking through the store, and the process that follows the pane and shows dialogs."""

    run_id: str
    worker_bus: Bus
    front_store: Store
    elsewhere: RunsElsewhere
    shown: list[PermissionRequested]


@pytest.fixture
async def pair(stores: tuple[Store, Store]) -> AsyncIterator[Pair]:
    worker_store, front_store = stores
    run_id = await _pane_run(worker_store)
    worker_bus, front_bus = Bus(), Bus()
    asking = AskThroughStore(worker_store, run_id, poll=0.01)
    worker_bus.add_listener(asking.listen)
    shown: list[PermissionRequested] = []
    front_bus.add_listener(lambda e: shown.append(e) if isinstance(e, PermissionRequested) else None)
    elsewhere = RunsElsewhere(front_store, front_bus, Delivery(front_store, front_bus), None, answers_asks=True)
    elsewhere.follow(run_id, None)
    try:
        yield Pair(run_id, worker_bus, front_store, elsewhere, shown)
    finally:
        await elsewhere.close()
        await asking.close()


async def test_the_first_answer_wins_and_only_real_answers_are_accepted(stores: tuple[Store, Store]) -> None:
    worker, front = stores
    ask = await worker.permission_asks.post("run-1", run_id="run-1", session_id="s", agent_label="oracle#1",
                                            tool="bash", subject="ls", arguments={"command": "ls"})
    assert await worker.permission_asks.read_answer(ask) is None
    assert [a.subject for a in await front.permission_asks.unanswered(["run-1"])] == ["ls"]
    assert await front.permission_asks.answer(ask, "deny")
    assert not await worker.permission_asks.answer(ask, "allow_always")  # too late: the first answer stands
    assert await worker.permission_asks.read_answer(ask) == "deny"
    assert await front.permission_asks.unanswered(["run-1"]) == []
    with pytest.raises(StoreError, match="not a permission answer"):
        await front.permission_asks.answer(ask, "yes please")


async def test_a_question_is_stored_without_the_key_in_it(stores: tuple[Store, Store]) -> None:
    worker, front = stores
    key = "sk-ant-api03-" + "Q" * 40
    worker.secrets = (key,)
    await worker.permission_asks.post("run-1", run_id="run-1", session_id="s", agent_label="builder#1",
                                      tool="bash", subject=f"curl -H 'x-api-key: {key}' x",
                                      arguments={"command": f"echo {key}"})
    [ask] = await front.permission_asks.unanswered(["run-1"])
    assert key not in ask.subject and key not in str(ask.arguments)


async def test_a_pane_question_is_asked_in_the_following_process_and_answered_back(pair: Pair) -> None:
    request = _request(pair.run_id)
    pair.worker_bus.publish(request)
    await until_async("the question to reach the following process", lambda: pair.shown, timeout=WAIT)
    [dialog] = pair.shown
    assert (dialog.agent_label, dialog.tool, dialog.subject) == ("builder#1", "bash", "make build")
    assert dialog.arguments == {"command": "make build"}
    dialog.reply.set_result("allow_always")  # the user's answer in the dialog
    assert await asyncio.wait_for(request.reply, WAIT) == "allow_always"
    start = pair.elsewhere.rounds
    await until_async("a few more looks", lambda: pair.elsewhere.rounds >= start + 3, timeout=WAIT)
    assert len(pair.shown) == 1  # asked once, not again on every look


async def test_a_question_the_run_stopped_waiting_for_is_withdrawn_and_its_dialog_closed(pair: Pair) -> None:
    request = _request(pair.run_id)
    pair.worker_bus.publish(request)
    await until_async("the question to be shown", lambda: pair.shown, timeout=WAIT)
    request.reply.cancel()  # the tool call was cancelled (the run was stopped, or timed out)
    await until_async("the shown dialog's question to be withdrawn",
                      lambda: pair.shown[0].reply.cancelled(), timeout=WAIT)
    assert await pair.front_store.permission_asks.unanswered([pair.run_id]) == []


async def test_a_process_that_shows_no_dialogs_leaves_questions_alone(stores: tuple[Store, Store]) -> None:
    """A headless follower (`yeetui run`) never takes a question: the pane's worker refuses or allows on its own
    there (RunOptions.ask_here is off), and questions stay for a front end that asks."""
    worker_store, front_store = stores
    run_id = await _pane_run(worker_store)
    ask = await worker_store.permission_asks.post(run_id, run_id=run_id, session_id="s", agent_label="b#1",
                                                  tool="bash", subject="ls", arguments={})
    front_bus = Bus()
    shown: list[object] = []
    front_bus.add_listener(shown.append)
    elsewhere = RunsElsewhere(front_store, front_bus, Delivery(front_store, front_bus), None)
    elsewhere.follow(run_id, None)
    try:
        start = elsewhere.rounds
        await until_async("a few looks", lambda: elsewhere.rounds >= start + 3, timeout=WAIT)
        assert not [e for e in shown if isinstance(e, PermissionRequested)]
        assert await front_store.permission_asks.read_answer(ask) is None
    finally:
        await elsewhere.close()


# -- questions open to every yeetui: a run nobody follows (an MCP client's spawn) ---------------------------------

async def _asking_to_all(store: Store, **waiting: Any) -> tuple[str, Bus, AskThroughStore]:
    """A run nobody follows asking every yeetui; `waiting`: `wait`, `timeout`, `poll` of its AskThroughStore."""
    run_id = await _pane_run(store)
    bus = Bus()
    asking = AskThroughStore(store, run_id, **{"poll": 0.01, **waiting}, open_to_all=True)
    bus.add_listener(asking.listen)
    return run_id, bus, asking


def _front_end(store: Store) -> tuple[RunsElsewhere, list[PermissionRequested]]:
    bus, shown = Bus(), []
    bus.add_listener(lambda e: shown.append(e) if isinstance(e, PermissionRequested) else None)
    return RunsElsewhere(store, bus, Delivery(store, bus), None, answers_asks=True), shown


async def test_with_no_yeetui_open_a_question_open_to_all_is_refused_at_once(stores: tuple[Store, Store]) -> None:
    worker, front = stores
    gone = await asyncio.create_subprocess_exec("true")
    await gone.wait()
    await front.front_ends.enter(gone.pid)  # a TUI that crashed left its row: it counts for nothing
    run_id, bus, asking = await _asking_to_all(worker)
    try:
        request = _request(run_id)
        bus.publish(request)
        assert await asyncio.wait_for(request.reply, WAIT) == "unattended"
        [refused] = await front.permission_asks.unattended_refusals([run_id])
        assert refused.subject == "make build"
        assert not await front.front_ends.any_present()
    finally:
        await asking.close()


async def test_every_open_yeetui_asks_it_and_the_first_answer_wins(stores: tuple[Store, Store]) -> None:
    worker, front = stores
    first, shown_first = _front_end(front)
    second, shown_second = _front_end(worker)
    await first.attend()
    await second.attend()
    run_id, bus, asking = await _asking_to_all(worker)
    try:
        request = _request(run_id)
        bus.publish(request)
        await until_async("the question in both yeetuis", lambda: shown_first and shown_second, timeout=WAIT)
        assert shown_first[0].agent_label == "builder#1" and shown_first[0].subject == "make build"
        shown_second[0].reply.set_result("allow_once")
        assert await asyncio.wait_for(request.reply, WAIT) == "allow_once"
        await until_async("the other yeetui's dialog to be withdrawn",
                          lambda: shown_first[0].reply.cancelled(), timeout=WAIT)
        assert await front.permission_asks.unanswered_open_to_all() == []
    finally:
        await asking.close()
        await first.close()
        await second.close()
    assert not await front.front_ends.any_present()  # both left when they closed


async def test_when_the_last_yeetui_quits_before_answering_the_question_is_refused(stores: tuple[Store, Store]) -> None:
    worker, front = stores
    attending, shown = _front_end(front)
    await attending.attend()
    run_id, bus, asking = await _asking_to_all(worker)
    try:
        request = _request(run_id)
        bus.publish(request)
        await until_async("the question to be shown", lambda: shown, timeout=WAIT)
        await attending.close()  # the user quit yeetui with the dialog open
        assert await asyncio.wait_for(request.reply, WAIT) == "unattended"
        assert [a.run_id for a in await front.permission_asks.unattended_refusals([run_id])] == [run_id]
    finally:
        await asking.close()
        await attending.close()


async def test_a_followed_panes_question_is_not_open_to_other_yeetuis(pair: Pair, stores: tuple[Store, Store]) -> None:
    worker, _ = stores
    other, shown_elsewhere = _front_end(worker)
    await other.attend()
    try:
        request = _request(pair.run_id)
        pair.worker_bus.publish(request)
        await until_async("the question in the following yeetui", lambda: pair.shown, timeout=WAIT)
        start = other.rounds
        await until_async("a few looks by the other yeetui", lambda: other.rounds >= start + 3, timeout=WAIT)
        assert shown_elsewhere == []
        pair.shown[0].reply.set_result("deny")
        assert await asyncio.wait_for(request.reply, WAIT) == "deny"
    finally:
        await other.close()



# -- a detached run's question waits for an answer (issue 29): the fleet view or a TUI opened later answers ---------

async def _posted(store: Store) -> int:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not (asks := await store.permission_asks.unanswered_open_to_all()):
        assert loop.time() < deadline, "the question was never posted"
        await asyncio.sleep(0.01)
    return asks[0].id


async def test_a_waiting_question_outlasts_no_yeetui_open_and_a_yeetui_opened_later_answers_it(
        stores: tuple[Store, Store]) -> None:
    worker, front = stores
    run_id, bus, asking = await _asking_to_all(worker, wait=True)
    attending, shown = _front_end(front)
    try:
        request = _request(run_id)
        bus.publish(request)
        ask_id = await _posted(front)
        await asyncio.sleep(0.01 * 40)  # many looks past the one that would refuse it with nobody present
        assert not request.reply.done()
        assert await front.permission_asks.read_answer(ask_id) is None
        assert await front.permission_asks.unattended_refusals([run_id]) == []
        await attending.attend()  # the user opens yeetui: the question is asked there
        await until_async("the question in the yeetui opened later", lambda: shown, timeout=WAIT)
        shown[0].reply.set_result("allow_once")
        assert await asyncio.wait_for(request.reply, WAIT) == "allow_once"
    finally:
        await asking.close()
        await attending.close()


async def test_a_waiting_question_nobody_answers_in_its_time_is_refused_as_unattended(
        stores: tuple[Store, Store]) -> None:
    worker, front = stores
    run_id, bus, asking = await _asking_to_all(worker, wait=True, timeout=0.2)
    try:
        request = _request(run_id)
        bus.publish(request)
        assert await asyncio.wait_for(request.reply, WAIT) == "unattended"
        [refused] = await front.permission_asks.unattended_refusals([run_id])
        assert refused.subject == "make build"
        assert await front.permission_asks.unanswered_open_to_all() == []  # nothing left to answer in the fleet
    finally:
        await asking.close()


async def test_an_answer_given_as_the_time_runs_out_wins_over_the_refusal(stores: tuple[Store, Store]) -> None:
    """The fleet answers just before the timeout refuses: the store keeps the first answer, and the run hears
    that one — never a refusal recorded over an answer the user gave."""
    worker, front = stores
    run_id, bus, asking = await _asking_to_all(worker, wait=True, timeout=0.0, poll=3600)
    real_read = worker.permission_asks.read_answer
    answered = asyncio.Event()

    async def read_then_user_answers(ask_id: int) -> str | None:
        seen = await real_read(ask_id)
        if not answered.is_set():  # nothing yet at the first look; the user answers right after it
            assert seen is None and await front.permission_asks.answer(ask_id, "allow_once")
            answered.set()
        return seen

    worker.permission_asks.read_answer = read_then_user_answers  # type: ignore[method-assign]
    try:
        request = _request(run_id)
        bus.publish(request)
        assert await asyncio.wait_for(request.reply, WAIT) == "allow_once"
        assert answered.is_set()
        assert await front.permission_asks.unattended_refusals([run_id]) == []
    finally:
        worker.permission_asks.read_answer = real_read  # type: ignore[method-assign]
        await asking.close()
