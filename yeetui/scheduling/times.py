"""When a schedule fires: a cron expression (`0 7 * * 1-5`, in the machine's local time, as cron has it) or a
fixed interval (`every 30m`, `every 2h`, `every 1d`; at least a minute). `next_after` is the first trigger
strictly after a moment; every time is timezone-aware and stored in UTC."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from croniter import croniter

from yeetui.errors import YeetuiError

_EVERY = re.compile(r"every\s+(\d+)\s*([mhd])", re.IGNORECASE)
_UNITS = {"m": 60, "h": 3600, "d": 86400}
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
"""Where `every N` intervals count from: triggers fall on the same instants whoever computes them."""


class ScheduleSpecError(YeetuiError):
    """A schedule's `when` that is neither a cron expression nor `every N[mhd]`."""


def check(spec: str) -> str:
    """`spec`, tidied; raises ScheduleSpecError saying what is wrong."""
    text = " ".join(spec.split())
    if match := _EVERY.fullmatch(text):
        if int(match[1]) * _UNITS[match[2].lower()] < 60:
            raise ScheduleSpecError(f"{spec!r}: a schedule fires at most once a minute.")
        return f"every {int(match[1])}{match[2].lower()}"
    if not croniter.is_valid(text):
        raise ScheduleSpecError(f"{spec!r} is neither a cron expression (minute hour day month weekday, e.g. "
                                "'0 7 * * 1-5') nor an interval ('every 30m', 'every 2h', 'every 1d').")
    return text


def next_after(spec: str, moment: datetime) -> datetime:
    """The first trigger of `spec` strictly after `moment` (aware), in UTC."""
    if match := _EVERY.fullmatch(spec):
        step = int(match[1]) * _UNITS[match[2].lower()]
        elapsed = (moment - EPOCH).total_seconds()
        return EPOCH + timedelta(seconds=(int(elapsed // step) + 1) * step)
    local = moment.astimezone()  # cron fields mean the machine's local time
    following: datetime = croniter(spec, local).get_next(datetime)
    return following.astimezone(UTC)
