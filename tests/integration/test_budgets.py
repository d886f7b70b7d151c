"""Budgets that halt a whole tree (`yeetui.runs.budget`): a runaway child is stopped with its parent when the
tree reaches the parent's limit; each ends `budget_exhausted` with what it had produced, and the owner's
result says which limit was hit, what was spent, and what each run produced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "notes.txt").write_text("nothing to see\n")
    return root


def _runaway(fake_env) -> None:
    """The primary hands a task to an oracle that never finishes: it reads a file, again and again."""
    fake_env.script(
        Reply(text="Reading again.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})],
              when_contains="LOOP-TASK", repeat=True, usage={"input_tokens": 1000, "output_tokens": 10}),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "LOOP-TASK read notes.txt",
                                                      "blocking": True})],
              when_contains="SPAWN-LOOP", usage={"input_tokens": 500, "output_tokens": 10}),
        Reply(text="(never asked)", repeat=True))


def _runs(project: Path) -> dict[str, dict]:
    listed = run_yeetui("agents", "list", "--all", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    return {r["id"]: r for r in json.loads(listed.stdout)}


def test_a_runaway_child_is_halted_with_its_parent_at_the_parents_token_budget(fake_env, project: Path) -> None:
    _runaway(fake_env)
    done = run_yeetui("run", "--json", "--max-tokens", "5000", "SPAWN-LOOP please", cwd=project, timeout=120)
    assert done.returncode != 0
    result = done.result
    assert result["status"] == "budget_exhausted", result
    assert "tokens" in result["error"] and "of 5,000" in result["error"], result
    # the owner's result: the limit, what was spent, and what each run produced
    assert "Budget exhausted: tokens" in result["output"] and "oracle#" in result["output"]
    budget = result["result"]["budget"]
    assert budget["limit"] == "max_tokens" and budget["limits"] == {"max_tokens": 5000}
    assert 5000 <= budget["spent"]["tokens"] < 5000 + 2 * 1010, budget  # stopped at the limit, not far past it
    child_report = budget["runs"][0]
    assert child_report["status"] == "budget_exhausted" and child_report["output"] == "Reading again."
    runs = _runs(project)
    child = runs[child_report["run_id"]]
    assert child["status"] == "budget_exhausted" and "halted: the budget of" in child["error"]
    assert child["turns"] >= 4 and child["usage"]["input_tokens"] >= 4000
    # nothing went on after the halt: the oracle asked no more than the tree's budget allowed
    asked = sum(1 for r in fake_env.requests if "LOOP-TASK" in r.text and "SPAWN-LOOP" not in r.text)
    assert asked == child["turns"], (asked, child["turns"])


def test_a_budget_is_checked_before_the_run_starts_spending_no_more(fake_env, project: Path) -> None:
    """A single run past its turn budget ends `budget_exhausted` at once with what it had said."""
    fake_env.script(Reply(text="Still thinking.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})],
                          repeat=True, usage={"input_tokens": 100, "output_tokens": 10}))
    done = run_yeetui("run", "--json", "--max-turns", "3", "think forever", cwd=project, timeout=120)
    result = done.result
    assert result["status"] == "budget_exhausted" and "model turns 3 of 3" in result["error"], result
    assert result["output"].startswith("Still thinking.")
    assert len(fake_env.requests) == 3


@pytest.mark.parametrize("flag, value", [("--max-cost", "0"), ("--max-tokens", "-5"), ("--max-turns", "1.5"),
                                         ("--max-minutes", "soon")])
def test_bad_budget_flags_are_refused_naming_them(fake_env, project: Path, flag: str, value: str) -> None:
    done = run_yeetui("run", flag, value, "hello", cwd=project)
    assert done.returncode == 2 and flag in done.stderr and value in done.stderr
