"""Budgets in-process: where a run's budget comes from (profile, command, spawn, config), each limit halting
the tree, the 80 % warning, the ledger's figures, and a halt sent from another process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.definitions.profiles import BudgetLimits
from yeetui.events import BudgetUpdated, InboxItemAdded, MessageCommitted, RunStatus
from yeetui.runs.budget import Budget, Spend, against, breach, used_share
from yeetui.runtime import Runtime
from yeetui.settings.config import load_settings

LOOP = Reply(text="Again.", tool_calls=[ToolCall("list_dir", {"path": "."})], repeat=True,
             usage={"input_tokens": 100, "output_tokens": 10})


def _budget_profile(runtime: Runtime, **limits: object) -> None:
    profile = runtime.profiles.get("generic")
    runtime.profiles.profiles["generic"] = profile.model_copy(update={"limits": profile.limits.model_copy(
        update={"budget": BudgetLimits(**limits)})})


def test_the_budget_arithmetic() -> None:
    budget = Budget(max_cost_usd=0.5, max_tokens=1000)
    assert breach(budget, Spend(tokens=999, cost=0.49)) is None
    assert breach(budget, Spend(tokens=1000)).limit == "max_tokens"
    assert breach(budget, Spend(cost=0.5)).text == "cost $0.50 of $0.50"
    assert used_share(budget, Spend(tokens=800, cost=0.1)) == pytest.approx(0.8)
    assert against(budget, Spend(tokens=400, cost=0.25)) == "$0.25/$0.50 · 400/1.0k tok"
    assert Budget(max_turns=5).tighter(Budget(max_turns=3, max_minutes=2)) == Budget(max_turns=3, max_minutes=2)
    assert Budget.from_json({"max_cost_usd": 1}) == Budget(max_cost_usd=1.0)
    assert Budget.from_json({}) is None
    for bad, says in (({"max_cost": 1}, "unknown budget limit 'max_cost'"), ({"max_turns": 1.5}, "whole number"),
                      ({"max_tokens": -1}, "positive"), ({"max_minutes": True}, "positive"), ([1], "mapping")):
        with pytest.raises(ValueError, match=says):
            Budget.from_json(bad)
    assert "(9 tok at unknown prices)" in Spend(tokens=20, unpriced_tokens=9).text()


async def test_a_profiles_turn_budget_halts_the_run_and_the_ledger_hears_the_spend(runtime: Runtime,
                                                                                  scripted) -> None:
    scripted.script(LOOP)
    _budget_profile(runtime, max_turns=5)
    heard: list[object] = []
    runtime.bus.add_listener(heard.append)
    result = await runtime.launcher.run_prompt("loop")
    assert result.status == RunStatus.BUDGET_EXHAUSTED and "model turns 5 of 5" in result.error
    assert len(scripted.requests) == 5 and result.output.startswith("Again.")
    spends = [e.against for e in heard if isinstance(e, BudgetUpdated)]
    assert "1/5 turns" in spends and spends[-1] == "5/5 turns"
    # the 80 % warning (4 of 5 turns), then the halt, in the requester's inbox: once each
    items = [(e.item_kind, e.title) for e in heard if isinstance(e, InboxItemAdded)]
    assert items == [("budget", "generic#1 has spent 80% of its budget"),
                     ("budget", "generic#1 halted: budget exhausted")]
    run = await runtime.store.get_run(result.run_id)
    assert run.status == RunStatus.BUDGET_EXHAUSTED and run.turns == 5


async def test_the_tightest_budget_wins_and_a_project_may_only_lower_the_users(
        runtime: Runtime, scripted, project_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "config-home"
    config.mkdir()
    (config / "config.yaml").write_text("budget: {max_turns: 5, max_cost_usd: 2}\n")
    (project_dir / ".yeetui").mkdir(exist_ok=True)
    (project_dir / ".yeetui" / "config.yaml").write_text("budget: {max_turns: 50, max_cost_usd: null, "
                                                         "max_tokens: 900}\n")
    loaded = load_settings(project_dir=project_dir, env={"YEETUI_CONFIG_DIR": str(config)}, trusted=True)
    assert loaded.settings.budget == BudgetLimits(max_turns=5, max_cost_usd=2, max_tokens=900)
    assert any("ignored budget.max_turns: 50" in w for w in loaded.warnings)
    assert any("ignored budget.max_cost_usd: None" in w for w in loaded.warnings)
    # the command's budget, tighter than the profile's
    scripted.script(LOOP)
    _budget_profile(runtime, max_turns=6)
    result = await runtime.launcher.run_prompt("loop", budget=Budget(max_turns=2))
    assert result.status == RunStatus.BUDGET_EXHAUSTED and len(scripted.requests) == 2


async def test_a_wall_clock_budget_halts_a_run_that_waits(runtime: Runtime, scripted) -> None:
    """Nothing is spent while the model streams slowly: the clock alone halts it."""
    scripted.script(Reply(text="slow " * 400, chunk_size=4, chunk_delay=0.05))
    runtime.launcher.budgets.tick = 0.05
    result = await asyncio.wait_for(runtime.launcher.run_prompt("wait", budget=Budget(max_minutes=0.5 / 60)), 30)
    assert result.status == RunStatus.BUDGET_EXHAUSTED and "time" in result.error and "minutes" in result.error


async def test_a_halt_sent_from_another_process_stops_the_run(runtime: Runtime, scripted) -> None:
    """What another process's keeper sends (`run_commands` kind `halt`) ends the run `budget_exhausted`."""
    scripted.script(LOOP)
    answered = asyncio.Event()
    runtime.bus.add_listener(lambda e: answered.set() if isinstance(e, MessageCommitted)
                             and e.message.role == "assistant" else None)
    handle = await runtime.spawner.spawn(_request("generic", "loop"))
    await asyncio.wait_for(answered.wait(), 30)
    run = await runtime.store.get_run(handle.run_id)
    await runtime.store.run_commands.post(run.id, "halt", "budget exhausted: cost $1.00 of $1.00", sender="budget")
    ended = await asyncio.wait_for(runtime.spawner.wait(run.id), 30)
    assert ended.status == RunStatus.BUDGET_EXHAUSTED
    stored = await runtime.store.get_run(run.id)
    assert stored.status == RunStatus.BUDGET_EXHAUSTED and "cost $1.00 of $1.00" in stored.error


