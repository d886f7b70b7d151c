"""Scheduled agents, the use case: add, list, pause, resume, remove, run now, and fire what is due — from
`yeetui schedule daemon` and from every running yeetui TUI at once, each trigger exactly once (the store's claim
decides; see yeetui.store.schedules).

A fired trigger is an ordinary detached run of the schedule's project (`yeetui agents start` in that folder, with
`--yes` only when the schedule was added with it, and its budget): it shows in `agents list` and the ledger like
any other. Its session is titled after the trigger, and the launch holds its scheduler's lease
(yeetui.scheduling.leases): a scheduler killed while launching leaves a claim that nobody takes over until the
launch is over, and the taker records the run the launch started, if it did, instead of starting another.

A schedule whose runs fail `PAUSE_AFTER` times in a row is paused with a notice, never retried forever; a trigger
missed while no yeetui ran is skipped or run once on wake, as the schedule says.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from yeetui import paths
from yeetui.bus import Bus
from yeetui.definitions.profile_loader import load_profiles
from yeetui.errors import YeetuiError
from yeetui.events import Notice
from yeetui.resources import builtin_dir
from yeetui.runs.budget import Budget
from yeetui.scheduling import leases
from yeetui.scheduling.times import check, describe_spec, next_after, readable_moment
from yeetui.settings.trust import is_trusted
from yeetui.store import Store
from yeetui.store.liveness import pid_alive
from yeetui.store.records import utcnow
from yeetui.store.schedules import Fire, ScheduleRecord
from yeetui.system.processes import yeetui_command

__all__ = ["PAUSE_AFTER", "Fire", "Launching", "ScheduleRecord", "Scheduler", "describe_fire", "describe_spec",
           "describe_state", "launch_detached", "local_time", "profile_names", "trigger_title"]

log = logging.getLogger(__name__)

PAUSE_AFTER = 3
"""Failed runs in a row after which a schedule is paused."""
DAEMON_INTERVAL = 5.0
"""Seconds between looks for due schedules in `yeetui schedule daemon` (a trigger is never more than this late)."""
TUI_INTERVAL = 15.0
"""Seconds between looks in a running TUI."""
LAUNCH_TIMEOUT = 120.0
ADOPT_LOOKBACK = 500
"""Top-level sessions of a project looked through for the run a killed scheduler's launch started."""


@dataclass(frozen=True)
class Launching:
    """What a launch of a schedule's run is given: the title of the run's session (`trigger_title`: it names the
    trigger, so the run can be found if its scheduler dies before hearing back) and the lease its process must
    hold while it launches (a file descriptor to inherit; None for a run started by hand)."""

    title: str
    lease: int | None = None


Launch = Callable[[ScheduleRecord, Launching], Awaitable[str]]
"""Starts a schedule's run; its run id (raises YeetuiError saying why it could not)."""
Clock = Callable[[], datetime]


def trigger_title(schedule_id: str, due_at: str) -> str:
    """`schedule 1e74b3e40d0e at 2026-11-27T07:00:00+00:00`: the session title of a trigger's run."""
    return f"schedule {schedule_id} at {due_at}"


