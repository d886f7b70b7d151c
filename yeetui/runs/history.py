"""Repairs a stored conversation so a provider accepts it after a crash or kill.

Two things can be left behind by a process that died mid-run: an assistant message still marked partial
(its streamed text is kept, finalised with `meta.interrupted`), and tool calls with no result (each gets a
synthetic error result). Both repairs are written back, so they happen once.
"""

from __future__ import annotations

from yeetui.messages import Message, TextPart, ToolResultPart
from yeetui.store import Store

INTERRUPTED_RESULT = "Interrupted: the run stopped before this tool call finished; its effect is unknown."


async def repair_history(store: Store, session_id: str) -> list[Message]:
    """Finalise partial messages and close dangling tool calls. Returns the usable history."""
    stored = await store.messages(session_id)
    history: list[Message] = []
    merged_results: dict[int, Message] = {}
    for index, row in enumerate(stored):
        message = merged_results.get(index, row.message)
        if row.partial:
            parts = tuple(p for p in message.parts if isinstance(p, TextPart) and p.text)
            if not parts:
                await store.delete_message(row.id)
                continue
            message = message.model_copy(update={"parts": parts, "meta": {**message.meta, "interrupted": True}})
            await store.update_message(row.id, message, partial=False)
        history.append(message)
        calls = message.tool_calls if message.role == "assistant" else []
        if not calls:
            continue
        following = stored[index + 1].message if index + 1 < len(stored) else None
        answered = {p.call_id for p in following.tool_results} if following and following.role == "tool" else set()
        missing = [c for c in calls if c.id not in answered]
        if not missing:
            continue
        results = tuple(ToolResultPart(call_id=c.id, name=c.name, content=INTERRUPTED_RESULT, is_error=True)
                        for c in missing)
        if following is not None and following.role == "tool":
            # Merge into the existing results message so one tool message answers one assistant message.
            merged = following.model_copy(update={"parts": following.parts + results})
            await store.update_message(stored[index + 1].id, merged, partial=False)
            merged_results[index + 1] = merged
        else:
            synthetic = Message(role="tool", parts=results, meta={"interrupted": True})
            await store.append_message(session_id, synthetic, run_id=row.run_id)
            history.append(synthetic)
    return since_compaction(history)


def since_compaction(history: list[Message]) -> list[Message]:
    """What the model is sent: everything from the latest compaction summary on (all of it if none)."""
    for index in range(len(history) - 1, -1, -1):
        if history[index].meta.get("compaction"):
            return history[index:]
    return history

