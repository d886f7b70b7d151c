"""A small async publish/subscribe bus for domain events.

`publish` never blocks and never raises because of a subscriber: each subscriber has its own unbounded
queue (async iteration) or is a plain callback. A failing callback is reported and skipped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager

from yeetui.events import Event

log = logging.getLogger(__name__)

Callback = Callable[[Event], None]


class Bus:
    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[Event]] = set()
        self._callbacks: list[Callback] = []

    def publish(self, event: Event) -> None:
        for queue in self._queues:
            queue.put_nowait(event)
        for callback in list(self._callbacks):
            try:
                callback(event)
            except Exception:  # a broken listener must not break the agent loop
                log.exception("bus subscriber %r failed on %s", callback, event.kind)

    @contextmanager
    def listen(self, callback: Callback) -> Iterator[None]:
        """Call `callback` for every event published while the block runs."""
        self._callbacks.append(callback)
        try:
            yield
        finally:
            self._callbacks.remove(callback)

    def add_listener(self, callback: Callback) -> None:
        self._callbacks.append(callback)

    async def subscribe(self) -> AsyncIterator[Event]:
        """Iterate events from now on; stop iterating to unsubscribe."""
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self._queues.add(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._queues.discard(queue)