class Scheduler:
    def __init__(self, store: Store, bus: Bus | None = None, *, launch: Launch | None = None,
                 clock: Clock = lambda: datetime.now(UTC)) -> None:
        self.store, self.bus = store, bus
        self.launch = launch or launch_detached
        self.clock = clock
        self.leases = leases.lease_dir(store.path)

    async def add(self, *, project_dir: Path, when: str, profile: str, prompt: str, missed: str = "skip",
                  approve: bool = False, budget: Budget | None = None) -> ScheduleRecord:
        """A new schedule of `project_dir`; refused (saying why) for a bad time, a bad `missed`, or a profile the
        project's runs cannot use — whoever asks (the CLI, the app)."""
        spec = check(when)
        if missed not in ("skip", "once"):
            raise YeetuiError(f"--missed must be skip or once, not {missed!r}.")
        if profile not in await asyncio.to_thread(profile_names, project_dir):
            raise YeetuiError(f"No profile {profile!r} in {project_dir} (`yeetui profiles list` shows them).")
        return await self.store.schedules.add(
            project_dir=str(project_dir), profile=profile, prompt=prompt, spec=spec, missed=missed, approve=approve,
            budget=budget.to_json() if budget else None, next_at=next_after(spec, self.clock()))

    async def listing(self) -> list[tuple[ScheduleRecord, Fire | None]]:
        """Every schedule with its latest trigger (None before the first)."""
        listing: list[tuple[ScheduleRecord, Fire | None]] = []
        for schedule in await self.store.schedules.all():
            fires = await self.store.schedules.fires(schedule.id, limit=1)
            listing.append((schedule, fires[0] if fires else None))
        return listing

    async def pause(self, schedule_id: str) -> ScheduleRecord:
        schedule = await self.store.schedules.get(schedule_id)
        await self.store.schedules.set_paused(schedule.id, True, "paused by you")
        return await self.store.schedules.get(schedule.id)

    async def remove(self, schedule_id: str) -> ScheduleRecord:
        schedule = await self.store.schedules.get(schedule_id)
        await self.store.schedules.remove(schedule.id)
        return schedule

    async def resume(self, schedule_id: str) -> ScheduleRecord:
        """Resume from the next trigger after now (triggers while it was paused are not fired late)."""
        schedule = await self.store.schedules.get(schedule_id)
        await self.store.schedules.set_paused(schedule.id, False, next_at=next_after(schedule.spec, self.clock()))
        return await self.store.schedules.get(schedule.id)

    async def run_now(self, schedule_id: str) -> str:
        """Fire it now, besides its triggers; the run id."""
        schedule = await self.store.schedules.get(schedule_id)
        run_id = await self.launch(schedule, Launching(f"schedule {schedule.id}"))
        await self.store.schedules.fired_by_hand(schedule.id, f"now:{utcnow()}", run_id)
        return run_id

    async def tick(self) -> list[tuple[ScheduleRecord, str]]:
        """One look: settle how fired runs ended (pausing a schedule that keeps failing), fire what is due and
        what a dead process claimed but never launched. The (schedule, run id) pairs launched."""
        for paused in await self.store.schedules.settle(pause_after=PAUSE_AFTER):
            self._say("warning", f"Schedule {paused.id} ({paused.profile}: {paused.prompt[:60]}) is paused: "
                      f"{paused.pause_reason}. `yeetui schedule resume {paused.id}` starts it again.")
        launched = []
        claims = await self.store.schedules.claim_due(self.clock(), next_after)
        for schedule, fire in await self.store.schedules.orphans(is_alive=self._claimer_alive):
            if (run_id := await self._launched_before(schedule, fire)) is not None:
                await self.store.schedules.launched(schedule.id, fire.due_at, run_id)
                log.info("Schedule %s: run %s, started for its %s trigger by a yeetui that stopped before it "
                         "recorded it, is recorded now.", schedule.id, run_id[:12], fire.due_at)
            else:
                claims.append((schedule, fire))
        for schedule, fire in claims:
            if (run_id := await self._launch(schedule, fire)) is not None:
                launched.append((schedule, run_id))
        return launched

    def _claimer_alive(self, pid: int) -> bool:
        """A claim's process counts as alive while it runs and while a launch it started still runs (its lease)."""
        return pid_alive(pid) or leases.held(self.leases, pid)

    async def _launched_before(self, schedule: ScheduleRecord, fire: Fire) -> str | None:
        """The run a launch of `fire` started before its scheduler died unheard, found by its session's title (the
        launch is over: its lease is free); None when it started none."""
        title = trigger_title(schedule.id, fire.due_at)
        for session in await self.store.list_sessions(parent_id=None, cwd=schedule.project_dir,
                                                      limit=ADOPT_LOOKBACK):
            if session.title == title:
                runs = await self.store.list_runs(session_id=session.id, limit=1)
                return runs[0].id if runs else None
        return None

    async def _launch(self, schedule: ScheduleRecord, fire: Fire) -> str | None:
        try:
            run_id = await self.launch(schedule, Launching(trigger_title(schedule.id, fire.due_at),
                                                           await self._lease()))
        except YeetuiError as exc:
            self._say("error", f"Schedule {schedule.id} could not start its run: {exc}")
            await self.store.schedules.launched(schedule.id, fire.due_at, "")  # counted as tried, not retried
            return None
        await self.store.schedules.launched(schedule.id, fire.due_at, run_id)
        return run_id

    async def _lease(self) -> int:
        try:
            return await asyncio.to_thread(leases.hold, self.leases)
        except OSError as exc:
            raise YeetuiError(f"the launch lease in {self.leases} could not be taken: {exc}") from exc

    async def run_forever(self, *, interval: float = DAEMON_INTERVAL, stop: asyncio.Event | None = None) -> None:
        """`yeetui schedule daemon`: look every `interval` seconds until `stop` is set."""
        stop = stop or asyncio.Event()
        while not stop.is_set():
            try:
                for schedule, run_id in await self.tick():
                    self._say("info", f"Schedule {schedule.id}: started run {run_id[:12]} ({schedule.profile}).")
            except YeetuiError as exc:
                self._say("error", f"Could not look at the schedules: {exc}")
            try:
                await asyncio.wait_for(stop.wait(), interval)
            except TimeoutError:
                pass

    def _say(self, level: Literal["info", "warning", "error"], text: str) -> None:
        log.log(logging.ERROR if level == "error" else logging.WARNING if level == "warning" else logging.INFO,
                "%s", text)
        if self.bus is not None:
            self.bus.publish(Notice(level, text))


