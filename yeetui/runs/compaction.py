"""Context compaction: a model-written summary replaces the earlier turns in what the model is sent.

`/compact` does it on request (`RunLauncher.compact`); the runner does it by itself when a turn's input
nears the context limit.
The full transcript stays in the store — only the provider's view starts at the latest summary message
(see yeetui.runs.history).
"""

from __future__ import annotations

from collections.abc import Sequence

from yeetui.errors import ProviderError
from yeetui.messages import Message, Usage
from yeetui.providers.base import ModelRequest, Provider, StreamDone
from yeetui.providers.retry import stream_with_retry
from yeetui.runs.spawn_context import render_compact
from yeetui.store import Store
from yeetui.text import cap

SUMMARY_PROMPT = """You are compacting a coding-agent conversation so it can continue in a fresh context.
Write a summary that lets the agent carry on without the transcript:
- the user's goal and every explicit instruction or preference they gave;
- decisions made and why; approaches tried that failed;
- files read or changed (paths), commands run and their important results;
- the current state of the work and the very next step.
Be specific (names, paths, numbers). Markdown, at most about 800 words. Output only the summary."""

TRANSCRIPT_CAP = 400_000
"""Characters of transcript sent for summarising; older ones are dropped first."""


def compaction_message(summary: str) -> Message:
    return Message.user(f"[Summary of the conversation so far — earlier turns were compacted]\n\n{summary}",
                        compaction=True)


async def summarise(provider: Provider, model: str, history: Sequence[Message], *,
                    max_tokens: int = 4096) -> tuple[str, Usage]:
    """One tool-less model call that returns the summary text."""
    transcript = render_compact(list(history))
    transcript = cap(transcript, TRANSCRIPT_CAP, keep="tail")
    request = ModelRequest(model=model, system=SUMMARY_PROMPT, max_tokens=max_tokens,
                           messages=[Message.user(f"<transcript>\n{transcript}\n</transcript>\n\nSummarise it.")])
    done: StreamDone | None = None
    async for item in stream_with_retry(provider, request, max_attempts=3):
        if isinstance(item, StreamDone):
            done = item
    if done is None or not done.message.text.strip():
        raise ProviderError("the model returned an empty summary; nothing was compacted")
    return done.message.text.strip(), done.usage


async def redeliver_unseen(store: Store, session_id: str, *, compacted_at: str,
                           run_id: str | None) -> list[tuple[int, Message]]:
    """Children's results that reached `session_id` before a compaction at `compacted_at` and that no model turn
    of it has seen: delivered again after the summary (which may have left them out), once — read from the
    store's delivery state, never from the transcript. The (message id, message) pairs appended, in order."""
    appended: list[tuple[int, Message]] = []
    for item in await store.announcements.unseen_before(session_id, compacted_at):
        told = item.payload
        message = Message.user(told.announcement or item.title, announcement=True, redelivered=True,
                               run_id=item.run_id, label=told.label, child_session_id=told.child_session_id,
                               status=told.status)
        message_id = await store.announcements.redeliver(item.id, message, run_id=run_id)
        if message_id is not None:
            appended.append((message_id, message))
    return appended
