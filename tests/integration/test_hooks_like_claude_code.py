"""The same `.claude/settings.json` under the real Claude Code and under yeetui, and what its hooks saw compared:
the events that fired (matchers on the tool's name and on how the session started included), the payloads' keys,
the tool's name, input and response in Claude Code's shape, the transcript's tool names, `CLAUDE_ENV_FILE`
(written at SessionStart, sourced before the next command), and `additionalContext` reaching the model.

Claude Code is the binary the Claude Agent SDK ships (installed by `.ci/run` with its ACP adapter), run offline
against the test suite's fake LLM with a HOME of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui

CLAUDE = (Path(__file__).resolve().parents[2] / ".ci" / "cache" / "npm" / "node_modules" / "@anthropic-ai"
          / "claude-agent-sdk-linux-x64" / "claude")
needs_claude = pytest.mark.skipif(not CLAUDE.exists(), reason="Claude Code comes with @agentclientprotocol/"
                                  "claude-agent-acp, installed by .ci/run (npm install --prefix .ci/cache/npm)")
TITLE = "naming a coding session"
"""Claude Code's side request that names the session: answered apart."""

RECORDER = '''#!/usr/bin/env python3
"""Record what this hook was given: its payload, its environment, and the tools its transcript names."""
import json, os, sys
payload = json.load(sys.stdin)
tools = []
if payload.get("transcript_path") and os.path.isfile(payload["transcript_path"]):
    with open(payload["transcript_path"]) as transcript:
        for line in transcript:
            entry = json.loads(line)
            content = (entry.get("message") or {}).get("content") if isinstance(entry.get("message"), dict) else None
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_use":
                    tools.append(block["name"])
env_file = os.environ.get("CLAUDE_ENV_FILE")
if env_file and sys.argv[1:] == ["startup"]:
    with open(env_file, "a") as out:
        out.write("export HOOKED_VAR=from-the-env-file\\n")
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "hook-log.jsonl"), "a") as log:
    log.write(json.dumps({"payload": payload, "tag": sys.argv[1:], "tools": tools,
                          "env_file": bool(env_file), "run": os.environ.get("YEETUI_RUN_ID")}) + "\\n")
if payload["hook_event_name"] == "PostToolUse":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                             "additionalContext": "POST-CONTEXT-SEEN by the hook"}}))
'''

DOCUMENTED = {"session_id", "transcript_path", "cwd", "hook_event_name", "permission_mode", "source", "prompt",
              "tool_name", "tool_input", "tool_use_id", "tool_response", "stop_hook_active",
              "last_assistant_message", "reason"}
"""The payload keys Claude Code's hooks reference documents (it sends more: effort, prompt ids, crons …)."""
COMMAND = 'echo "var=$HOOKED_VAR"; echo err >&2'


def _project(root: Path) -> Path:
    hooks = root / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (hooks / "record.py").write_text(RECORDER)
    (hooks / "record.py").chmod(0o755)

    def recorded(tag: str) -> list[dict[str, Any]]:
        return [{"type": "command", "command": f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/record.py {tag}'}]

    (root / ".claude" / "settings.json").write_text(json.dumps({"hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": recorded("startup")},
                         {"matcher": "resume|compact", "hooks": recorded("resumed")}],
        "UserPromptSubmit": [{"hooks": recorded("prompt")}],
        "PreToolUse": [{"matcher": "^Ba", "hooks": recorded("pre")}, {"matcher": "Edit$", "hooks": recorded("no")}],
        "PostToolUse": [{"matcher": "Bash", "hooks": recorded("post")}],
        "Notification": [{"hooks": recorded("notification")}],
        "Stop": [{"hooks": recorded("stop")}],
        "SessionEnd": [{"hooks": recorded("end")}],
    }}))
    return root


def _log(project: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (project / "hook-log.jsonl").read_text().splitlines()]


