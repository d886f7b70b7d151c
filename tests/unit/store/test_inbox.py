"""Store: inbox items (`store/inbox.py`): fields, idempotent delivery, listing and errors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from yeetui.errors import StoreError
from yeetui.store import SessionRecord, Store


async def test_inbox_item_fields_and_defaults(store: Store, session: SessionRecord) -> None:
    run = await store.create_run(session_id=session.id, profile="oracle", model=None, prompt="q")
    item = await store.inbox.add(session_id=session.id, kind="completion", title="oracle#4 complete",
                                 body="the answer", run_id=run.id, data={"status": "success"},
                                 dedupe_key=f"completion:{run.id}")
    assert (item.session_id, item.run_id, item.kind, item.title, item.body) == (
        session.id, run.id, "completion", "oracle#4 complete", "the answer")
    assert (item.status, item.data, item.dedupe_key) == ("unread", {"status": "success"},
                                                         f"completion:{run.id}")
    assert await store.inbox.get(item.id) == item
    assert await store.inbox.get(99_999) is None
    assert json.loads(json.dumps(item.to_json()))["data"] == {"status": "success"}


async def test_inbox_dedupe_key_makes_delivery_idempotent(store: Store, session: SessionRecord) -> None:
    first, created = await store.inbox.put(session_id=session.id, kind="completion", title="t",
                                           dedupe_key="run-1:done")
    again, created_again = await store.inbox.put(session_id=session.id, kind="completion",
                                                 title="different title", dedupe_key="run-1:done")
    assert created and not created_again and again == first
    same = await store.inbox.add(session_id=session.id, kind="completion", title="x",
                                 dedupe_key="run-1:done")
    assert same.id == first.id and same.title == "t"
    await store.inbox.add(session_id=session.id, kind="completion", title="t", dedupe_key="run-2:done")
    await store.inbox.add(session_id=session.id, kind="note", title="no key")
    await store.inbox.add(session_id=session.id, kind="note", title="no key")
    assert len(await store.inbox.list(session.id)) == 4


async def test_concurrent_deliveries_with_one_key_create_one_item(tmp_path: Path, store: Store,
                                                                  session: SessionRecord) -> None:
    async with await Store.open(store.path) as second:
        results = await asyncio.gather(*(
            s.inbox.put(session_id=session.id, kind="completion", title="t", dedupe_key="once")
            for s in (store, second) * 5
        ))
    assert sum(created for _, created in results) == 1
    assert len({item.id for item, _ in results}) == 1


async def test_inbox_listing_filters_and_status(store: Store, session: SessionRecord) -> None:
    other = await store.create_session(profile="generic")
    a = await store.inbox.add(session_id=session.id, kind="completion", title="a")
    b = await store.inbox.add(session_id=session.id, kind="interjection", title="b",
                              data={"severity": "concern"})
    c = await store.inbox.add(session_id=other.id, kind="completion", title="c")
    assert [i.id for i in await store.inbox.list(session.id)] == [b.id, a.id]  # newest first
    assert [i.id for i in await store.inbox.list(None)] == [c.id, b.id, a.id]
    assert await store.inbox.count(session.id) == 2

    read = await store.inbox.set_status(a.id, "read")
    assert read.status == "read" and read.updated_at >= a.updated_at
    await store.inbox.set_status(b.id, "dismissed")
    assert [i.id for i in await store.inbox.list(session.id, ["unread"])] == []
    assert [i.id for i in await store.inbox.list(session.id, ["read", "dismissed"])] == [b.id, a.id]
    assert await store.inbox.count(session.id) == 0
    assert await store.inbox.count(session.id, None) == 2
    assert await store.inbox.get(a.id) == read  # reading never erases


async def test_inbox_errors(store: Store, session: SessionRecord) -> None:
    item = await store.inbox.add(session_id=session.id, kind="note", title="x")
    with pytest.raises(StoreError, match="Unknown inbox status 'archived'; use one of unread, read"):
        await store.inbox.set_status(item.id, "archived")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="Unknown inbox status 'gone'"):
        await store.inbox.list(session.id, ["gone"])  # type: ignore[list-item]
    with pytest.raises(StoreError, match="no inbox item 4242"):
        await store.inbox.set_status(4242, "read")
    with pytest.raises(StoreError, match="no session ghost"):
        await store.inbox.add(session_id="ghost", kind="note", title="x")
    with pytest.raises(StoreError, match="no run ghost"):
        await store.inbox.add(session_id=session.id, kind="note", title="x", run_id="ghost")