def profile_names(project_dir: Path) -> set[str]:
    """The profiles a run in `project_dir` can use (built-in, the user's, the project's)."""
    profiles = load_profiles(project_dir=project_dir, user_dir=paths.config_dir() / "agents",
                             builtin_dir=builtin_dir("agents"), trusted=is_trusted(project_dir))
    return set(profiles.profiles)


async def launch_detached(schedule: ScheduleRecord, launching: Launching) -> str:
    """An ordinary detached run of the schedule's project: `yeetui agents start` in its folder, its session titled
    `launching.title`, the process holding `launching.lease` until it ends."""
    argv = yeetui_command("agents", "start", "--json", "--label", launching.title)
    # Headless: only what the user allowed for the schedule (--yes), the rest refused — never a question left
    # waiting overnight.
    argv.append("--yes" if schedule.approve else "--refuse-asks")
    flags = {"max_cost_usd": "--max-cost", "max_tokens": "--max-tokens", "max_turns": "--max-turns",
             "max_minutes": "--max-minutes"}
    for key, value in (schedule.budget or {}).items():
        if key in flags:
            argv += [flags[key], str(value)]
    argv += ["--", schedule.profile, schedule.prompt]  # a prompt starting with `-` is the prompt, never an option
    if not await asyncio.to_thread(Path(schedule.project_dir).is_dir):
        raise YeetuiError(f"its project {schedule.project_dir} is gone")
    process = await asyncio.create_subprocess_exec(*argv, cwd=schedule.project_dir, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL,
                                                   pass_fds=() if launching.lease is None else (launching.lease,))
    try:
        out, err = await asyncio.wait_for(process.communicate(), LAUNCH_TIMEOUT)
    except TimeoutError:
        process.kill()
        raise YeetuiError("`yeetui agents start` did not answer") from None
    if process.returncode != 0:
        raise YeetuiError(err.decode(errors="replace").strip()[-500:] or f"exit {process.returncode}")
    try:
        return str(json.loads(out.decode().strip().splitlines()[-1])["run_id"])
    except (ValueError, KeyError, IndexError):
        raise YeetuiError(f"`yeetui agents start` said {out.decode(errors='replace')[:200]!r}") from None


def local_time(moment: datetime) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def describe_fire(fire: Fire | None, now: datetime | None = None) -> str:
    """A schedule's latest trigger for a listing: `today 07:00 completed`, `yesterday 07:00 skipped (missed)`,
    `today 06:11 by hand, running`."""
    if fire is None:
        return "-"
    now = now or datetime.now(UTC)
    by_hand = fire.due_at.startswith("now:")
    moment = datetime.fromisoformat(fire.due_at.removeprefix("now:"))
    when = readable_moment(moment, now) + (" by hand," if by_hand else "")
    if fire.skipped:
        return f"{when} skipped (missed)"
    return f"{when} {fire.outcome or ('running' if fire.run_id else 'not started')}"


def describe_state(schedule: ScheduleRecord, now: datetime | None = None) -> str:
    """`next tomorrow 07:00`, `paused by you`, `paused: the last 3 runs failed`."""
    if schedule.paused:
        reason = schedule.pause_reason or "paused by you"
        return reason if reason == "paused by you" else f"paused: {reason}"
    return f"next {readable_moment(schedule.next_at, now or datetime.now(UTC))}"
