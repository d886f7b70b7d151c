"""Scheduled agents, with a clock the test moves: each trigger fires exactly once however many yeetui processes
look (here three stores on one data dir, looking at once), a process killed between claiming a trigger and
starting its run loses nothing and repeats nothing, missed triggers follow the schedule's policy, and a
schedule that keeps failing is paused with a notice."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from yeetui.application.schedules import Launching, Scheduler, describe_fire
from yeetui.bus import Bus
from yeetui.errors import YeetuiError
from yeetui.events import Notice, RunStatus
from yeetui.scheduling.times import ScheduleSpecError, check, describe_spec, readable_moment
from yeetui.store import Store
from yeetui.store.schedules import Fire

START = datetime(2026, 11, 27, 9, 0, 5, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "yeetui.db"


@pytest.fixture
async def stores(db: Path) -> AsyncIterator[list[Store]]:
    opened = [await Store.open(db) for _ in range(3)]
    try:
        yield opened
    finally:
        for store in opened:
            await store.close()


class Launches:
    """What would have been started: one real run record per launch (so failures can be counted)."""

    def __init__(self, store: Store, status: RunStatus = RunStatus.COMPLETED) -> None:
        self.store, self.status = store, status
        self.started: list[str] = []

    async def __call__(self, schedule, launching: Launching) -> str:
        session = await self.store.create_session(profile=schedule.profile, title=launching.title)
        run = await self.store.create_run(session_id=session.id, profile=schedule.profile, model=None,
                                          prompt=schedule.prompt, status=self.status)
        self.started.append(schedule.id)
        return run.id


def test_when_a_schedule_fires_is_checked() -> None:
    assert check("0  7 * * 1-5") == "0 7 * * 1-5" and check("every 30M") == "every 30m"
    for bad in ("every 30s", "tomorrow", "61 * * * *"):
        with pytest.raises(ScheduleSpecError):
            check(bad)


async def test_a_schedule_due_every_minute_fires_once_a_minute_with_three_processes_looking(
        stores: list[Store], tmp_path: Path) -> None:
    clock = Clock()
    launches = Launches(stores[0])
    schedulers = [Scheduler(store, launch=launches, clock=clock) for store in stores]
    schedule = await schedulers[0].add(project_dir=tmp_path, when="every 1m", profile="reviewer",
                                       prompt="review yesterday's commits")
    for _ in range(60):  # ten minutes, a look every ten seconds by all three at once
        clock.now += timedelta(seconds=10)
        await asyncio.gather(*(s.tick() for s in schedulers))
    assert launches.started == [schedule.id] * 10
    fires = await stores[1].schedules.fires(schedule.id, limit=100)
    assert len(fires) == 10 and len({f.due_at for f in fires}) == 10 and all(f.run_id for f in fires)


async def test_a_process_killed_between_claiming_and_launching_loses_nothing_and_repeats_nothing(
        stores: list[Store], db: Path, tmp_path: Path) -> None:
    clock = Clock()
    launches = Launches(stores[0])
    scheduler = Scheduler(stores[0], launch=launches, clock=clock)
    schedule = await scheduler.add(project_dir=tmp_path, when="every 1m", profile="reviewer", prompt="p")
    due = (START + timedelta(minutes=1, seconds=1)).isoformat()
    # a daemon claims the trigger, then dies before it starts the run
    claim = (f"import asyncio, datetime, os\nfrom yeetui.store import Store\nfrom yeetui.scheduling.times import "
             f"next_after\nasync def main():\n    s = await Store.open({str(db)!r})\n    got = await "
             f"s.schedules.claim_due(datetime.datetime.fromisoformat({due!r}), next_after)\n    print(len(got), "
             f"flush=True)\n    os._exit(0)\nasyncio.run(main())\n")
    killed = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", claim], capture_output=True, text=True,
                                     timeout=60)
    assert killed.stdout.strip() == "1", killed.stderr
    clock.now = datetime.fromisoformat(due)
    assert [s.id for s, _ in await scheduler.tick()] == [schedule.id]  # taken over and started, once
    assert await scheduler.tick() == [] and launches.started == [schedule.id]
    other = Scheduler(stores[1], launch=launches, clock=clock)
    assert await other.tick() == []


async def test_missed_triggers_are_skipped_or_run_once_as_the_schedule_says(stores: list[Store],
                                                                              tmp_path: Path) -> None:
    clock = Clock()
    launches = Launches(stores[0])
    scheduler = Scheduler(stores[0], launch=launches, clock=clock)
    skip = await scheduler.add(project_dir=tmp_path, when="every 1m", profile="reviewer", prompt="p", missed="skip")
    once = await scheduler.add(project_dir=tmp_path, when="every 1m", profile="oracle", prompt="p", missed="once")
    clock.now += timedelta(minutes=30)  # no yeetui ran for half an hour
    await scheduler.tick()
    assert launches.started == [once.id]
    assert (await stores[0].schedules.fires(skip.id))[0].skipped  # said in the listing
    clock.now += timedelta(minutes=1)
    await scheduler.tick()
    assert sorted(launches.started) == sorted([once.id, once.id, skip.id])  # both on time again


async def test_a_schedule_that_keeps_failing_is_paused_with_a_notice(stores: list[Store], tmp_path: Path) -> None:
    clock = Clock()
    bus = Bus()
    said: list[Notice] = []
    bus.add_listener(lambda e: said.append(e) if isinstance(e, Notice) else None)
    launches = Launches(stores[0], status=RunStatus.FAILED)
    scheduler = Scheduler(stores[0], bus, launch=launches, clock=clock)
    schedule = await scheduler.add(project_dir=tmp_path, when="every 1m", profile="reviewer", prompt="p")
    for _ in range(6):
        clock.now += timedelta(minutes=1)
        await scheduler.tick()
    assert len(launches.started) == 3  # paused after three failures in a row; not retried forever
    paused = await stores[0].schedules.get(schedule.id)
    assert paused.paused and "last 3 runs failed" in (paused.pause_reason or "")
    assert any("is paused" in n.text and schedule.id in n.text for n in said)
    resumed = await scheduler.resume(schedule.id)
    assert not resumed.paused and resumed.failures == 0


def test_a_listing_says_when_as_a_person_reads_it() -> None:
    """Issue 47, item 6: `schedule list` showed `now:2026-12-03T06:11:50.929119+00:00`, raw cron fields and
    `paused: paused by you`."""
    now = datetime(2026, 12, 3, 9, 0, tzinfo=UTC).astimezone()  # a Thursday, in local time
    at = now.replace(hour=7, minute=0)
    assert readable_moment(at, now) == "today 07:00"
    assert readable_moment(at + timedelta(days=1), now) == "tomorrow 07:00"
    assert readable_moment(at - timedelta(days=1), now) == "yesterday 07:00"
    assert readable_moment(at + timedelta(days=3), now) == "Sun 07:00"
    assert readable_moment(at + timedelta(days=30), now) == f"{at + timedelta(days=30):%Y-%m-%d} 07:00"
    assert describe_spec("0 7 * * 1-5") == "weekdays at 07:00"
    assert describe_spec("30 9 * * *") == "every day at 09:30"
    assert describe_spec("5 18 * * 1,3") == "Mon, Wed at 18:05"
    for as_written in ("every 2h", "*/15 * * * *", "@daily", "0 7 1 * *", "0 7 * * 1-3"):
        assert describe_spec(as_written) == as_written
    by_hand = Fire("s1", f"now:{(at - timedelta(hours=1)).astimezone(UTC).isoformat()}", "r1", False, None)
    assert describe_fire(by_hand, now) == "today 06:00 by hand, running"
    missed = Fire("s1", (at - timedelta(days=1)).astimezone(UTC).isoformat(), None, True, None)
    assert describe_fire(missed, now) == "yesterday 07:00 skipped (missed)"


async def test_a_schedule_of_a_profile_the_project_does_not_have_is_refused_whoever_asks(stores: list[Store],
                                                                                         tmp_path: Path) -> None:
    """The rule is the use case's own: the CLI and the app each checked it, and `Scheduler.add` took any name."""
    scheduler = Scheduler(stores[0], clock=Clock())
    with pytest.raises(YeetuiError, match="No profile 'nope' in "):
        await scheduler.add(project_dir=tmp_path, when="every 1m", profile="nope", prompt="p")
    assert await stores[0].schedules.all() == []
