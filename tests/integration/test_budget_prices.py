"""A dollar budget always holds: on a model without a known price it is refused before anything runs, saying
how to give the price (`models: {NAME: {input_per_mtok: …, output_per_mtok: …}}` in config.yaml) or to limit
tokens instead; with a configured price it is counted and halts the run. An unknown cost reads null, never 0;
a halt is one inbox item, in words."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.fakellm.server import FakeLLM
from tests.integration.helpers import run_yeetui, tool_results, wait_for_stored_status

UNPRICED = "openai/house-model-7"
"""A model yeetui's price table does not know."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "notes.txt").write_text("nothing to see\n")
    return root


def _loop(fake: FakeLLM, marker: str | None = None) -> None:
    """An agent that never finishes: it reads a file, again and again, 100 + 10 tokens a request."""
    fake.script(Reply(text="Reading again.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})],
                      when_contains=marker, repeat=True, usage={"input_tokens": 100, "output_tokens": 10}))


def _inbox() -> list[tuple[str, str | None, str, str]]:
    """(session, run, kind, title) of every inbox item, as the store holds them (read-only)."""
    database = Path(os.environ["YEETUI_DATA_DIR"]) / "yeetui.db"
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        return conn.execute("SELECT session_id, run_id, kind, title FROM inbox_items ORDER BY id").fetchall()


def test_a_dollar_budget_on_a_model_without_a_price_is_refused_at_the_start(fake_env: FakeLLM,
                                                                           project: Path) -> None:
    _loop(fake_env)
    done = run_yeetui("run", "--json", "--max-cost", "0.01", "--model", UNPRICED, "go on", cwd=project)
    assert done.returncode == 1
    [said] = [e["message"] for e in done.events if e.get("type") == "error"]
    assert f"knows no price for {UNPRICED}" in said and "$0.01" in said
    assert f"models: {{{UNPRICED}: {{input_per_mtok: …, output_per_mtok: …}}" in said and "config.yaml" in said
    assert "--max-tokens" in said
    assert said in done.stderr
    assert fake_env.requests == []  # nothing was asked of the model, and nothing was left behind
    listed = run_yeetui("agents", "list", "--all", "--json", cwd=project)
    assert json.loads(listed.stdout) == []


def test_a_configured_price_makes_the_dollar_budget_hold(fake_env: FakeLLM, project: Path) -> None:
    """$1000 per million tokens either way: each request of 110 tokens costs $0.11, so $0.50 halts it after
    five, at $0.55."""
    config = Path(os.environ["YEETUI_CONFIG_DIR"]) / "config.yaml"
    config.write_text(f"models:\n  strong: openai/gpt-5.1\n  {UNPRICED}: {{input_per_mtok: 1000, "
                      "output_per_mtok: 1000}\n")
    _loop(fake_env)
    done = run_yeetui("run", "--json", "--max-cost", "0.5", "--model", UNPRICED, "go on", cwd=project,
                      timeout=120)
    result = done.result
    assert result["status"] == "budget_exhausted", result
    assert "cost $0.55 of $0.50" in result["error"] and "budget_exhausted" not in result["error"]
    assert len(fake_env.requests) == 5
    assert result["cost"] == pytest.approx(0.55)
    assert result["result"]["budget"]["spent"]["cost"] == pytest.approx(0.55)
    # headless, in words: the status value stays in `--json`
    said = run_yeetui("run", "--max-cost", "0.2", "--model", UNPRICED, "go on again", cwd=project, timeout=120)
    assert "yeetui: run halted: budget exhausted: cost $0.22 of $0.20" in said.stderr
    assert "budget_exhausted" not in said.stderr


