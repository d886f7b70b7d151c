"""An external agent that goes silent with a tool call open: after `quiet_after` seconds without a word from
it, and while nobody is being asked anything on its behalf, the run says it waits on the agent and why — in
the ledger (its progress) and once in the conversation — and how to stop it. OpenCode, for one, passes no
`task` child's permission question over ACP: its child waits for an answer nobody is asked for."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from yeetui.bus import Bus
from yeetui.events import Notice, RunProgress
from yeetui.text import seconds_text

MAX_OPEN = 200
"""Open tool calls tracked (an agent flooding starts is not followed further)."""


class QuietWatch:
    def __init__(self, bus: Bus, run_id: str, session_id: str, label: str, command: str,
                 quiet_after: float) -> None:
        self.bus, self.run_id, self.session_id, self.label = bus, run_id, session_id, label
        self.command, self.quiet_after = command, quiet_after
        self._open: set[str] = set()
        self._asking = 0
        self._heard_at: float | None = None

    def heard(self) -> None:
        """The agent sent something."""
        self._heard_at = asyncio.get_running_loop().time()

    def opened(self, call_id: str) -> None:
        if len(self._open) < MAX_OPEN:
            self._open.add(call_id)

    def closed(self, call_id: str) -> None:
        self._open.discard(call_id)

    @contextlib.contextmanager
    def asking(self) -> Iterator[None]:
        """One of its questions is being asked: the wait is the user's then, not the agent's."""
        self._asking += 1
        try:
            yield
        finally:
            self._asking -= 1
            self.heard()

    def said(self, quiet: float) -> str:
        return (f"waiting on {self.command}: no word from it for {seconds_text(quiet)} while its tool call is open; "
                "it may be waiting for a permission it does not pass on (OpenCode asks none for a `task` subagent "
                f"over ACP) — cancel the run to stop it (`/cancel! {self.label}`, or `yeetui agents cancel "
                f"{self.run_id[:12]}`)")

    async def watch(self) -> None:
        """Look every few seconds until cancelled (with the run)."""
        loop = asyncio.get_running_loop()
        if self._heard_at is None:
            self._heard_at = loop.time()
        told_for: float | None = None
        while True:
            await asyncio.sleep(min(self.quiet_after / 4, 5.0))
            quiet = loop.time() - self._heard_at
            if not self._open or self._asking or quiet < self.quiet_after:
                if told_for is not None and quiet < self.quiet_after:
                    told_for = None
                    self.bus.publish(RunProgress(self.run_id, self.session_id, "working again"))
                continue
            if told_for == self._heard_at:
                continue
            told_for = self._heard_at
            text = self.said(quiet)
            self.bus.publish(RunProgress(self.run_id, self.session_id, text))
            self.bus.publish(Notice("warning", f"{self.label} is {text}.", self.session_id))
