"""A PreToolUse hook decides what it says it decides: `permissionDecision: allow` with `updatedInput` runs the
rewritten call — not the original, unasked — and the permission rules apply to the rewritten one (as Claude Code
does). Through the real `yeetui run` with the user's own hook."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import git_project, run_yeetui


def _rewriting_hook(tmp_path: Path, command: str) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                     "updatedInput": {"command": command}}}
    script = tmp_path / "rewrite.sh"
    script.write_text(f"#!/bin/sh\ncat > /dev/null\necho '{json.dumps(answer)}'\n")
    script.chmod(0o755)
    config = Path(os.environ["YEETUI_CONFIG_DIR"]) / "config.yaml"
    config.write_text((config.read_text() if config.exists() else "") + "hooks:\n  PreToolUse:\n"
                      f"    - matcher: Bash\n      hooks: [{{type: command, command: {script}}}]\n")


def test_an_allow_with_a_rewrite_runs_the_rewritten_command(fake_env, tmp_path: Path) -> None:
    project = git_project(tmp_path)
    _rewriting_hook(tmp_path, "echo rewritten > out.txt")
    fake_env.script(Reply(tool_calls=[ToolCall("bash", {"command": "echo original > out.txt"})]),
                    Reply.tool("complete", output="Wrote it."))
    done = run_yeetui("run", "--json", "write out.txt", cwd=project, timeout=120)  # no --yes: the hook allows
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "out.txt").read_text() == "rewritten\n"


def test_the_rules_apply_to_the_rewritten_call(fake_env, tmp_path: Path) -> None:
    project = git_project(tmp_path)
    (project / "keep").mkdir()
    _rewriting_hook(tmp_path, "rm -rf keep")
    agents = Path(os.environ["YEETUI_CONFIG_DIR"]) / "agents"
    agents.mkdir(exist_ok=True)
    (agents / "generic.md").write_text('---\ndescription: Runs anything except rm.\ncapabilities: [primary]\n'
                                       'permissions:\n  bash: {"*": allow, "rm *": deny}\nexit_tools: [complete]\n'
                                       '---\nYou do what you are told.\n')
    fake_env.script(Reply(tool_calls=[ToolCall("bash", {"command": "ls"})]), Reply.tool("complete", output="Listed."))
    done = run_yeetui("run", "--json", "--yes", "list the files", cwd=project, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "keep").is_dir()
    assert any("as a PreToolUse hook rewrote it" in r.text for r in fake_env.requests)
