"""One exit-status rule for every command (issue 47, item 6): 1 when the command failed or a value it was given
names nothing yeetui can use — whichever command it is — and 2 only when the command line does not parse. The
rule itself is in `yeetui --help`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.helpers import git_project, run_yeetui


@pytest.mark.parametrize("args, said", [
    (("schedule", "add", "every 1h", "x", "--profile", "no-such-profile"), "No profile 'no-such-profile'"),
    (("trust", "/no/such/folder"), "is not a directory"),
    (("run", "--continue"), "no session to continue"),
    (("schedule", "pause", "nope"), "No schedule 'nope'"),
    (("sessions", "show", "nope"), "No session has an id starting with 'nope'"),
    (("profiles", "show", "nope"), "no agent profile named 'nope'"),
])
def test_a_value_that_names_nothing_is_status_1(tmp_path: Path, args: tuple[str, ...], said: str) -> None:
    done = run_yeetui(*args, cwd=git_project(tmp_path))
    assert done.returncode == 1, (args, done.returncode, done.stderr)
    assert said in done.stderr and "Traceback" not in done.stderr and "usage:" not in done.stderr


@pytest.mark.parametrize("args", [("schedule", "frobnicate"), ("fleet", "--limit", "0"), ("run",),
                                  ("mcp", "serve", "--http", "--no-token")])
def test_a_command_line_that_does_not_parse_is_status_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = run_yeetui(*args, cwd=git_project(tmp_path))
    assert done.returncode == 2, (args, done.returncode, done.stderr)


def test_help_says_the_rule(tmp_path: Path) -> None:
    shown = run_yeetui("--help", cwd=git_project(tmp_path)).stdout
    assert "exit status:" in shown and "does not parse" in shown and "130" in shown
