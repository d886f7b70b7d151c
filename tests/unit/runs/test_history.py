"""repair_history: a stored conversation left behind by a dead process becomes one a provider accepts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from yeetui.messages import INTERRUPTED_RESULT, Message, TextPart, ToolCallPart, ToolResultPart
from yeetui.runs.history import repair_history
from yeetui.store import Store

CALL = ToolCallPart(id="c1", name="bash", arguments={"command": "sleep 30"})


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "data" / "yeetui.db") as opened:
        yield opened


async def _stored(store: Store, session_id: str) -> list[Message]:
    return [row.message for row in await store.messages(session_id)]


async def test_a_dangling_call_is_answered_once_and_stored(store: Store) -> None:
    session = await store.create_session(profile="generic")
    await store.append_message(session.id, Message.user("run it"))
    await store.append_message(session.id, Message(role="assistant", parts=(TextPart(text="Running."), CALL)))
    history = await repair_history(store, session.id)
    assert [m.role for m in history] == ["user", "assistant", "tool"]
    (answer,) = history[-1].tool_results
    assert (answer.call_id, answer.name, answer.is_error, answer.content) == ("c1", "bash", True, INTERRUPTED_RESULT)
    assert await _stored(store, session.id) == history
    assert await repair_history(store, session.id) == history  # written back: nothing left to repair
    assert len(await store.messages(session.id)) == 3


async def test_a_partial_reply_keeps_its_text_and_loses_its_calls(store: Store) -> None:
    session = await store.create_session(profile="generic")
    await store.append_message(session.id, Message.user("tell me"))
    await store.append_message(session.id, Message(role="assistant", parts=(TextPart(text="Once upon"), CALL)),
                               partial=True)
    history = await repair_history(store, session.id)
    assert [m.role for m in history] == ["user", "assistant"]
    assert history[-1].parts == (TextPart(text="Once upon"),) and history[-1].meta == {"interrupted": True}
    assert [row.partial for row in await store.messages(session.id)] == [False, False]


async def test_an_empty_partial_reply_is_deleted(store: Store) -> None:
    session = await store.create_session(profile="generic")
    await store.append_message(session.id, Message.user("hi"))
    await store.append_message(session.id, Message(role="assistant"), partial=True)
    assert await repair_history(store, session.id) == [Message.user("hi")]
    assert await _stored(store, session.id) == [Message.user("hi")]


async def test_an_answer_that_belongs_mid_history_is_returned_not_appended(store: Store) -> None:
    """The store only appends: an answer stored after the later user message would be out of place."""
    session = await store.create_session(profile="generic")
    await store.append_message(session.id, Message.user("run it"))
    await store.append_message(session.id, Message(role="assistant", parts=(CALL,)))
    await store.append_message(session.id, Message.user("are you there?"))
    history = await repair_history(store, session.id)
    assert [m.role for m in history] == ["user", "assistant", "tool", "user"]
    assert len(await store.messages(session.id)) == 3
    assert await repair_history(store, session.id) == history


async def test_orphaned_results_are_not_sent(store: Store) -> None:
    session = await store.create_session(profile="generic")
    await store.append_message(session.id, Message.user("hi"))
    await store.append_message(session.id, Message(role="tool", parts=(
        ToolResultPart(call_id="gone", content="?"),)))
    assert await repair_history(store, session.id) == [Message.user("hi")]