def _under_claude_code(fake_env, project: Path, home: Path) -> list[dict[str, Any]]:
    fake_env.script(
        Reply(text="Hooks compared", when_contains=TITLE, repeat=True),
        Reply(tool_calls=[ToolCall("Bash", {"command": COMMAND, "description": "say the variable"})],
              when_contains="GO-NOW"),
        Reply(text="ALL-DONE", when_contains="POST-CONTEXT-SEEN", repeat=True),
        Reply(text="(another request)", repeat=True))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "ANTHROPIC_BASE_URL": os.environ["ANTHROPIC_BASE_URL"],
           "ANTHROPIC_API_KEY": os.environ["ANTHROPIC_API_KEY"], "IS_SANDBOX": "1", "DISABLE_AUTOUPDATER": "1",
           "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1"}
    done = subprocess.run([str(CLAUDE), "-p", "GO-NOW", "--dangerously-skip-permissions"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and "ALL-DONE" in done.stdout, (done.stdout, done.stderr)
    return _log(project)


def _under_yeetui(fake_env, project: Path) -> list[dict[str, Any]]:
    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": COMMAND})], when_contains="GO-NOW"),
        Reply(tool_calls=[ToolCall("complete", {"output": "ALL-DONE"})], text="ALL-DONE",
              when_contains="POST-CONTEXT-SEEN"))
    done = run_yeetui("run", "--json", "--yes", "--trust", "GO-NOW", cwd=project, timeout=180)
    assert done.returncode == 0 and done.result["output"] == "ALL-DONE", (done.stdout, done.stderr)
    return _log(project)


@needs_claude
def test_the_same_hooks_see_the_same_things_under_claude_code_and_yeetui(fake_env, tmp_path: Path) -> None:
    home = tmp_path / "claude-home"
    home.mkdir()
    ours = _under_yeetui(fake_env, _project(tmp_path / "under-yeetui"))  # first: its replies are all used up
    seen_by_yeetui = [r.text for r in fake_env.requests]
    claude = _under_claude_code(fake_env, _project(tmp_path / "under-claude"), home)
    seen_by_claude = [r.text for r in fake_env.requests][len(seen_by_yeetui):]

    # the same hooks fired, in the same order: `startup` matched and `resume|compact` did not; `^Ba` is searched
    # for (it fired), `Edit$` did not; nobody was asked, so no Notification
    fired = [(entry["payload"]["hook_event_name"], entry["tag"]) for entry in claude]
    assert fired == [("SessionStart", ["startup"]), ("UserPromptSubmit", ["prompt"]), ("PreToolUse", ["pre"]),
                     ("PostToolUse", ["post"]), ("Stop", ["stop"]), ("SessionEnd", ["end"])], fired
    assert [(entry["payload"]["hook_event_name"], entry["tag"]) for entry in ours] == fired

    for theirs, mine in zip(claude, ours, strict=True):
        event = theirs["payload"]["hook_event_name"]
        missing = (set(theirs["payload"]) & DOCUMENTED) - set(mine["payload"])
        assert not missing, f"{event}: yeetui's payload lacks {missing}"
        for key in ("source", "reason", "stop_hook_active", "tool_name", "last_assistant_message"):
            assert mine["payload"].get(key) == theirs["payload"].get(key), (event, key)
        assert mine["env_file"] == theirs["env_file"] == (event == "SessionStart"), event  # CLAUDE_ENV_FILE
        assert mine["run"], f"{event}: no YEETUI_RUN_ID"
    pre_theirs, pre_mine = claude[2]["payload"], ours[2]["payload"]
    assert pre_mine["tool_input"]["command"] == pre_theirs["tool_input"]["command"] == COMMAND
    post_theirs, post_mine = claude[3]["payload"]["tool_response"], ours[3]["payload"]["tool_response"]
    assert set(post_mine) == set(post_theirs) == {"stdout", "stderr", "interrupted", "isImage", "noOutputExpected"}
    # Claude Code's Bash merges stderr into stdout, as yeetui's does; the variable came from CLAUDE_ENV_FILE
    assert post_mine["stdout"] == post_theirs["stdout"] == "var=from-the-env-file\nerr", (post_mine, post_theirs)
    assert post_mine["interrupted"] is post_theirs["interrupted"] is False
    # at Stop, the transcript names the tool as the payloads do (and yeetui's run ended by calling `complete`)
    assert claude[4]["tools"] == ["Bash"] and ours[4]["tools"] == ["Bash", "complete"]
    # PostToolUse's additionalContext reached the model in both
    assert any("POST-CONTEXT-SEEN" in text for text in seen_by_claude)
    assert any("POST-CONTEXT-SEEN" in text for text in seen_by_yeetui)


@needs_claude
def test_file_tools_responses_have_claude_codes_shape(fake_env, tmp_path: Path) -> None:
    """Write, Edit and Read under both: the same keys in `tool_response`, the same patch, absolute paths."""
    home = tmp_path / "claude-home"
    home.mkdir()
    projects = {}
    for who in ("claude", "yeetui"):
        root = tmp_path / f"files-{who}"
        _project(root)
        settings = json.loads((root / ".claude" / "settings.json").read_text())
        settings["hooks"] = {"PostToolUse": [{"matcher": "Write|Edit|Read", "hooks": [
            {"type": "command", "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/record.py post'}]}]}
        (root / ".claude" / "settings.json").write_text(json.dumps(settings))
        projects[who] = root
    fake_env.script(
        Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "one\ntwo\nthree\n"})],
              when_contains="FILES-NOW"),
        Reply(tool_calls=[ToolCall("edit_file", {"path": "a.txt", "old_string": "two", "new_string": "TWO"})],
              when_contains="Created a.txt"),
        Reply(tool_calls=[ToolCall("read_file", {"path": "a.txt"})], when_contains="Replaced 1"),
        Reply(tool_calls=[ToolCall("complete", {"output": "FILES-DONE"})], when_contains="Replaced 1"))
    done = run_yeetui("run", "--json", "--yes", "--trust", "FILES-NOW", cwd=projects["yeetui"], timeout=180)
    assert done.returncode == 0, (done.stdout, done.stderr)
    ours = {e["payload"]["tool_name"]: e["payload"] for e in _log(projects["yeetui"])}

    target = projects["claude"] / "a.txt"
    fake_env.script(
        Reply(text="Files", when_contains=TITLE, repeat=True),
        Reply(tool_calls=[ToolCall("Write", {"file_path": str(target), "content": "one\ntwo\nthree\n"})],
              when_contains="FILES-NOW"),
        Reply(tool_calls=[ToolCall("Edit", {"file_path": str(target), "old_string": "two", "new_string": "TWO"})],
              when_contains="File created"),
        Reply(tool_calls=[ToolCall("Read", {"file_path": str(target)})], when_contains="has been updated"),
        Reply(text="(another request)", repeat=True))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "ANTHROPIC_BASE_URL": os.environ["ANTHROPIC_BASE_URL"],
           "ANTHROPIC_API_KEY": os.environ["ANTHROPIC_API_KEY"], "IS_SANDBOX": "1", "DISABLE_AUTOUPDATER": "1"}
    ran = subprocess.run([str(CLAUDE), "-p", "FILES-NOW", "--dangerously-skip-permissions"],
                         cwd=projects["claude"], env=env, capture_output=True, text=True, timeout=180)
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    claude = {e["payload"]["tool_name"]: e["payload"] for e in _log(projects["claude"])}
    assert set(ours) == set(claude) == {"Write", "Edit", "Read"}

    def same_place(value: Any) -> Any:  # the two projects' folders differ; what is in them must not
        return json.loads(json.dumps(value).replace(str(projects["yeetui"]), str(projects["claude"])))

    for tool in ("Write", "Edit", "Read"):
        theirs, mine = claude[tool]["tool_response"], same_place(ours[tool]["tool_response"])
        assert mine == theirs or _keys(mine) == _keys(theirs), (tool, mine, theirs)
        assert same_place(ours[tool]["tool_input"])["file_path"] == claude[tool]["tool_input"]["file_path"]
    assert same_place(ours["Edit"]["tool_response"]) == claude["Edit"]["tool_response"]
    assert same_place(ours["Write"]["tool_response"]) == claude["Write"]["tool_response"]
    assert ours["Read"]["tool_response"]["file"]["content"] == claude["Read"]["tool_response"]["file"]["content"]
    shutil.rmtree(home, ignore_errors=True)


def _keys(value: Any) -> Any:
    """The shape of a JSON value: its keys, nested."""
    if isinstance(value, dict):
        return {key: _keys(item) for key, item in value.items()}
    return type(value).__name__
