"""Lifecycle hooks in Claude Code's shape: where they are read from, what is refused, and what each event does
to a run (a tool call blocked, a prompt given context, an agent kept from stopping, a failing hook reported)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.events import Notice, RunStatus
from yeetui.hooks.sources import load_hooks
from yeetui.runtime import Runtime

LOG = "hook-log.jsonl"
RECORDER = ("python3 -c 'import json,os,sys; d=json.load(sys.stdin); "
            "open(os.path.join(os.environ[\"CLAUDE_PROJECT_DIR\"], \"" + LOG + "\"), \"a\").write("
            "json.dumps({**d, \"env_run\": os.environ[\"YEETUI_RUN_ID\"]}) + chr(10))'")
"""A hook as people write them for Claude Code: it reads its JSON payload from stdin."""


def _config(hooks: dict) -> None:
    config = Path(os.environ["YEETUI_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(json.dumps({"hooks": hooks}))


def _jsonl(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def _log(project: Path) -> list[dict]:
    path = project / LOG
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_what_is_read_and_what_is_refused(tmp_path: Path) -> None:
    hooks = load_hooks({
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]},
                       {"matcher": "(", "hooks": [{"type": "command", "command": "x"}]},
                       {"hooks": [{"type": "prompt", "prompt": "judge it"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "done.sh", "timeout": -1}]}],
        "TeammateIdle": [{"hooks": [{"type": "command", "command": "x"}]}],
        "SubagentStop": "not a list"}, project_dir=tmp_path, trusted=False)
    assert [c.command for c in hooks.commands("PreToolUse", "bash")] == ["guard.sh"]  # Claude's name matches
    assert hooks.commands("PreToolUse", "read_file") == []
    assert hooks.commands("Stop")[0].timeout == 60.0
    problems = "\n".join(hooks.problems)
    for said in ("hooks.PreToolUse[1].matcher '(' is not a regular expression",
                 "only `type: command` hooks run", "hooks.Stop[0].hooks[0].timeout must be seconds",
                 "hooks.TeammateIdle: not an event", "hooks.SubagentStop must be a list"):
        assert said in problems, problems
    # a project's Claude Code settings: only when the project is trusted
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "project.sh"}]}]}}))
    assert load_hooks(None, project_dir=tmp_path, trusted=False).commands("Stop") == []
    assert [c.command for c in load_hooks(None, project_dir=tmp_path, trusted=True).commands("Stop")] == \
        ["project.sh"]
    (tmp_path / ".claude" / "settings.json").write_text("{broken")
    assert "not read" in load_hooks(None, project_dir=tmp_path, trusted=True).problems[0]


@pytest.fixture
def project_dir(project_dir: Path) -> Path:
    _config({
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command":
                        "python3 -c 'import json,sys; d=json.load(sys.stdin); c=d[\"tool_input\"][\"command\"]; "
                        "sys.exit(0) if \"rm -rf\" not in c else (print(\"no rm -rf here\", file=sys.stderr), "
                        "sys.exit(2))'"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'The build uses make.'"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": RECORDER},
                            {"type": "command", "command": "exit 7"}]}],
    })
    return project_dir


async def test_hooks_block_a_tool_call_add_context_to_a_prompt_and_hear_the_stop(
        runtime: Runtime, scripted, project_dir: Path) -> None:
    scripted.script(
        Reply(text="All done.", when_contains="no rm -rf here"),
        Reply(tool_calls=[ToolCall("bash", {"command": "rm -rf build"})], when_contains="clean up"))
    notices: list[Notice] = []
    runtime.bus.add_listener(lambda e: notices.append(e) if isinstance(e, Notice) else None)
    result = await runtime.launcher.run_prompt("clean up", interactive=True)
    assert result.status == RunStatus.WAITING_USER and result.output == "All done."
    first, second = scripted.requests
    assert "The build uses make." in first.text  # the UserPromptSubmit hook's stdout: context for the agent
    assert "blocked by a PreToolUse hook" in second.text and "no rm -rf here" in second.text
    assert "<hook-output event=\\\"PreToolUse\\\" trust=\\\"untrusted\\\">" in second.text  # framed as data
    assert not (project_dir / "build").exists()
    stops = _log(project_dir)
    assert len(stops) == 1 and stops[0]["hook_event_name"] == "Stop" and stops[0]["stop_hook_active"] is False
    assert stops[0]["session_id"] == result.session_id and stops[0]["env_run"] == result.run_id
    assert stops[0]["last_assistant_message"] == "All done."
    transcript = _jsonl(stops[0]["transcript_path"])
    assert transcript[0]["type"] == "user" and "clean up" in transcript[0]["message"]["content"][0]["text"]
    assert any(b.get("type") == "tool_use" and b["name"] == "Bash"
               for t in transcript for b in t["message"]["content"])
    # the hook that failed (exit 7) was reported, and changed nothing
    assert any("The Stop hook `exit 7`" in n.text and "exit 7" in n.text for n in notices)


async def test_a_stop_hook_keeps_the_agent_going_once_then_lets_it_stop(
        runtime: Runtime, scripted, project_dir: Path) -> None:
    marker = project_dir / "reminded"
    runtime.launcher.hooks.hooks.groups["Stop"][0] = type(runtime.launcher.hooks.hooks.groups["Stop"][0])(
        None, (type(runtime.launcher.hooks.hooks.groups["Stop"][0].commands[0])(
            f"test -e {marker} || {{ touch {marker}; echo 'run the tests first' >&2; exit 2; }}", 10, "test"),))
    scripted.script(Reply(text="Tests pass too.", when_contains="run the tests first"),
                    Reply(text="Done.", when_contains="fix it"))
    result = await runtime.launcher.run_prompt("fix it", interactive=True)
    assert result.output == "Tests pass too." and len(scripted.requests) == 2
    assert "[Stop hook] A hook kept you going." in scripted.requests[1].text
    assert "run the tests first" in scripted.requests[1].text


async def test_a_projects_hook_whose_program_changed_on_path_does_not_run(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46, item 1: the executable a trusted project's hook runs is pinned too — another `fmt-tool` put
    first on PATH after yeetui read the hooks stops the hook in the same run, with a notice naming it."""
    from yeetui.bus import Bus
    from yeetui.hooks.runner import HookRunner

    bin1, bin0, project = tmp_path / "bin1", tmp_path / "bin0", tmp_path / "project"
    for folder in (bin1, bin0, project / ".claude"):
        folder.mkdir(parents=True)
    marker = project / "ran"  # the project is writable for a project's hook: had it run, this would exist
    for folder in (bin1, bin0):
        (folder / "fmt-tool").write_text(f"#!/bin/sh\ntouch {marker}\n")
        (folder / "fmt-tool").chmod(0o755)
    (bin0 / "fmt-tool").rename(tmp_path / "fmt-tool-later")
    monkeypatch.setenv("PATH", f"{bin0}:{bin1}:/usr/bin:/bin")
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "fmt-tool"}]}]}}))
    bus = Bus()
    said: list[str] = []
    bus.add_listener(lambda event: said.append(event.text) if isinstance(event, Notice) else None)
    runner = HookRunner(load_hooks(None, project_dir=project, trusted=True), project_dir=project, bus=bus,
                        env=dict(os.environ))
    (tmp_path / "fmt-tool-later").rename(bin0 / "fmt-tool")  # planted after the hooks were read
    await runner.fire("Stop", session_id="s1")
    await runner.close()
    assert not marker.exists()
    assert any("what it runs changed since you trusted the project" in text and str(bin0 / "fmt-tool") in text
               for text in said), said
