"""The agent loop in-process (no subprocess): limits, permissions, cancellation, persistence.

Models are answered by the in-process scripted provider (`scripted`, see tests/unit/conftest.py); the tests of
how a model name reaches a real provider over HTTP (errors from the server, a missing API key) use `fake_env`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.processes import gone, running_with, unique_sleep
from yeetui.events import PermissionRequested, RunStatus, RunStatusChanged
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runtime import Runtime


async def test_complete_ends_run_and_records_usage(runtime: Runtime, scripted) -> None:
    scripted.script(Reply(text="ok", tool_calls=[ToolCall("complete", {"output": "all done", "status": "partial",
                                                                          "next_steps": ["ship"]})],
                          usage={"input_tokens": 1000, "output_tokens": 200}))
    result = await runtime.launcher.run_prompt("do it")
    assert result.status == RunStatus.COMPLETED
    assert result.output == "all done"
    assert result.result["status"] == "partial" and result.result["next_steps"] == ["ship"]
    assert result.usage.input_tokens == 1000 and result.usage.output_tokens == 200
    assert result.cost is not None and result.cost > 0
    run = await runtime.store.get_run(result.run_id)
    assert run.status == RunStatus.COMPLETED and run.result["output"] == "all done"
    assert run.usage.output_tokens == 200


async def test_unknown_model_cost_is_unknown_not_zero(runtime: Runtime, scripted) -> None:
    scripted.script(Reply.tool("complete", output="x"))
    result = await runtime.launcher.run_prompt("go", model="anthropic/some-future-model-9")
    assert result.status == RunStatus.COMPLETED
    assert result.cost is None


async def test_max_turns(runtime: Runtime, scripted) -> None:
    scripted.script(Reply(tool_calls=[ToolCall("list_dir", {"path": "."})], repeat=True))
    profile = runtime.profiles.get("generic")
    runtime.profiles.profiles["generic"] = profile.model_copy(
        update={"limits": profile.limits.model_copy(update={"max_turns": 3})})
    result = await runtime.launcher.run_prompt("loop forever")
    assert result.status == RunStatus.FAILED and "max_turns (3)" in result.error
    assert len(scripted.requests) == 3


async def test_token_budget(runtime: Runtime, scripted) -> None:
    scripted.script(Reply(tool_calls=[ToolCall("list_dir", {"path": "."})], repeat=True,
                          usage={"input_tokens": 600, "output_tokens": 10}))
    profile = runtime.profiles.get("generic")
    runtime.profiles.profiles["generic"] = profile.model_copy(
        update={"limits": profile.limits.model_copy(update={"max_total_tokens": 1000})})
    result = await runtime.launcher.run_prompt("spend")
    assert result.status == RunStatus.BUDGET_EXHAUSTED and "tokens 1,220 of 1,000" in result.error
    assert len(scripted.requests) == 2


async def test_timeout_cancels_the_run(runtime: Runtime, scripted) -> None:
    scripted.script(Reply(text="slow " * 200, chunk_size=5, chunk_delay=0.05))
    profile = runtime.profiles.get("generic")
    runtime.profiles.profiles["generic"] = profile.model_copy(
        update={"limits": profile.limits.model_copy(update={"timeout": 0.5})})
    result = await runtime.launcher.run_prompt("take your time")
    assert result.status == RunStatus.TIMEOUT and "0.5" in result.error
    assert (await runtime.store.get_run(result.run_id)).status == RunStatus.TIMEOUT


async def test_cancel_marks_cancelled_and_kills_bash(runtime: Runtime, scripted, tmp_path: Path) -> None:
    duration = unique_sleep()
    scripted.script(Reply.tool("bash", command=f"sleep {duration} & wait"))
    answer_permissions_headless(runtime.bus, approve=True)
    task = asyncio.create_task(runtime.launcher.run_prompt("sleep"))
    for _ in range(200):
        if running_with(duration):
            break
        await asyncio.sleep(0.05)
    [child] = running_with(duration)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):  # killed at once; being reaped can take a moment on a busy box
        if gone(child):
            break
        await asyncio.sleep(0.05)
    assert gone(child), f"the command's `sleep` (pid {child}) outlived the cancelled run"
    (run,) = await runtime.store.list_runs()
    assert run.status == RunStatus.CANCELLED


async def test_ask_permission_round_trip(runtime: Runtime, scripted) -> None:
    asked: list[PermissionRequested] = []
    statuses: list[RunStatus] = []

    def on_event(event) -> None:
        if isinstance(event, PermissionRequested):
            asked.append(event)
            event.reply.set_result("allow_always")
        if isinstance(event, RunStatusChanged):
            statuses.append(event.status)

    runtime.bus.add_listener(on_event)
    scripted.script(Reply.tool("bash", command="echo one"), Reply.tool("bash", command="echo one"),
                    Reply.tool("complete", output="ok"))
    result = await runtime.launcher.run_prompt("echo twice")
    assert result.status == RunStatus.COMPLETED
    assert len(asked) == 1  # "allow always" remembered for the same command
    assert asked[0].tool == "bash" and asked[0].subject == "echo one" and asked[0].agent_label.startswith("generic#")
    assert RunStatus.WAITING_PERMISSION in statuses


async def test_headless_denies_ask_without_yes(runtime: Runtime, scripted, tmp_path: Path) -> None:
    answer_permissions_headless(runtime.bus, approve=False)
    scripted.script(Reply.tool("bash", command="touch made"), Reply.tool("complete", output="ok"))
    result = await runtime.launcher.run_prompt("touch")
    assert result.status == RunStatus.COMPLETED
    assert not (runtime.project_dir / "made").exists()
    said = scripted.requests[1].text
    assert "Refused without asking: bash" in said and "nobody to ask" in said and "The user denied" not in said


async def test_interactive_text_answer_waits_for_user_without_nudges(runtime: Runtime, scripted) -> None:
    scripted.script(Reply(text="Hello! What shall we build?"))
    result = await runtime.launcher.run_prompt("hi", interactive=True)
    assert result.status == RunStatus.WAITING_USER and result.output == "Hello! What shall we build?"
    assert len(scripted.requests) == 1


async def test_ask_user_exit_tool(runtime: Runtime, scripted) -> None:
    scripted.script(Reply.tool("ask_user", question="Which database?"))
    result = await runtime.launcher.run_prompt("set up storage")
    assert result.status == RunStatus.WAITING_USER and result.output == "Which database?"


async def test_provider_unreachable_fails_with_reason(project_dir: Path, fake_env, monkeypatch) -> None:
    monkeypatch.setenv("YEETUI_RETRY__MAX_ATTEMPTS", "2")
    fake_env.script(Reply.error(500), Reply.error(500))
    rt = await Runtime.open(cwd=project_dir)
    try:
        result = await rt.launcher.run_prompt("hello")
    finally:
        await rt.close()
    assert result.status == RunStatus.FAILED and "500" in result.error


async def test_no_api_key_is_a_clear_failure(project_dir: Path, fake_env, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    rt = await Runtime.open(cwd=project_dir)
    try:
        result = await rt.launcher.run_prompt("hello")
    finally:
        await rt.close()
    assert result.status == RunStatus.FAILED and "ANTHROPIC_API_KEY" in result.error
    assert fake_env.requests == []


async def test_workflow_transition_does_not_end_the_run(scripted, tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "wf-project"
    (project / ".yeetui" / "workflows").mkdir(parents=True)
    (project / ".yeetui" / "agents").mkdir(parents=True)
    (project / ".yeetui" / "workflows" / "two.yaml").write_text(
        "name: two\nsteps:\n"
        "  - name: plan\n    instructions: Plan only.\n    allowed_tools: [read_file]\n"
        "    transitions: [{on_tool: complete, to: build}]\n"
        "  - name: build\n    instructions: Build it.\n    exit: {tool: complete}\n")
    (project / ".yeetui" / "agents" / "stepper.yaml").write_text(
        "description: steps\ncapabilities: [subtask]\nprompt: You follow steps.\nworkflow: two\n")
    scripted.script(Reply.tool("bash", command="ls"), Reply.tool("complete", output="the plan"),
                    Reply.tool("complete", output="built"))
    rt = await Runtime.open(cwd=project, provider_factory=scripted.provider_factory)
    try:
        result = await rt.launcher.run_prompt("go", profile_name="stepper")
        state = await rt.store.workflow_states.load(result.run_id)
    finally:
        await rt.close()
    assert result.status == RunStatus.COMPLETED and result.output == "built"
    first, second, third = (r.body for r in scripted.requests)
    assert "Current step: plan" in json.dumps(first["system"])
    assert "bash is blocked" in json.dumps(second["messages"][-1])
    assert "Current step: build" in json.dumps(third["system"]) and "the plan" in json.dumps(third["system"])
    assert state is not None and state.state["finished"] is True and state.state["history"] == ["plan"]
    offered = [[t["name"] for t in r["tools"]] for r in (first, third)]
    assert "bash" not in offered[0] and "write_file" not in offered[0]  # blocked in `plan`: not offered there
    assert "read_file" in offered[0] and "complete" in offered[0]
    assert "bash" in offered[1] and "write_file" in offered[1]  # `build` allows them
    checkpoint = json.dumps(third["messages"][-1])
    assert "goes on in workflow step 'build'" in checkpoint and "Run completed" not in checkpoint


async def test_an_exit_call_that_keeps_failing_its_schema_ends_the_run_after_the_reminders(runtime, scripted) -> None:
    """`complete` with arguments it refuses, again and again: the run stops after the reminder budget with
    what was wrong, instead of burning every turn up to max_turns."""
    scripted.script(Reply(tool_calls=[ToolCall("complete", {"output": "x", "status": "maybe"})], repeat=True))
    result = await runtime.launcher.run_prompt("finish", profile_name="oracle")
    limit = runtime.profiles.get("oracle").limits.max_nudges
    assert result.status == RunStatus.FAILED
    assert f"complete was refused {limit + 1} times" in (result.error or "")
    assert "status" in (result.error or "")  # says what was wrong
    assert len(scripted.requests) == limit + 1
