"""Claude Code hook scripts, unchanged, run by yeetui: a project's `.claude/settings.json` (trusted) with the
scripts people write for Claude Code — a SubagentStop logger reading its payload and the transcript, a
PreToolUse guard — against the real `yeetui run`. An untrusted project's hooks never run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui

SUBAGENT_STOP_SCRIPT = '''#!/usr/bin/env python3
"""Log every subagent that finishes, with the last thing said in the session's transcript."""
import json
import os
import sys

event = json.load(sys.stdin)
last = ""
with open(event.get("agent_transcript_path") or event["transcript_path"]) as transcript:
    for line in transcript:
        entry = json.loads(line)
        if entry.get("type") == "assistant":
            for block in entry["message"]["content"]:
                if block.get("type") == "text":
                    last = block["text"]
log = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "subagent-stops.log")
with open(log, "a") as out:
    out.write(json.dumps({"event": event["hook_event_name"], "session": event["session_id"],
                          "active": event["stop_hook_active"], "agent": event.get("agent_type"),
                          "last": last, "run": os.environ.get("YEETUI_RUN_ID")}) + "\\n")
'''

GUARD_SCRIPT = '''#!/usr/bin/env bash
# Refuse destructive commands (reads the PreToolUse payload from stdin).
command=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"]["command"])')
if [[ "$command" == *"rm -rf"* ]]; then
  echo "Destructive command refused by the project's guard" >&2
  exit 2
fi
exit 0
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    hooks = root / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (root / ".git").mkdir()
    for name, text in (("log_subagent_stop.py", SUBAGENT_STOP_SCRIPT), ("guard.sh", GUARD_SCRIPT)):
        (hooks / name).write_text(text)
        (hooks / name).chmod(0o755)
    (root / ".claude" / "settings.json").write_text(json.dumps({"hooks": {
        "SubagentStop": [{"hooks": [{"type": "command",
                                     "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/log_subagent_stop.py"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
                                                      "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}]}],
    }}))
    return root


def _script(fake_env) -> None:
    fake_env.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "ORACLE-SAYS the timer"})], when_contains="ORACLE-TASK",
              text="Looked at the test."),
        Reply(tool_calls=[ToolCall("bash", {"command": "rm -rf build"})], when_contains="ORACLE-SAYS"),
        Reply(text="Could not clean: the guard refused.", when_contains="refused by the project's guard"),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "ORACLE-TASK why?",
                                                      "blocking": True})]))


def test_claude_code_hook_scripts_run_unchanged_in_a_trusted_project(fake_env, project: Path) -> None:
    _script(fake_env)
    (project / "build").mkdir()
    done = run_yeetui("run", "--json", "--yes", "--trust", "PARENT go", cwd=project, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    log = [json.loads(line) for line in (project / "subagent-stops.log").read_text().splitlines()]
    registered = [e for e in done.events if e["type"] == "run_registered"]
    parent, child = registered[0], registered[1]
    assert log == [{"event": "SubagentStop", "session": parent["session_id"], "active": False, "agent": "oracle",
                    "last": "Looked at the test.", "run": child["run_id"]}]
    # the guard refused the destructive command; the agent heard why, and the folder is still there
    assert (project / "build").is_dir()
    assert any("refused by the project's guard" in r.text for r in fake_env.requests)


def test_an_untrusted_projects_hooks_never_run(fake_env, project: Path) -> None:
    _script(fake_env)
    done = run_yeetui("run", "--json", "--yes", "PARENT go", cwd=project, timeout=120)
    assert not (project / "subagent-stops.log").exists()
    assert not any("refused by the project's guard" in r.text for r in fake_env.requests)
    assert done.returncode in (0, 1), done.stderr
