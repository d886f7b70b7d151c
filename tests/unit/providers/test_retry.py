"""stream_with_retry's own logic, driven by an in-process provider that replays scripted attempts.

(The same wrapper against the real SDKs and the fake server is in test_providers_anthropic.py and
test_providers_litellm.py.)
"""

from __future__ import annotations

import random
from collections.abc import AsyncGenerator, AsyncIterator
from typing import cast

import pytest

from yeetui.errors import ProviderError
from yeetui.messages import Message, Usage
from yeetui.providers.base import ModelRequest, StreamDone, StreamItem, TextChunk, ThinkingChunk, ToolCallChunk
from yeetui.providers.retry import Restarted, backoff_delay, stream_with_retry

REQUEST = ModelRequest(model="m", system="", messages=[Message.user("hi")])
OVERLOADED = ProviderError("Anthropic is overloaded", status=529, retryable=True)


def done(text: str) -> StreamDone:
    return StreamDone(Message.assistant(text), Usage(output_tokens=1), "end_turn")


class ScriptedProvider:
    """Each call replays the next attempt: a list of items, optionally ending in an exception."""

    name = "scripted"

    def __init__(self, *attempts: list) -> None:
        self.attempts = list(attempts)
        self.calls = 0
        self.closed = 0

    def missing_credentials(self) -> str | None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator:
        attempt = self.attempts[self.calls]
        self.calls += 1
        try:
            for item in attempt:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.closed += 1


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


async def collect(provider, **kw) -> list:
    kw.setdefault("sleep", Sleeps())
    return [item async for item in stream_with_retry(provider, REQUEST, **kw)]


def shown_text(items: list) -> str:
    """What a consumer displays: text since the last Restarted."""
    text = ""
    for item in items:
        if isinstance(item, Restarted):
            text = ""
        elif isinstance(item, TextChunk):
            text += item.text
    return text


async def test_success_passes_through_untouched() -> None:
    items = [ThinkingChunk("hm"), TextChunk("Hel"), TextChunk("lo"), ToolCallChunk("c1", "bash"),
             done("Hello")]
    assert await collect(ScriptedProvider(items)) == items


async def test_retry_after_partial_text_yields_only_the_extension() -> None:
    provider = ScriptedProvider(
        [TextChunk("Hel"), TextChunk("lo "), OVERLOADED],
        [TextChunk("He"), TextChunk("llo wor"), TextChunk("ld"), done("Hello world")],
    )
    items = await collect(provider)
    assert [i for i in items if isinstance(i, TextChunk)] == [
        TextChunk("Hel"), TextChunk("lo "), TextChunk("wor"), TextChunk("ld"),
    ]
    assert not any(isinstance(i, Restarted) for i in items)
    assert isinstance(items[-1], StreamDone) and provider.calls == 2


async def test_thinking_and_tool_calls_are_deduplicated_too() -> None:
    provider = ScriptedProvider(
        [ThinkingChunk("plan"), TextChunk("ok"), ToolCallChunk("c1", "bash"), OVERLOADED],
        [ThinkingChunk("pl"), ThinkingChunk("an"), TextChunk("ok"), ToolCallChunk("c1", "bash"),
         ToolCallChunk("c2", "grep"), done("ok")],
    )
    items = await collect(provider)
    assert items[:4] == [ThinkingChunk("plan"), TextChunk("ok"), ToolCallChunk("c1", "bash"),
                         ToolCallChunk("c2", "grep")]
    assert isinstance(items[4], StreamDone) and len(items) == 5


async def test_divergent_retry_yields_restarted_then_the_new_text_from_the_start() -> None:
    provider = ScriptedProvider(
        [TextChunk("Hello"), OVERLOADED],
        [TextChunk("Hel"), TextChunk("p me"), TextChunk("!"), done("Help me!")],
    )
    items = await collect(provider)
    restart = next(i for i, item in enumerate(items) if isinstance(item, Restarted))
    assert items[:restart] == [TextChunk("Hello")]
    assert items[restart + 1:restart + 3] == [TextChunk("Help me"), TextChunk("!")]
    assert shown_text(items) == "Help me!"


