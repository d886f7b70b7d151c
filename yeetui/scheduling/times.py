"""When a schedule fires: a cron expression of five fields (`0 7 * * 1-5`, in the machine's local time, as cron
has it; or `@hourly`, `@daily`, …) or a fixed interval (`every 30m`, `every 2h`, `every 1d`; from a minute to 366
days). `next_after` is the first trigger strictly after a moment; every time is timezone-aware and stored in UTC.

A schedule fires at most once a minute: croniter also takes a sixth field, seconds (and a seventh, the year),
which `check` refuses; a spec stored before it did still fires on the minute at most (`next_after`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from yeetui.errors import YeetuiError

_EVERY = re.compile(r"every\s+(\d+)\s*([mhd])", re.IGNORECASE | re.ASCII)
_UNITS = {"m": 60, "h": 3600, "d": 86400}
MAX_INTERVAL_DAYS = 366
"""The longest `every N` interval: a schedule fires at least once a year (and its next trigger fits in a date)."""
CRON_FIELDS = 5
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
"""Where `every N` intervals count from: triggers fall on the same instants whoever computes them."""


class ScheduleSpecError(YeetuiError):
    """A schedule's `when` that cannot be scheduled: neither a five-field cron expression nor `every N[mhd]`, a
    cron that never fires, or an interval under a minute or over 366 days."""


def check(spec: str) -> str:
    """`spec`, tidied; raises ScheduleSpecError saying what is wrong. What passes has a next trigger after any
    moment (`next_after` finds it)."""
    from croniter import croniter  # on use: importing it runs `file` on the interpreter (platform.architecture)

    text = " ".join(spec.split())
    if match := _EVERY.fullmatch(text):
        _interval(spec, match[1], match[2])
        return f"every {int(match[1])}{match[2].lower()}"
    fields = len(text.split())
    if not text.startswith("@") and fields > CRON_FIELDS:
        raise ScheduleSpecError(f"{spec!r} has {fields} fields: a schedule's cron expression has five (minute hour "
                                "day month weekday), no seconds field nor year, as a schedule fires at most once a "
                                "minute.")
    if (fields != CRON_FIELDS and not text.startswith("@")) or not croniter.is_valid(text):
        raise ScheduleSpecError(f"{spec!r} is neither a cron expression (minute hour day month weekday, e.g. "
                                "'0 7 * * 1-5') nor an interval ('every 30m', 'every 2h', 'every 1d').")
    next_after(text, datetime.now(UTC))
    return text


def next_after(spec: str, moment: datetime) -> datetime:
    """The first trigger of `spec` strictly after `moment` (aware), in UTC. Raises ScheduleSpecError — nothing
    else — when there is none: never for a spec `check` passed (a cron of five fields that fires once fires
    again within 28 years, and croniter looks 50 ahead)."""
    if match := _EVERY.fullmatch(spec):
        step = _interval(spec, match[1], match[2])
        elapsed = (moment - EPOCH).total_seconds()
        try:
            return EPOCH + timedelta(seconds=(int(elapsed // step) + 1) * step)
        except OverflowError:
            raise ScheduleSpecError(f"{spec!r} has no trigger after {moment:%Y-%m-%d %H:%M} that fits in a "
                                    "date.") from None
    from croniter import CroniterBadDateError, croniter  # on use: see `check`

    local = moment.astimezone()  # cron fields mean the machine's local time
    if len(spec.split()) > CRON_FIELDS:  # seconds, from before `check` refused them: once a minute at most
        local = local.replace(second=59, microsecond=999_999)
    try:
        following: datetime = croniter(spec, local).get_next(datetime)
    except CroniterBadDateError:
        raise ScheduleSpecError(f"{spec!r} never fires: no day matches it in the 50 years after "
                                f"{moment:%Y-%m-%d} (30 February, 31 April).") from None
    except (ValueError, OverflowError, KeyError) as exc:  # croniter's own errors are ValueErrors
        raise ScheduleSpecError(f"{spec!r} has no trigger after {moment:%Y-%m-%d %H:%M}: {exc}") from None
    return following.astimezone(UTC)


def _interval(spec: str, count: str, unit: str) -> int:
    """Seconds between the triggers of `every COUNT UNIT`: at least a minute, at most `MAX_INTERVAL_DAYS`."""
    digits = count.lstrip("0") or "0"
    seconds = int(digits) * _UNITS[unit.lower()] if len(digits) <= 9 else None  # (int() takes 4,300 digits)
    if seconds is None or seconds > MAX_INTERVAL_DAYS * 86400:
        raise ScheduleSpecError(f"{spec!r}: an interval is at most {MAX_INTERVAL_DAYS} days "
                                f"('every {MAX_INTERVAL_DAYS}d'); for longer ones use a cron expression.")
    if seconds < 60:
        raise ScheduleSpecError(f"{spec!r}: a schedule fires at most once a minute.")
    return seconds


_WEEKDAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_SPAN_WORDS = {"*": "every day", "1-5": "weekdays", "mon-fri": "weekdays", "0,6": "weekends", "6,0": "weekends",
               "sat,sun": "weekends", "6-7": "weekends"}


def describe_spec(spec: str) -> str:
    """`0 7 * * 1-5` → `weekdays at 07:00`, `30 9 * * 1` → `Mon at 09:30`; other specs as written (`every 2h`,
    `*/15 * * * *`, `@daily`)."""
    fields = spec.split()
    if len(fields) != CRON_FIELDS or fields[2:4] != ["*", "*"] or not (fields[0].isdigit() and fields[1].isdigit()):
        return spec
    minute, hour, weekday = int(fields[0]), int(fields[1]), fields[4].casefold()
    if minute > 59 or hour > 23:
        return spec
    if (days := _SPAN_WORDS.get(weekday)) is None:
        if not all(day.isdigit() and int(day) <= 7 for day in weekday.split(",")):
            return spec
        days = ", ".join(_WEEKDAYS[int(day)] for day in weekday.split(","))
    return f"{days} at {hour:02d}:{minute:02d}"


def readable_moment(moment: datetime, now: datetime) -> str:
    """A moment as a person reads it, in local time beside `now`: `today 07:00`, `tomorrow 07:00`, `yesterday
    23:10`, `Fri 07:00` (within the coming week), else `2027-01-04 07:00`."""
    local, today = moment.astimezone(), now.astimezone().date()
    days = (local.date() - today).days
    day = {0: "today", 1: "tomorrow", -1: "yesterday"}.get(days)
    if day is None:
        day = local.strftime("%a") if 1 < days < 7 else local.strftime("%Y-%m-%d")
    return f"{day} {local:%H:%M}"
