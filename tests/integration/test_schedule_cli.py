"""`yeetui schedule` from the command line: a schedule added, listed, run by hand as an ordinary detached run
(seen in `agents list`, completed against the fake LLM), paused, resumed, removed; bad input named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui, wait_for_stored_status


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


def _json(done) -> dict[str, Any]:
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_a_schedule_from_add_to_remove(fake_env, project: Path) -> None:
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "NIGHTLY: all commits look fine"})],
                          when_contains="review yesterday"))
    added = _json(run_yeetui("schedule", "add", "0 7 * * 1-5", "review yesterday's commits", "--profile",
                             "oracle", "--max-cost", "0.5", "--json", cwd=project))
    assert added["spec"] == "0 7 * * 1-5" and added["budget"] == {"max_cost_usd": 0.5} and not added["paused"]
    listed = run_yeetui("schedule", "list", cwd=project)
    assert added["id"] in listed.stdout and "skip missed" in listed.stdout and "next " in listed.stdout
    assert "weekdays at 07:00" in listed.stdout, listed.stdout
    # by hand: an ordinary detached run of the project, with the schedule's budget
    run_id = run_yeetui("schedule", "run-now", added["id"], cwd=project).stdout.strip()
    wait_for_stored_status(run_id)
    status = _json(run_yeetui("agents", "status", run_id, "--json", cwd=project))
    assert status["status"] == "completed" and status["output"] == "NIGHTLY: all commits look fine", status
    assert status["options"]["budget"] == {"max_cost_usd": 0.5}
    assert "paused" in run_yeetui("schedule", "pause", added["id"], cwd=project).stdout
    assert "paused by you" in run_yeetui("schedule", "list", cwd=project).stdout
    assert "resumed" in run_yeetui("schedule", "resume", added["id"], cwd=project).stdout
    assert run_yeetui("schedule", "daemon", "--once", cwd=project).returncode == 0  # nothing due now
    assert "removed" in run_yeetui("schedule", "remove", added["id"], cwd=project).stdout
    assert "No schedules" in run_yeetui("schedule", "list", cwd=project).stderr


@pytest.mark.parametrize("args, said", [
    (["every 10s", "x", "--profile", "reviewer"], "is neither a cron expression"),
    (["61 * * * *", "x", "--profile", "reviewer"], "is neither a cron expression"),
    (["every 5m", "x", "--profile", "nobody"], "No profile 'nobody'"),
    (["every 5m", "x", "--profile", "reviewer", "--missed", "later"], "invalid choice: 'later'"),
])
def test_bad_schedules_are_refused_saying_why(fake_env, project: Path, args: list[str], said: str) -> None:
    done = run_yeetui("schedule", "add", *args, cwd=project)
    assert done.returncode != 0 and said in done.stderr, done.stderr
    assert run_yeetui("schedule", "pause", "nope", cwd=project).returncode != 0


def test_a_prompt_that_looks_like_a_flag_stays_the_prompt(fake_env, project: Path) -> None:
    """A schedule's prompt reaches `yeetui agents start` as the prompt, whatever it starts with: `--yes …`
    never turns into the option that lets its run make tool calls unasked."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "ok"})], repeat=True))
    added = _json(run_yeetui("schedule", "add", "every 5m", "--profile", "oracle", "--json", "--", "--yes",
                             cwd=project))
    run_id = run_yeetui("schedule", "run-now", added["id"], cwd=project).stdout.strip()
    status = _json(run_yeetui("agents", "status", run_id, "--json", cwd=project))
    assert status["prompt"] == "--yes" and status["options"]["approve"] is False
