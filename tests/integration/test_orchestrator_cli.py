"""`yeetui agents start orchestrator … --wait`, and a kill after the builder finished followed by a resume
that does not call the builder again — the real binary, the real store, git, the fake LLM server."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.gitrepo import git_project
from tests.integration.helpers import run_yeetui

PLANNER = "You are the planner"
BUILDER = "You are a builder"
REVIEWER = "You are a code reviewer"
GOAL = "add hello() to util.py with a test"
UTIL = "def existing():\n    return 1\n\n\ndef hello():\n    return 'hello'\n"
TEST = "from util import hello\n\n\ndef test_hello():\n    assert hello() == 'hello'\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_project(tmp_path / "project", {"util.py": "def existing():\n    return 1\n"})


def _script(fake, *, slow_review: bool = False) -> None:
    fake.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "Plan: add hello() and a test.",
                                                "artifacts": {"steps": [
                                                    {"id": "build", "profile": "builder", "task": GOAL},
                                                    {"id": "review", "profile": "reviewer", "task": "review it",
                                                     "depends_on": ["build"]}]}})], when_contains=PLANNER),
        Reply(tool_calls=[ToolCall("write_file", {"path": "util.py", "content": UTIL}),
                          ToolCall("write_file", {"path": "test_util.py", "content": TEST})],
              when_contains=BUILDER),
        Reply(tool_calls=[ToolCall("complete", {"output": "Added hello() and test_util.py.",
                                                "files_modified": ["util.py", "test_util.py"]})],
              when_contains=BUILDER),
        Reply(text="Reviewing the diff carefully. " * (40 if slow_review else 1), chunk_size=8,
              chunk_delay=0.1 if slow_review else 0.0, when_contains=REVIEWER,
              tool_calls=[ToolCall("complete", {"output": "Looks right.", "artifacts": {
                  "verdict": "approve", "findings": []}})]),
    )


def _by_profile(fake) -> dict[str, int]:
    counts = {"planner": 0, "builder": 0, "reviewer": 0}
    for request in fake.requests:
        for name, marker in (("planner", PLANNER), ("builder", BUILDER), ("reviewer", REVIEWER)):
            if marker in request.text:
                counts[name] += 1
    return counts


def test_orchestrator_runs_planner_builder_reviewer(fake_env, repo: Path) -> None:
    _script(fake_env)
    done = run_yeetui("agents", "start", "orchestrator", GOAL, "--wait", "--json", "--yes", cwd=repo, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(done.stdout.strip().splitlines()[-1])
    assert record["status"] == "completed"
    status = run_yeetui("agents", "status", record["id"], cwd=repo)
    assert re.search(r"this run: \d+ tok · \$[\d.]+; with its subagents \(tree\): [\d.]+k? tok · \$[\d.]+\n",
                     status.stdout), status.stdout  # the per-tree rollup the ledger's parent row shows
    # The builder worked in its own worktree: the checkout changes only when the user merges its branch.
    assert "def hello()" not in (repo / "util.py").read_text() and not (repo / "test_util.py").exists()
    [wt] = json.loads(run_yeetui("worktrees", "list", "--json", cwd=repo).stdout)
    assert f"/merge {wt['label']}" in record["result"]["output"]
    merged = run_yeetui("worktrees", "merge", wt["id"][:8], cwd=repo)
    assert merged.returncode == 0, merged.stderr
    assert "def hello()" in (repo / "util.py").read_text() and (repo / "test_util.py").exists()
    order = [next(n for n, m in (("planner", PLANNER), ("builder", BUILDER), ("reviewer", REVIEWER)) if m in r.text)
             for r in fake_env.requests]
    assert order.index("planner") < order.index("builder") < order.index("reviewer")
    reviewer_request = next(r for r in fake_env.requests if REVIEWER in r.text)
    assert "def hello()" in reviewer_request.text  # the reviewer was given the diff
    assert "review" in record["result"]["output"].lower()


def test_kill_after_builder_then_resume_skips_the_builder(fake_env, repo: Path) -> None:
    _script(fake_env, slow_review=True)
    started = run_yeetui("agents", "start", "orchestrator", GOAL, "--json", "--yes", cwd=repo)
    assert started.returncode == 0, started.stderr
    launched = json.loads(started.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 60
    while _by_profile(fake_env)["reviewer"] == 0:
        assert time.monotonic() < deadline, f"reviewer never started: {_by_profile(fake_env)}"
        time.sleep(0.1)
    time.sleep(0.5)
    os.killpg(launched["pid"], signal.SIGKILL)
    time.sleep(0.3)
    before = _by_profile(fake_env)
    assert before["builder"] == 2

    status = run_yeetui("agents", "status", launched["run_id"], "--json", cwd=repo)
    assert json.loads(status.stdout)["status"] == "interrupted"
    _script(fake_env)  # fresh replies; a builder request now would be a re-run
    resumed = run_yeetui("agents", "resume", launched["run_id"], "--wait", "--json", "--yes", cwd=repo, timeout=120)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout.strip().splitlines()[-1])["status"] == "completed"
    after = _by_profile(fake_env)
    assert after["builder"] == before["builder"], "the builder was called again after the resume"
    assert after["planner"] == before["planner"]
    assert after["reviewer"] > before["reviewer"]