async def test_a_new_tool_call_id_on_retry_restarts() -> None:
    provider = ScriptedProvider(
        [ToolCallChunk("c1", "bash"), OVERLOADED],
        [ToolCallChunk("c9", "bash"), done("")],
    )
    items = await collect(provider)
    assert items[:3] == [ToolCallChunk("c1", "bash"), Restarted(), ToolCallChunk("c9", "bash")]


async def test_retried_answer_shorter_than_what_was_shown_restarts_before_done() -> None:
    provider = ScriptedProvider([TextChunk("Hello world"), OVERLOADED], [TextChunk("Hello"), done("Hello")])
    items = await collect(provider)
    assert items[-3:-1] == [Restarted(), TextChunk("Hello")]
    assert shown_text(items) == "Hello"


async def test_non_retryable_error_propagates_at_once() -> None:
    provider = ScriptedProvider([ProviderError("Anthropic rejected the API key (401)", status=401)])
    sleeps = Sleeps()
    with pytest.raises(ProviderError, match="rejected the API key") as info:
        await collect(provider, sleep=sleeps)
    assert provider.calls == 1 and sleeps.delays == [] and "attempt" not in str(info.value)


async def test_gives_up_after_max_attempts_naming_the_count() -> None:
    provider = ScriptedProvider(*[[OVERLOADED]] * 3)
    retries: list[tuple[int, float, str]] = []
    with pytest.raises(ProviderError, match=r"overloaded \(gave up after 3 attempts\)") as info:
        await collect(provider, max_attempts=3, on_retry=lambda a, d, m: retries.append((a, d, m)))
    assert info.value.status == 529 and info.value.__cause__ is OVERLOADED
    assert [(a, m) for a, _, m in retries] == [(1, "Anthropic is overloaded"), (2, "Anthropic is overloaded")]
    assert provider.calls == 3 and provider.closed == 3


async def test_async_on_retry_is_awaited_and_delays_grow() -> None:
    provider = ScriptedProvider(*[[OVERLOADED]] * 4, [done("ok")])
    seen: list[int] = []

    async def on_retry(attempt: int, delay: float, message: str) -> None:
        seen.append(attempt)

    sleeps = Sleeps()
    items = await collect(provider, on_retry=on_retry, sleep=sleeps, base_delay=1.0, max_delay=30.0)
    assert isinstance(items[-1], StreamDone) and seen == [1, 2, 3, 4]
    for attempt, delay in enumerate(sleeps.delays, start=1):
        ceiling = 2 ** (attempt - 1)
        assert ceiling / 2 <= delay <= ceiling


async def test_retry_after_is_a_floor() -> None:
    slow = ProviderError("rate limited", status=429, retryable=True, retry_after=7)
    sleeps = Sleeps()
    await collect(ScriptedProvider([slow], [done("ok")]), sleep=sleeps, base_delay=0.01)
    assert sleeps.delays == [7]


def test_backoff_is_capped_and_jittered() -> None:
    rng = random.Random(1)
    delays = [backoff_delay(10, 1.0, 30.0, rng=rng) for _ in range(50)]
    assert all(15 <= d <= 30 for d in delays) and len(set(delays)) > 1
    assert backoff_delay(1, 1.0, 30.0, retry_after=10_000) == 60  # absurd retry-after is capped


async def test_consumer_stopping_early_closes_the_provider_stream() -> None:
    provider = ScriptedProvider([TextChunk("a"), TextChunk("b"), done("ab")])
    # an async generator (its aclose is what this is about), annotated as the AsyncIterator it is consumed as
    stream = cast(AsyncGenerator[StreamItem | Restarted, None], stream_with_retry(provider, REQUEST, sleep=Sleeps()))
    assert await anext(stream) == TextChunk("a")
    await stream.aclose()
    assert provider.closed == 1


async def test_max_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        await collect(ScriptedProvider([done("x")]), max_attempts=0)
