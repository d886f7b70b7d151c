"""Repairs a stored conversation so a provider accepts it after a crash or kill.

Two things can be left behind by a process that died mid-run: an assistant message still marked partial
(its streamed text is kept, finalised with `meta.interrupted`), and tool calls with no result. The calls are
answered as everywhere else, by `yeetui.messages.pair_tool_results` (a synthetic error result each, which
also drops results whose call is gone). Both repairs are written back, so they happen once — except answers
that belong between two stored messages: the store only appends, so those are added again, identically,
each time the history is read (and orphaned results stay stored, dropped each time).
"""

from __future__ import annotations

from yeetui.messages import Message, TextPart, pair_tool_results_with_sources
from yeetui.store import Store


async def repair_history(store: Store, session_id: str) -> list[Message]:
    """Finalise partial messages and answer dangling tool calls. Returns the usable history."""
    history: list[Message] = []
    last_run_id: str | None = None
    for row in await store.messages(session_id):
        message = row.message
        if row.partial:
            parts = tuple(p for p in message.parts if isinstance(p, TextPart) and p.text)
            if not parts:
                await store.delete_message(row.id)
                continue
            message = message.model_copy(update={"parts": parts, "meta": {**message.meta, "interrupted": True}})
            await store.update_message(row.id, message, partial=False)
        history.append(message)
        last_run_id = row.run_id
    paired = list(pair_tool_results_with_sources(history))
    if paired and paired[-1][1] is None:  # the calls of the last assistant message went unanswered
        await store.append_message(session_id, paired[-1][0], run_id=last_run_id)
    return since_compaction([message for message, _ in paired])


def since_compaction(history: list[Message]) -> list[Message]:
    """What the model is sent: everything from the latest compaction summary on (all of it if none)."""
    for index in range(len(history) - 1, -1, -1):
        if history[index].meta.get("compaction"):
            return history[index:]
    return history
