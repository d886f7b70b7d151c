"""The pair-programmer watcher: the `pair` profile follows one session and may interject.

A `PairWatcher` collects the watched session's new conversation from the bus (turns, tool calls with their
arguments, brief results). After `debounce` quiet seconds — no sooner than `min_interval` after its last run
and within `max_per_hour` runs — it runs the pair once on that delta, always in the same child session
(`agent:<profile>:watcher:<watched id>`), so the pair remembers what it saw and said. New activity never
interrupts a pair run; it goes out with the next one. The pair answers through `complete` with
`artifacts.severity`: none is silence; aside, concern and blocker are interjections (inbox items of the
watched session); a blocker is also announced in the watched conversation at its next turn, exactly once.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from contextlib import ExitStack
from typing import Any, Literal

from yeetui.bus import Bus
from yeetui.definitions.profiles import ProfileSet
from yeetui.events import (
    Event,
    InboxItemAdded,
    MessageCommitted,
    Notice,
    RunStatus,
    ToolCallStarted,
    WatcherChanged,
)
from yeetui.redact import redact
from yeetui.runs.launcher import RunLauncher
from yeetui.runs.spec import RunOptions
from yeetui.store import InboxItem, RunRecord, SessionRecord, Store
from yeetui.store.payloads import Interjection
from yeetui.subagents.inbox import Delivery
from yeetui.subagents.spawner import AgentSpawner, SpawnRefused
from yeetui.subagents.watcher.delta import (
    SEVERITIES,
    Chunk,
    Severity,
    blocker_announcement,
    is_noise,
    message_chunks,
    parse_verdict,
    render_delta,
    tool_call_chunk,
)
from yeetui.subagents.watcher.interjections import (
    INTERJECTION,
    WatcherError,
    WatcherStats,
    interjection_stats,
    mark_interjection,
)

log = logging.getLogger(__name__)

HOUR = 3600.0
MAX_PENDING = 400
"""Chunks kept while waiting to run (a long rate-limit wait); older ones are counted, not kept."""
EARLIER_MESSAGES = 30
"""Messages from before the watcher started shown with its first run, for context."""


class PairWatcher:
    """Watches one session; `start()`/`stop()` turn it on and off (or use `toggle_watcher`)."""

    def __init__(self, launcher: RunLauncher, spawner: AgentSpawner, delivery: Delivery, watched_session_id: str, *,
                 store: Store, bus: Bus, profiles: ProfileSet, profile: str = "pair",
                 debounce: float = 1.5, min_interval: float = 20.0,
                 max_per_hour: int = 30) -> None:
        if debounce < 0 or min_interval < 0 or max_per_hour < 1:
            raise WatcherError(f"Watcher limits must be debounce >= 0, min_interval >= 0 and max_per_hour >= 1; "
                               f"got {debounce}, {min_interval} and {max_per_hour}.")
        self.launcher = launcher
        self.spawner = spawner
        self.delivery = delivery
        self.store = store
        self.bus = bus
        self.profiles = profiles
        self.watched_session_id = watched_session_id
        self.profile = profile
        self.debounce = debounce
        self.min_interval = min_interval
        self.max_per_hour = max_per_hour
        self.session_id: str | None = None
        """The watcher's own session, set by `start()`."""
        self.label = profile
        self.model = ""
        self.counts = WatcherStats()
        """As of the last change; `stats()` reads them from the store."""
        self._active = False
        self._state: Literal["watching", "running", "off"] = "off"
        self._pending: list[Chunk] = []
        self._dropped = 0
        self._earlier: list[Chunk] = []
        self._seen_calls: set[str] = set()
        self._timer: asyncio.Task[None] | None = None
        self._run_task: asyncio.Task[None] | None = None
        self._run_id: str | None = None
        self._starts: deque[float] = deque()
        self._budget_noticed = False
        self._listening = ExitStack()

    @property
    def active(self) -> bool:
        return self._active

    @property
    def state(self) -> Literal["watching", "running", "off"]:
        return self._state

    @property
    def pending(self) -> int:
        """Chunks of conversation waiting for the next pair run."""
        return len(self._pending) + self._dropped

    # -- on and off ----------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._active:
            return
        watched = await self.store.get_session(self.watched_session_id)
        if watched is None:
            raise WatcherError(f"Cannot watch session {self.watched_session_id}: there is no such session in the "
                               f"store at {self.store.path}.")
        profile = self.profiles.get(self.profile)
        if not profile.has("watcher"):
            raise WatcherError(f"Profile {profile.name!r} cannot watch a session: its capabilities are "
                               f"{', '.join(profile.capabilities)}, without `watcher`.")
        # its tier follows the model the user chose for the conversation it watches, as a subagent's does
        self.model = self.launcher.models.resolve(profile, within=await self.launcher.models.tree_model(watched.id))
        session = await self._own_session(watched)
        self.session_id = session.id
        earlier = await self.store.messages(watched.id, include_partial=False)
        self._earlier = [c for m in earlier[-EARLIER_MESSAGES:] if not is_noise(m.message)
                         for c in message_chunks(m.message)]
        self.counts = await self.stats()
        self._listening.enter_context(self.bus.listen(self._on_event))
        self._active = True
        self._publish("watching")

    async def stop(self) -> None:
        """Turn off: no further pair runs; a pending debounce and a pair run in flight are cancelled."""
        if not self._active:
            return
        self._active = False
        self._listening.close()
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            await asyncio.gather(timer, return_exceptions=True)
        run_task = self._run_task
        if self._run_id is not None:
            self.spawner.abort(self._run_id)
        if run_task is not None:
            await asyncio.gather(run_task, return_exceptions=True)
        self._pending.clear()
        self._dropped = 0
        self._publish("off")

    async def wait_idle(self, timeout: float | None = None) -> None:
        """Wait until nothing is pending: no debounce, rate-limit wait or pair run (for tests and `yeetui run`)."""
        async with asyncio.timeout(timeout):
            while tasks := [t for t in (self._timer, self._run_task) if t is not None and not t.done()]:
                await asyncio.wait(tasks)

    async def _own_session(self, watched: SessionRecord) -> SessionRecord:
        """The watcher's child session: made once per watched session and profile, reused after a toggle."""
        key = f"agent:{self.profile}:watcher:{watched.id}"
        session = next((s for s in await self.store.children(watched.id) if s.key == key), None)
        if session is None:
            session = await self.launcher.new_session(
                self.profiles.get(self.profile), title=f"{self.profile} watching "
                f"{watched.title or watched.id[:8]}", parent_id=watched.id, key=key, model=self.model)
        runs = await self.store.list_runs(session_id=session.id, limit=1)
        self.label = (runs[0].label if runs and runs[0].label
                      else await self.launcher.allocate_label(self.profiles.get(self.profile)))
        return session

    # -- collecting the delta ------------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        if not self._active or getattr(event, "session_id", None) != self.watched_session_id:
            return
        if isinstance(event, MessageCommitted):
            chunks = [] if is_noise(event.message) else message_chunks(event.message)
        elif isinstance(event, ToolCallStarted) and event.call_id not in self._seen_calls:
            chunks = [tool_call_chunk(event.name, event.arguments, event.call_id)]
        else:
            return
        for chunk in chunks:
            if chunk.call_id is not None:
                if len(self._seen_calls) > 10_000:
                    self._seen_calls.clear()
                self._seen_calls.add(chunk.call_id)
        if chunks:
            self._pending.extend(chunks)
            if len(self._pending) > MAX_PENDING:
                self._dropped += len(self._pending) - MAX_PENDING
                del self._pending[:-MAX_PENDING]
            self._kick()

    def _kick(self) -> None:
        """(Re)start the debounce: the pair looks after `debounce` seconds without news."""
        if self._timer is not None and not self._timer.done():
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().create_task(self._debounced(), name=f"yeetui watcher {self.label}")

    async def _debounced(self) -> None:
        await asyncio.sleep(self.debounce)
        while self._active and self._pending and self._run_task is None:
            wait = self._rate_wait()
            if wait <= 0:
                self._run_task = asyncio.get_running_loop().create_task(self._run(), name=f"yeetui {self.label} run")
                return
            await asyncio.sleep(wait)

    def _rate_wait(self) -> float:
        """Seconds until the next run is allowed (0: now)."""
        now = asyncio.get_running_loop().time()
        while self._starts and self._starts[0] <= now - HOUR:
            self._starts.popleft()
        wait = self._starts[-1] + self.min_interval - now if self._starts else 0.0
        if len(self._starts) >= self.max_per_hour:
            wait = max(wait, self._starts[0] + HOUR - now)
            if not self._budget_noticed:
                self._budget_noticed = True
                self.bus.publish(Notice("info", f"{self.label} reached its limit of {self.max_per_hour} "
                                                f"runs an hour; it looks again in {max(1, round(wait / 60))} min.",
                                                self.watched_session_id))
        else:
            self._budget_noticed = False
        return wait

    # -- one pair run --------------------------------------------------------------------------------

    async def _run(self) -> None:
        chunks, dropped, earlier = self._pending, self._dropped, self._earlier
        self._pending, self._dropped, self._earlier = [], 0, []
        self._starts.append(asyncio.get_running_loop().time())
        try:
            record = await self._run_pair(render_delta(chunks, dropped=dropped, earlier=earlier))
            if record is not None and record.status == RunStatus.CANCELLED:
                if self._active:  # cancelled from outside (with the watched run's subtree): look again later
                    self._pending[:0] = chunks
            elif record is not None:
                await self._judge(record)
        except Exception as exc:  # the watcher must outlive one bad run; the user and the log hear about it
            log.exception("%s: a pair run of session %s failed", self.label, self.watched_session_id)
            self.bus.publish(Notice("error", f"{self.label} failed to look at the latest changes: {exc}",
                                    self.watched_session_id))
        finally:
            self._run_task = self._run_id = None
            if self._active:
                self._publish("watching")
                if self._pending:
                    self._kick()

    async def _run_pair(self, prompt: str) -> RunRecord | None:
        """Run the pair once in the watcher's session; the finished run record, or None if it never ran."""
        assert self.session_id is not None
        profile = self.profiles.get(self.profile)
        session = await self.store.get_session(self.session_id)
        assert session is not None
        options = RunOptions(timeout=profile.limits.timeout, deliver=False, parent_session_id=self.watched_session_id,
                             watcher=True)
        run = await self.launcher.create_run(session, profile, model=self.model,
                                             prompt=redact(prompt, self.launcher.secrets), label=self.label,
                                             options=options)
        if not self._active:
            await self.store.update_run(run.id, status=RunStatus.CANCELLED, error="the watcher was turned off")
            return None
        self._run_id = run.id
        self._publish("running")
        try:
            await self.spawner.start_existing(run.id, blocking=False)
        except SpawnRefused as exc:
            self.bus.publish(Notice("warning", f"{self.label} could not run: {exc}", self.watched_session_id))
            return None
        if not self.active:  # turned off while the run started (the property: mypy keeps `_active` narrowed)
            self.spawner.abort(run.id)
        try:
            await self.spawner.wait(run.id)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            # The pair run itself was cancelled (stop(), or the watched session's subtree); this task goes on.
        return await self.store.get_run(run.id)

    async def _judge(self, run: RunRecord) -> None:
        """Turn the pair's `complete` into silence, an interjection, or a notice."""
        if run.status in (RunStatus.FAILED, RunStatus.TIMEOUT, RunStatus.INTERRUPTED):
            self.bus.publish(Notice(
                "warning", f"{self.label} could not look at the latest changes ({run.status.value}: "
                f"{run.error or 'no reason given'}); it keeps watching.", self.watched_session_id))
            return
        verdict = parse_verdict(run.result) if run.status == RunStatus.COMPLETED else None
        if verdict is None:
            log.warning("%s: run %s ended %s without a valid `complete` (severity one of %s); no interjection",
                        self.label, run.id, run.status.value, ", ".join(SEVERITIES))
            return
        severity, text = verdict
        if severity == "none":
            return
        if not text:
            log.warning("%s: run %s gave severity %s but no text; no interjection", self.label, run.id, severity)
            return
        await self._interject(run.id, severity, text)

    async def _interject(self, run_id: str, severity: Severity, text: str) -> None:
        text = redact(text, self.launcher.secrets)
        blocker = severity == "blocker"
        data = Interjection(label=self.label, child_session_id=self.session_id, announce=blocker,
                            announcement=blocker_announcement(self.label, text) if blocker else None,
                            severity=severity, watcher_session_id=self.session_id, run_id=run_id).to_data()
        item, created = await self.store.inbox.put(
            session_id=self.watched_session_id, run_id=run_id, kind=INTERJECTION, title=f"{self.label}: {severity}",
            body=text, data=data, dedupe_key=f"interjection:{run_id}")
        if created:
            self.bus.publish(InboxItemAdded(item.id, self.watched_session_id, run_id, INTERJECTION, item.title,
                                            item.body, data))
        if severity == "blocker" and not self.delivery.is_active(self.watched_session_id):
            await self.delivery.flush(self.watched_session_id)  # else its next turn (or its end) announces it
        self.counts = await self.stats()

    # -- counts --------------------------------------------------------------------------------------

    async def mark(self, item_id: int, accepted: bool) -> InboxItem:
        """The user accepted (→ read) or dismissed an interjection of this watcher."""
        item = await self.store.inbox.get(item_id)
        if item is None or item.session_id != self.watched_session_id:
            raise WatcherError(f"Inbox item {item_id} is not an interjection for session {self.watched_session_id}.")
        item = await mark_interjection(self.store, item_id, accepted=accepted)
        self.counts = await self.stats()
        self._publish(self._state)
        return item

    async def stats(self) -> WatcherStats:
        return await interjection_stats(self.store, self.watched_session_id, self.session_id)

    def _publish(self, state: Literal["watching", "running", "off"]) -> None:
        self._state = state
        c = self.counts
        self.bus.publish(WatcherChanged(self.session_id or "", self.watched_session_id, self.label, state,
                                        c.interjections, c.accepted, c.dismissed, self.profile, self.model))


