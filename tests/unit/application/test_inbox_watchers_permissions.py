"""The inbox, pair-watcher and permission use cases front ends call: marking an item (an interjection's verdict
reaches its watcher), switching a pair watcher, answering a permission question."""

from __future__ import annotations

import asyncio

from yeetui.application.inbox import InboxDesk
from yeetui.application.permissions import answer_permission
from yeetui.application.sessions import SessionDesk
from yeetui.application.watchers import PairWatching
from yeetui.events import PermissionAnswer, PermissionRequested
from yeetui.runtime import Runtime


async def test_marking_an_item_sets_its_status(runtime: Runtime) -> None:
    session = await SessionDesk(runtime).new()
    item = await runtime.store.inbox.add(session_id=session.id, kind="completion", title="oracle#1 done")
    inbox = InboxDesk(runtime)
    await inbox.mark(item, "dismissed")
    marked = await inbox.get(item.id)
    assert marked is not None and marked.status == "dismissed"


async def test_the_pair_watcher_toggles_on_and_off(runtime: Runtime) -> None:
    session = await SessionDesk(runtime).new()
    pair = PairWatching(runtime)
    assert await pair.toggle(session.id) is True
    assert pair.watching(session.id)
    assert await pair.toggle(session.id) is False
    assert not pair.watching(session.id)


async def test_an_interjection_verdict_is_counted_by_its_watcher(runtime: Runtime) -> None:
    session = await SessionDesk(runtime).new()
    pair = PairWatching(runtime)
    await pair.toggle(session.id)
    watcher = runtime.watchers.get(session.id)
    assert watcher is not None
    item = await runtime.store.inbox.add(session_id=session.id, kind="interjection", title="careful",
                                         data={"watcher_session_id": watcher.session_id})
    await InboxDesk(runtime).mark(item, "dismissed", accepted=False)
    assert (watcher.counts.interjections, watcher.counts.dismissed) == (1, 1)
    marked = await runtime.store.inbox.get(item.id)
    assert marked is not None and marked.status == "dismissed"


def _request(reply: asyncio.Future[PermissionAnswer]) -> PermissionRequested:
    return PermissionRequested(run_id="r", session_id="s", agent_label="builder#1", tool="bash",
                               subject="rm -rf build", arguments={"command": "rm -rf build"}, reply=reply)


async def test_a_permission_answer_reaches_the_asking_run() -> None:
    reply: asyncio.Future[PermissionAnswer] = asyncio.get_running_loop().create_future()
    assert answer_permission(_request(reply), "allow_always")
    assert reply.result() == "allow_always"


async def test_a_dismissed_or_unknown_answer_denies_and_a_second_answer_is_ignored() -> None:
    loop = asyncio.get_running_loop()
    dismissed: asyncio.Future[PermissionAnswer] = loop.create_future()
    assert answer_permission(_request(dismissed), None)
    assert dismissed.result() == "deny"
    odd: asyncio.Future[PermissionAnswer] = loop.create_future()
    answer_permission(_request(odd), "unattended")  # never the user's word
    assert odd.result() == "deny"
    assert not answer_permission(_request(odd), "allow_once")
    assert odd.result() == "deny"
