"""Store: sessions and messages against a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from yeetui.errors import StoreError
from yeetui.messages import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from yeetui.store import Store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "data" / "yeetui.db") as opened:
        yield opened


def _all_part_kinds() -> list[Message]:
    return [
        Message.user("fix the ✓ bug\nplease", source="cli"),
        Message(role="assistant", parts=(
            ThinkingPart(text="let me think", signature="sig-abc=="),
            ThinkingPart(text="opaque-redacted-data", redacted=True),
            TextPart(text="I'll read the file."),
            ToolCallPart(id="call_1", name="read_file", arguments={"path": "src/a.py", "lines": [1, 20]}),
            ToolCallPart(id="call_2", name="bash", raw_arguments='{"command": "ls'),
        ), meta={"model": "anthropic/claude-sonnet-4-5"}),
        Message(role="tool", parts=(
            ToolResultPart(call_id="call_1", name="read_file", content="print('hi')\n"),
            ToolResultPart(call_id="call_2", name="bash", content="bad JSON arguments", is_error=True),
        )),
        Message.assistant("", interrupted=True, nudge=True),
    ]


# ----- sessions ------------------------------------------------------------------------------------------


async def test_create_session_defaults(store: Store) -> None:
    session = await store.create_session(profile="generic")
    assert re.fullmatch(r"[0-9a-f]{32}", session.id)
    assert session.key == f"agent:generic:primary:{session.id}"
    assert (session.parent_id, session.depth, session.title, session.status) == (None, 0, "", "active")
    assert (session.model, session.cwd, session.workspace) == (None, None, None)
    assert session.created_at.tzinfo is UTC and session.created_at == session.updated_at
    assert await store.get_session(session.id) == session


async def test_create_child_session(store: Store, tmp_path: Path) -> None:
    parent = await store.create_session(profile="orchestrator", title="root", model="anthropic/x")
    child = await store.create_session(profile="builder", parent_id=parent.id, cwd=tmp_path,
                                       workspace={"mode": "worktree", "roots": [str(tmp_path)]})
    grandchild = await store.create_session(profile="reviewer", parent_id=child.id)
    assert child.key == f"agent:builder:subagent:{child.id}"
    assert (child.depth, grandchild.depth) == (1, 2)
    assert child.cwd == tmp_path and child.workspace == {"mode": "worktree", "roots": [str(tmp_path)]}
    explicit = await store.create_session(profile="oracle", parent_id=parent.id, depth=5, key="custom:key")
    assert (explicit.depth, explicit.key) == (5, "custom:key")
    json.dumps(child.to_json())
    assert child.to_json()["cwd"] == str(tmp_path)


async def test_create_session_errors(store: Store) -> None:
    with pytest.raises(StoreError, match="no parent session nope"):
        await store.create_session(profile="oracle", parent_id="nope")
    await store.create_session(profile="generic", key="k1")
    with pytest.raises(StoreError, match="key 'k1' already exists"):
        await store.create_session(profile="generic", key="k1")
    assert len(await store.list_sessions()) == 1


async def test_get_session_unknown_is_none(store: Store) -> None:
    assert await store.get_session("0" * 32) is None


async def test_resolve_session_by_id_key_and_prefix(store: Store) -> None:
    sessions = [await store.create_session(profile="generic") for _ in range(20)]
    target = sessions[0]
    assert await store.resolve_session(target.id) == target
    assert await store.resolve_session(f"  {target.key} ") == target
    assert await store.resolve_session(target.id[:12].upper()) == target
    # 20 random hex ids share some first character (pigeonhole): that prefix is ambiguous.
    first, count = Counter(s.id[0] for s in sessions).most_common(1)[0]
    assert count >= 2
    with pytest.raises(StoreError, match=rf"'{first}' matches more than one session .*more characters"):
        await store.resolve_session(first)
    with pytest.raises(StoreError, match="No session has an id starting with 'zzz'"):
        await store.resolve_session("zzz")
    with pytest.raises(StoreError, match="Give a session id"):
        await store.resolve_session("  ")


async def test_list_sessions_newest_activity_first(store: Store) -> None:
    a = await store.create_session(profile="generic", title="a")
    b = await store.create_session(profile="generic", title="b")
    child = await store.create_session(profile="oracle", parent_id=a.id)
    assert [s.title for s in await store.list_sessions(parent_id=None)] == ["b", "a"]
    assert [s.id for s in await store.list_sessions()] == [child.id, b.id, a.id]
    assert [s.id for s in await store.list_sessions(parent_id=a.id)] == [child.id]
    assert len(await store.list_sessions(limit=2)) == 2
    assert (await store.latest_session()).id == b.id  # type: ignore[union-attr]
    await store.append_message(a.id, Message.user("back to a"))  # activity moves a to the top
    assert [s.title for s in await store.list_sessions(parent_id=None)] == ["a", "b"]
    assert (await store.latest_session()).id == a.id  # type: ignore[union-attr]
    assert (await store.latest_session(parent_id=...)).id == a.id  # type: ignore[union-attr]


async def test_latest_session_with_messages_skips_one_left_empty(store: Store) -> None:
    """`--continue` (the app's and `yeetui run`'s) reopens the latest session something was said in."""
    talked = await store.create_session(profile="generic", title="talked")
    await store.append_message(talked.id, Message.user("hello"))
    await store.create_session(profile="generic", title="empty")
    assert (await store.latest_session(with_messages=True)).id == talked.id  # type: ignore[union-attr]
    assert (await store.latest_session()).title == "empty"  # type: ignore[union-attr]


async def test_latest_session_empty_store(store: Store) -> None:
    assert await store.latest_session() is None
    assert await store.list_sessions() == []


async def test_children_and_descendants(store: Store) -> None:
    root = await store.create_session(profile="orchestrator")
    c1 = await store.create_session(profile="planner", parent_id=root.id)
    c2 = await store.create_session(profile="builder", parent_id=root.id)
    g1 = await store.create_session(profile="reviewer", parent_id=c2.id)
    other = await store.create_session(profile="generic")
    assert [s.id for s in await store.children(root.id)] == [c1.id, c2.id]
    assert [s.id for s in await store.descendants(root.id)] == [c1.id, c2.id, g1.id]
    assert await store.children(other.id) == []


async def test_update_session(store: Store, tmp_path: Path) -> None:
    session = await store.create_session(profile="generic")
    await asyncio.sleep(0.002)
    updated = await store.update_session(session.id, title="renamed", model="openai/gpt-5", cwd=tmp_path,
                                         workspace={"mode": "shared"}, status="archived")
    assert (updated.title, updated.model, updated.cwd, updated.status) == (
        "renamed", "openai/gpt-5", tmp_path, "archived")
    assert updated.workspace == {"mode": "shared"}
    assert updated.updated_at > session.updated_at and updated.created_at == session.created_at
    cleared = await store.update_session(session.id, workspace=None, cwd=None)
    assert (cleared.workspace, cleared.cwd) == (None, None)
    with pytest.raises(TypeError, match="cannot change depth, key"):
        await store.update_session(session.id, key="x", depth=3)
    with pytest.raises(StoreError, match="no session missing"):
        await store.update_session("missing", title="x")


async def test_delete_session_cascades(store: Store) -> None:
    root = await store.create_session(profile="orchestrator")
    child = await store.create_session(profile="builder", parent_id=root.id)
    run = await store.create_run(session_id=child.id, profile="builder", model=None, prompt="go")
    await store.append_message(child.id, Message.user("hi"), run_id=run.id)
    keep = await store.create_session(profile="generic")
    await store.delete_session(root.id)
    assert await store.get_session(child.id) is None
    assert await store.get_run(run.id) is None
    assert await store.messages(child.id) == []
    assert [s.id for s in await store.list_sessions()] == [keep.id]
    with pytest.raises(StoreError, match=f"no session {root.id}"):
        await store.delete_session(root.id)


# ----- messages ------------------------------------------------------------------------------------------


async def test_messages_round_trip_every_part_kind(store: Store) -> None:
    session = await store.create_session(profile="generic")
    run = await store.create_run(session_id=session.id, profile="generic", model="m", prompt="p")
    originals = _all_part_kinds()
    ids = [await store.append_message(session.id, m, run_id=run.id) for m in originals]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    stored = await store.messages(session.id)
    assert [s.message for s in stored] == originals
    assert [s.seq for s in stored] == [1, 2, 3, 4]
    assert [s.id for s in stored] == ids
    assert {s.run_id for s in stored} == {run.id} and not any(s.partial for s in stored)
    assert await store.count_messages(session.id) == 4
    dumped = json.loads(json.dumps(stored[1].to_json()))
    assert Message.model_validate(dumped["message"]) == originals[1]
    assert await store.get_message(ids[2]) == stored[2]
    assert await store.get_message(10_000) is None


async def test_partial_message_checkpoint_flow(store: Store) -> None:
    session = await store.create_session(profile="generic")
    await store.append_message(session.id, Message.user("hello"))
    mid = await store.append_message(session.id, Message.assistant("Hel"), partial=True)
    assert [m.partial for m in await store.messages(session.id)] == [False, True]
    assert await store.count_messages(session.id, include_partial=False) == 1
    assert [m.message.text for m in await store.messages(session.id, include_partial=False)] == ["hello"]
    await store.update_message(mid, Message.assistant("Hello, wor"), partial=True)
    checkpoint = await store.get_message(mid)
    assert checkpoint is not None and checkpoint.partial and checkpoint.message.text == "Hello, wor"
    final = Message(role="assistant", parts=(TextPart(text="Hello, world"),
                                             ToolCallPart(id="c", name="glob", arguments={"p": "*"})))
    await store.update_message(mid, final, partial=False)
    done = await store.get_message(mid)
    assert done is not None and not done.partial and done.message == final and done.seq == 2
    assert done.updated_at >= done.created_at


async def test_discarding_a_partial_message(store: Store) -> None:
    session = await store.create_session(profile="generic")
    first = await store.append_message(session.id, Message.user("q"))
    mid = await store.append_message(session.id, Message.assistant("diverged"), partial=True)
    await store.delete_message(mid)
    assert [m.id for m in await store.messages(session.id)] == [first]
    with pytest.raises(StoreError, match=f"no message {mid}"):
        await store.delete_message(mid)
    with pytest.raises(StoreError, match=f"no message {mid}"):
        await store.update_message(mid, Message.assistant("x"), partial=False)
    nxt = await store.append_message(session.id, Message.assistant("again"))
    assert (await store.get_message(nxt)).seq == 2  # type: ignore[union-attr]


async def test_messages_limit_and_after_seq(store: Store) -> None:
    session = await store.create_session(profile="generic")
    for i in range(10):
        await store.append_message(session.id, Message.user(f"m{i}"))
    assert [m.message.text for m in await store.messages(session.id, limit=3)] == ["m7", "m8", "m9"]
    assert await store.messages(session.id, limit=0) == []
    assert [m.seq for m in await store.messages(session.id, after_seq=8)] == [9, 10]
    assert [m.seq for m in await store.messages(session.id, after_seq=2, limit=2)] == [9, 10]
    assert await store.messages("unknown") == [] and await store.count_messages("unknown") == 0


async def test_message_seq_is_per_session(store: Store) -> None:
    a = await store.create_session(profile="generic")
    b = await store.create_session(profile="generic")
    await store.append_message(a.id, Message.user("a1"))
    await store.append_message(b.id, Message.user("b1"))
    await store.append_message(a.id, Message.user("a2"))
    assert [m.seq for m in await store.messages(a.id)] == [1, 2]
    assert [m.seq for m in await store.messages(b.id)] == [1]


async def test_append_message_errors(store: Store) -> None:
    with pytest.raises(StoreError, match="no session ghost"):
        await store.append_message("ghost", Message.user("x"))
    session = await store.create_session(profile="generic")
    with pytest.raises(StoreError, match="no run ghost-run"):
        await store.append_message(session.id, Message.user("x"), run_id="ghost-run")
    assert await store.count_messages(session.id) == 0


async def test_concurrent_appends_in_one_store_keep_order_unique(store: Store) -> None:
    session = await store.create_session(profile="generic")
    ids = await asyncio.gather(*(store.append_message(session.id, Message.user(str(i))) for i in range(50)))
    stored = await store.messages(session.id)
    assert sorted(ids) == [m.id for m in stored]
    assert [m.seq for m in stored] == list(range(1, 51))


async def test_cancelled_writes_leave_no_open_transaction(store: Store) -> None:
    session = await store.create_session(profile="generic")
    for ticks in range(12):  # cancel at every point of an append: before, inside and after its transaction
        task = asyncio.create_task(store.append_message(session.id, Message.user(f"t{ticks}")))
        for _ in range(ticks):
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert not store._connection().in_transaction
    await store.append_message(session.id, Message.user("after"))
    stored = await store.messages(session.id)
    assert stored[-1].message.text == "after"
    assert [m.seq for m in stored] == list(range(1, len(stored) + 1))


async def test_corrupt_message_json_is_reported_not_swallowed(store: Store) -> None:
    session = await store.create_session(profile="generic")
    mid = await store.append_message(session.id, Message.user("x"))
    await store.transaction("corrupt a row", lambda conn: conn.execute(
        "UPDATE messages SET body = '{\"role\": \"robot\"}' WHERE id = ?", (mid,)))
    with pytest.raises(StoreError, match=f"Message {mid} of session {session.id} is not a valid"):
        await store.messages(session.id)


_texts = st.text(max_size=200)
_parts = st.one_of(
    st.builds(TextPart, text=_texts),
    st.builds(ThinkingPart, text=_texts, signature=st.none() | _texts, redacted=st.booleans()),
    st.builds(ToolCallPart, id=_texts, name=_texts,
              arguments=st.dictionaries(_texts, st.none() | st.booleans() | st.integers() | _texts,
                                        max_size=4)),
    st.builds(ToolResultPart, call_id=_texts, name=_texts, content=_texts, is_error=st.booleans()),
)
_messages = st.builds(Message, role=st.sampled_from(["user", "assistant", "tool"]),
                      parts=st.lists(_parts, max_size=5).map(tuple),
                      meta=st.dictionaries(_texts, st.integers() | _texts, max_size=3))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(_messages, min_size=1, max_size=4))
def test_any_message_round_trips(tmp_path: Path, batch: list[Message]) -> None:
    async def scenario() -> list[Message]:
        async with await Store.open(tmp_path / "prop.db") as store:
            session = await store.create_session(profile="generic")
            for message in batch:
                await store.append_message(session.id, message)
            return [m.message for m in await store.messages(session.id)]

    assert asyncio.run(scenario()) == batch


async def test_pages_either_way_through_a_session(store: Store) -> None:
    session = await store.create_session(profile="generic")
    ids = [await store.append_message(session.id, Message.user(f"m{i}")) for i in range(10)]
    other = await store.create_session(profile="generic")
    await store.append_message(other.id, Message.user("elsewhere"))

    def texts(page: list) -> list[str]:
        return [m.message.text for m in page]

    assert texts(await store.messages(session.id, limit=3, from_start=True)) == ["m0", "m1", "m2"]
    assert texts(await store.messages(session.id, limit=3)) == ["m7", "m8", "m9"]
    assert texts(await store.messages(session.id, limit=3, from_start=True, after_id=ids[2])) == ["m3", "m4", "m5"]
    assert texts(await store.messages(session.id, limit=3, before_id=ids[5])) == ["m2", "m3", "m4"]
    assert texts(await store.messages(session.id, after_id=ids[6], before_id=ids[9])) == ["m7", "m8"]
    assert texts(await store.messages(session.id, limit=5, from_start=True, after_id=ids[8])) == ["m9"]