class Watchers:
    """The pair watchers of one runtime, at most one per watched session: what `/pair` and the hotkey toggle."""

    def __init__(self, launcher: RunLauncher, spawner: AgentSpawner, delivery: Delivery, *, store: Store, bus: Bus,
                 profiles: ProfileSet) -> None:
        self.launcher = launcher
        self.spawner = spawner
        self.delivery = delivery
        self.store = store
        self.bus = bus
        self.profiles = profiles
        self._by_session: dict[str, PairWatcher] = {}

    def watcher(self, session_id: str, **kw: Any) -> PairWatcher:
        """A new watcher of `session_id`, not started and not registered (`toggle` does both)."""
        return PairWatcher(self.launcher, self.spawner, self.delivery, session_id, store=self.store, bus=self.bus,
                           profiles=self.profiles, **kw)

    def get(self, session_id: str) -> PairWatcher | None:
        """The active watcher of `session_id`, if any."""
        watcher = self._by_session.get(session_id)
        return watcher if watcher is not None and watcher.active else None

    async def toggle(self, session_id: str, **kw: Any) -> PairWatcher | None:
        """Turn the watcher of `session_id` on (returns it) or off (returns None)."""
        current = self._by_session.pop(session_id, None)
        if current is not None and current.active:
            await current.stop()
            return None
        watcher = self.watcher(session_id, **kw)
        await watcher.start()
        self._by_session[session_id] = watcher
        return watcher

    async def stop_all(self) -> None:
        """Turn off every watcher (before the runtime closes)."""
        for watcher in list(self._by_session.values()):
            await watcher.stop()
        self._by_session.clear()
