"""A schedule fires at most once a minute, whatever its spec says, and a spec that could not be scheduled is
refused with a message when it is added: a cron with a seconds field (croniter takes six and seven fields), an
interval too long for a date, a cron that never fires. What passed `check` always has a next trigger."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.integration.helpers import run_yeetui
from yeetui.scheduling.times import ScheduleSpecError, check, next_after

REFUSED = [
    ("* * * * * */6", "seconds"),  # croniter's sixth field is seconds: a trigger every 6 s
    ("*/6 * * * * *", "seconds"),
    ("0 0 1 1 * 0 2030", "seconds"),  # seconds and a year
    ("every 99999999999999999999d", "366 days"),
    ("every 367d", "366 days"),
    ("every " + "9" * 5000 + "m", "366 days"),  # more digits than int() takes from a string
    ("0 0 30 2 *", "never fires"),
    ("0 0 31 4,6 *", "never fires"),
]


@pytest.mark.parametrize(("spec", "said"), REFUSED, ids=[spec[:24] for spec, _ in REFUSED])
def test_a_spec_that_cannot_be_scheduled_is_refused_saying_why(spec: str, said: str) -> None:
    with pytest.raises(ScheduleSpecError, match=said):
        check(spec)


@pytest.mark.parametrize("spec", ["* * * * *", "*/1 * * * *", "0-59 * * * *", "@hourly", "every 1m", "every 60m",
                                  "every 366d", "0 0 29 2 *", "0 0 29 2 1#5", "0 0 L * *"])
def test_what_passes_check_fires_at_most_once_a_minute_and_always_again(spec: str) -> None:
    tidy = check(spec)
    moment = datetime(2031, 5, 17, 12, 34, 56, 789, tzinfo=UTC)
    for _ in range(5):
        following = next_after(tidy, moment)
        assert following > moment and following - moment >= timedelta(seconds=1)
        assert following.second == 0 and following.microsecond == 0
        moment = following
    assert next_after(tidy, datetime(2099, 12, 31, 23, 59, tzinfo=UTC)) > datetime(2099, 12, 31, tzinfo=UTC)


def test_a_stored_spec_with_seconds_still_fires_no_more_than_once_a_minute() -> None:
    """A schedule added before seconds were refused is in the store: it fires on the minute, never in between."""
    moment = datetime(2031, 5, 17, 12, 34, 6, tzinfo=UTC)
    following = next_after("* * * * * */6", moment)
    assert following == datetime(2031, 5, 17, 12, 35, tzinfo=UTC)


@pytest.mark.parametrize(("spec", "said"), [("* * * * * */6", "seconds"), ("every 99999999999999999999d", "366 days"),
                                            ("0 0 30 2 *", "never fires")])
def test_the_cli_says_why_without_a_traceback(fake_env, tmp_path: Path, spec: str, said: str) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    done = run_yeetui("schedule", "add", spec, "look", "--profile", "oracle", cwd=project)
    assert done.returncode != 0, done.stdout
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "No schedules" in run_yeetui("schedule", "list", cwd=project).stderr
