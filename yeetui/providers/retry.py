"""Retry one model turn across transient provider failures without showing any text twice.

A provider makes one attempt per call. When an attempt fails mid-stream, the next attempt starts the
answer over; this wrapper swallows the part of it the consumer has already seen and passes on only what
extends it. If the new answer diverges from what was shown, it yields `Restarted` (the consumer drops its
in-flight text, thinking and tool-call blocks for this turn) and then the new answer from its start.
"""

from __future__ import annotations

import asyncio
import inspect
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from yeetui.errors import ProviderError
from yeetui.providers.base import (
    ModelRequest,
    Provider,
    StreamDone,
    StreamItem,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
)

RETRY_AFTER_CAP = 60.0
"""A server's retry-after is honoured up to this many seconds (or max_delay, if larger)."""


@dataclass(frozen=True)
class Restarted:
    """The retried stream diverged from what was already yielded: discard this turn's in-flight output."""

    reason: str = "the retried answer differs from the one already shown"
    kind: Literal["restarted"] = "restarted"


OnRetry = Callable[[int, float, str], Awaitable[None] | None]


def backoff_delay(attempt: int, base_delay: float, max_delay: float, retry_after: float | None = None,
                  rng: random.Random | None = None) -> float:
    """Seconds to wait after failed attempt number `attempt` (1-based).

    Exponential (`base_delay * 2**(attempt-1)`, capped at `max_delay`) with "equal jitter" (between half
    and all of it), so concurrent sessions do not retry in lockstep. A server's retry-after is a floor.
    """
    ceiling = min(max_delay, base_delay * 2 ** (attempt - 1))
    delay: float = ceiling / 2 + (rng or random).uniform(0, ceiling / 2)
    if retry_after is not None and retry_after > 0:
        delay = max(delay, min(retry_after, max(max_delay, RETRY_AFTER_CAP)))
    return delay


@dataclass
class _Output:
    """Text, thinking and tool calls (id, name): what the consumer was shown in this turn since the last
    Restarted, or what the current attempt has produced so far."""

    text: str = ""
    thinking: str = ""
    calls: list[tuple[str, str]] = field(default_factory=list)

    def copy(self) -> _Output:
        return _Output(self.text, self.thinking, list(self.calls))

    def replay(self) -> list[StreamItem]:
        items: list[StreamItem] = [ThinkingChunk(self.thinking)] if self.thinking else []
        if self.text:
            items.append(TextChunk(self.text))
        items.extend(ToolCallChunk(id=cid, name=name) for cid, name in self.calls)
        return items


def _extend(shown: str, got: str) -> str | None:
    """The part of `got` to show given `shown` ('' if nothing new), or None if they diverge."""
    if len(got) <= len(shown):
        return "" if shown.startswith(got) else None
    return got[len(shown):] if got.startswith(shown) else None


async def _said(on_retry: OnRetry | None, attempt: int, delay: float, reason: str) -> None:
    """Tell `on_retry` (awaited when it returns an awaitable) of the wait before the next attempt."""
    if on_retry is not None:
        result = on_retry(attempt, delay, reason)
        if inspect.isawaitable(result):
            await result


async def stream_with_retry(
    provider: Provider,
    request: ModelRequest,
    *,
    max_attempts: int = 5,
    base_delay: float = 1.0,
    max_delay: float = 30.0,
    on_retry: OnRetry | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> AsyncIterator[StreamItem | Restarted]:
    """Stream one model turn, retrying retryable ProviderErrors with backoff.

    `on_retry(attempt, delay, message)` is called (and awaited, if it returns an awaitable) before each
    wait; `attempt` is the 1-based number of the attempt that failed. Non-retryable errors propagate at
    once; after `max_attempts` the last error is raised again with the attempt count in its message.
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
    shown = _Output()
    attempt = 0
    while True:
        attempt += 1
        got = _Output()
        stream = provider.stream(request)
        try:
            async for item in stream:
                if isinstance(item, StreamDone):
                    if got != shown:
                        # The finished answer is shorter than what was shown: the extra must go.
                        yield Restarted()
                        for replayed in got.replay():
                            yield replayed
                    yield item
                    return
                diverged, out = _dedupe(item, got, shown)
                if diverged:
                    yield Restarted()
                    shown = got.copy()
                    for replayed in got.replay():
                        yield replayed
                elif out is not None:
                    yield out
        except ProviderError as err:
            if not err.retryable:
                raise
            if attempt >= max_attempts:
                raise ProviderError(
                    f"{err} (gave up after {attempt} attempt{'s' if attempt > 1 else ''})",
                    status=err.status, retryable=err.retryable, retry_after=err.retry_after,
                ) from err
            delay = backoff_delay(attempt, base_delay, max_delay, err.retry_after)
            await _said(on_retry, attempt, delay, str(err))
            await sleep(delay)
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()


def _dedupe(item: StreamItem, got: _Output, shown: _Output) -> tuple[bool, StreamItem | None]:
    """Record `item` in `got`. Returns (diverged, what to yield now — None to swallow a repeat)."""
    if isinstance(item, TextChunk | ThinkingChunk):
        is_text = isinstance(item, TextChunk)
        before = shown.text if is_text else shown.thinking
        after = (got.text if is_text else got.thinking) + item.text
        if is_text:
            got.text = after
        else:
            got.thinking = after
        new = _extend(before, after)
        if new is None:
            return True, None
        if new:
            if is_text:
                shown.text = after
            else:
                shown.thinking = after
            return False, type(item)(new)
        return False, None
    if isinstance(item, ToolCallChunk):
        got.calls.append((item.id, item.name))
        n = len(got.calls)
        if n <= len(shown.calls):
            return shown.calls[n - 1] != got.calls[-1], None
        shown.calls.append(got.calls[-1])
        return False, item
    return False, item