def test_an_unknown_cost_is_null_not_zero(fake_env: FakeLLM, project: Path) -> None:
    _loop(fake_env)
    done = run_yeetui("run", "--json", "--max-tokens", "300", "--model", UNPRICED, "go on", cwd=project,
                      timeout=120)
    result = done.result
    assert result["status"] == "budget_exhausted" and result["cost"] is None, result
    spent = result["result"]["budget"]["spent"]
    assert spent["cost"] is None and spent["unpriced_tokens"] == spent["tokens"] == 330, spent
    status = run_yeetui("agents", "status", result["run_id"], "--json", cwd=project)
    stored = json.loads(status.stdout)
    assert stored["cost"] is None and stored["tree"]["cost"] is None
    assert stored["result"]["budget"]["spent"]["cost"] is None


def test_a_subagent_on_a_model_without_a_price_under_a_dollar_budget_is_refused(fake_env: FakeLLM,
                                                                                project: Path) -> None:
    """The primary runs on a priced model with `--max-cost`; the child it asks for would run on a model whose
    spend the budget could not count: the spawn is refused, saying why, and the primary goes on."""
    fake_env.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "done without it"})], when_contains="Cannot hold"),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "CHILD-TASK",
                                                      "model": UNPRICED, "blocking": True})],
              when_contains="SPAWN-UNPRICED"))
    done = run_yeetui("run", "--json", "--max-cost", "1", "SPAWN-UNPRICED please", cwd=project, timeout=120)
    assert done.result["status"] == "completed", done.result
    [refusal] = tool_results(fake_env.requests[-1].body)
    assert "knows no price for openai/house-model-7" in str(refusal["content"]), refusal
    assert not any("CHILD-TASK" in r.text and "SPAWN-UNPRICED" not in r.text for r in fake_env.requests)


def test_a_halt_is_one_inbox_item(fake_env: FakeLLM, project: Path) -> None:
    """A subagent given a budget by its parent is halted at it: its parent's inbox hears of it once (the
    halted subagent's ending), not once more as a budget item besides."""
    fake_env.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "the child was halted"})], when_contains="Halted"))
    _loop(fake_env, marker="LOOP-TASK")
    fake_env.script(
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "LOOP-TASK read notes.txt",
                                                      "blocking": True, "budget": {"max_tokens": 300}})],
              when_contains="SPAWN-LOOP"))
    done = run_yeetui("run", "--json", "SPAWN-LOOP please", cwd=project, timeout=120)
    assert done.result["status"] == "completed", done.result
    [child] = [r for r in json.loads(run_yeetui("agents", "list", "--all", "--json", cwd=project).stdout)
               if r["profile"] == "oracle"]
    assert wait_for_stored_status(child["id"]) == "budget_exhausted"
    about_child = [item for item in _inbox() if item[1] == child["id"]]
    assert len(about_child) == 1, about_child


def test_a_detached_runs_halt_is_one_inbox_item(fake_env: FakeLLM, project: Path) -> None:
    """`agents start --max-tokens`: the run's own inbox holds its ending, which tells of the halt — once."""
    _loop(fake_env)
    started = run_yeetui("agents", "start", "oracle", "go on", "--max-tokens", "300", "--json", cwd=project)
    run_id = json.loads(started.stdout)["run_id"]
    assert wait_for_stored_status(run_id, timeout=120) == "budget_exhausted"
    status = json.loads(run_yeetui("agents", "status", run_id, "--json", cwd=project).stdout)
    # Three requests of 110 tokens cross 300; a budget tick may land mid-stream of the third, when its output
    # is still 1 token (330 or 321): either way the halt came within the request that crossed the limit.
    [spent] = [int(n) for n in re.findall(r"tokens (\d+) of 300", status["error"])]
    assert 300 < spent <= 330, status["error"]
    about = [item for item in _inbox() if item[1] == run_id]
    assert len(about) == 1, about


def test_a_detached_run_refused_for_want_of_a_price_leaves_no_session(fake_env: FakeLLM, project: Path) -> None:
    done = run_yeetui("agents", "start", "generic", "go on", "--max-cost", "0.01", "--model", UNPRICED, cwd=project)
    assert done.returncode == 1 and f"knows no price for {UNPRICED}" in done.stderr, done.stderr
    database = Path(os.environ["YEETUI_DATA_DIR"]) / "yeetui.db"
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)