def _request(profile: str, prompt: str):
    from yeetui.application.agents import SpawnRequest

    return SpawnRequest(profile=profile, prompt=prompt, requested_by="user")


async def test_the_last_request_a_turn_budget_allows_is_not_cut_short(runtime: Runtime, scripted) -> None:
    """`max_turns: 2`: the second request streams slowly while the budget is looked at many times; it is
    allowed to finish (it is the budget's), and the run stops before a third."""
    scripted.script(Reply(text="first look", tool_calls=[ToolCall("list_dir", {"path": "."})]),
                    Reply(text="a slow and complete second answer", chunk_size=3, chunk_delay=0.05,
                          tool_calls=[ToolCall("list_dir", {"path": "."})]),
                    LOOP)
    runtime.launcher.budgets.tick = 0.02
    result = await runtime.launcher.run_prompt("look twice", budget=Budget(max_turns=2))
    assert result.status == RunStatus.BUDGET_EXHAUSTED and len(scripted.requests) == 2
    assert result.output.startswith("a slow and complete second answer")


async def test_a_budget_a_parent_gives_its_child_halts_the_child_alone(runtime: Runtime, scripted) -> None:
    """`spawn_subagent` with `budget: {max_turns: 2}`: the child's tree is halted at it; the parent hears the
    child ended `budget_exhausted` and goes on."""
    scripted.script(
        Reply(text="Child looking.", tool_calls=[ToolCall("list_dir", {"path": "."})],
              when_contains="You are the oracle", repeat=True),
        Reply(text="The child ran out of budget; I will answer myself.", when_contains="Halted: budget exhausted"),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "CHILD-LOOP go",
                                                      "blocking": True, "budget": {"max_turns": 2}})]))
    result = await runtime.launcher.run_prompt("PARENT", interactive=True)
    assert result.output == "The child ran out of budget; I will answer myself."
    [child] = [r for r in await runtime.store.list_runs() if r.profile == "oracle"]
    assert child.status == RunStatus.BUDGET_EXHAUSTED and child.turns == 2
    assert child.options["budget"] == {"max_turns": 2}
