"""External agents as yeetui subagents (`runner: acp`): the real Claude Code ACP adapter from npm, and yeetui's
own `yeetui acp`, driven through the real binary against the fake LLM. Each runs as a yeetui run — its text, its
ending delivered, its costs — its own subagents become nodes of yeetui's tree, and its permission questions
are yeetui's (refused headless without --yes, allowed with it)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui, start_yeetui
from tests.integration.zygote import ZYGOTE
from tests.processes import gone
from yeetui import paths
from yeetui.system.tmux import TmuxServer, server_name

NPM_BIN = Path(__file__).resolve().parents[2] / ".ci" / "cache" / "npm" / "node_modules" / ".bin"
CLAUDE_ACP = NPM_BIN / "claude-agent-acp"
OPENCODE = NPM_BIN / "opencode"
CODEX_ACP = NPM_BIN / "codex-acp"
GEMINI = NPM_BIN / "gemini"
needs_opencode = pytest.mark.skipif(not OPENCODE.exists(), reason="opencode-ai is installed by .ci/run")
needs_codex = pytest.mark.skipif(not CODEX_ACP.exists(), reason="@agentclientprotocol/codex-acp (with @openai/codex) "
                                 "is installed by .ci/run")
needs_gemini = pytest.mark.skipif(not GEMINI.exists(), reason="@google/gemini-cli is installed by .ci/run")
needs_claude = pytest.mark.skipif(not CLAUDE_ACP.exists(), reason="@agentclientprotocol/claude-agent-acp (with Node "
                                  "22) is installed by .ci/run (npm install --prefix .ci/cache/npm)")
TITLE = "naming a coding session"
"""In Claude Code's side request that names the session (it carries the prompt too): answered apart."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


def _profile(name: str, text: str) -> None:
    agents = Path(os.environ["YEETUI_CONFIG_DIR"]) / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / f"{name}.yaml").write_text(text)


def _claude(tmp_path: Path) -> None:
    home = tmp_path / "claude-home"  # Claude Code writes its settings under HOME: never the real one
    home.mkdir()
    _profile("claude", f"""description: Claude Code, through its ACP adapter
capabilities: [primary, subtask]
runner: acp
acp:
  command: {CLAUDE_ACP}
  env: {{IS_SANDBOX: "1", HOME: {json.dumps(str(home))}, PATH: {json.dumps(f"{NPM_BIN}:{os.environ['PATH']}")},
        CLAUDE_CODE_DISABLE_BACKGROUND_TASKS: "1"}}
""")


def _runs(project: Path) -> list[dict]:
    listed = run_yeetui("agents", "list", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


@needs_claude
def test_claude_code_runs_as_a_yeetui_agent_and_its_subagent_is_a_node_of_the_tree(
        fake_env, project: Path, tmp_path: Path) -> None:
    _claude(tmp_path)
    fake_env.script(
        Reply(text="Spawn test", when_contains=TITLE, repeat=True),
        Reply(tool_calls=[ToolCall("Agent", {"description": "look around", "prompt": "SUB-TASK look around the repo",
                                             "subagent_type": "general-purpose"})], when_contains="SPAWN-IT"),
        # Every request of the subagent (Claude Code marks them `cc_is_subagent`; it may make more than one)
        # gets its answer, and every later request of the main agent holds that answer and gets the final one —
        # in whatever order a loaded machine sends them.
        Reply(text="SUB-RESULT found nothing", when_contains="cc_is_subagent", repeat=True),
        Reply(text="MAIN-DONE the child found nothing", when_contains="SUB-RESULT", repeat=True),
        Reply(text="(another request)", repeat=True))
    done = run_yeetui("run", "--json", "--yes", "--profile", "claude", "SPAWN-IT please", cwd=project, timeout=240)
    assert done.returncode == 0, done.stderr
    result = done.result
    assert result["status"] == "completed" and result["output"] == "MAIN-DONE the child found nothing", result
    assert result["cost"] and result["cost"] > 0 and result["usage"]["input_tokens"] > 0  # what the agent reported
    registered = [e for e in done.events if e["type"] == "run_registered"]
    root, child = registered[0], registered[1]
    assert child["parent_session_id"] == root["session_id"] and child["label"].startswith(root["label"] + "/")
    runs = {r["id"]: r for r in _runs(project)}
    assert runs[child["run_id"]]["status"] == "completed" and runs[child["run_id"]]["output"] == \
        "SUB-RESULT found nothing"
    # its own usage (what Claude Code recorded of its subagent's requests), apart from the main agent's
    child_usage = runs[child["run_id"]]["usage"]
    assert child_usage["input_tokens"] > 0 and child_usage["output_tokens"] > 0, child_usage
    assert child_usage != runs[root["run_id"]]["usage"]
    shown = run_yeetui("agents", "status", "--json", root["run_id"], cwd=project)
    tree = json.loads(shown.stdout)["tree"]
    assert tree["usage"]["input_tokens"] == result["usage"]["input_tokens"] + child_usage["input_tokens"]
    assert tree["cost"] == pytest.approx(result["cost"])  # the agent's cost already holds its subagent's
    # its transcript: the task its parent gave it (once), then its report
    shown = run_yeetui("sessions", "show", "--json", child["session_id"], cwd=project)
    assert [(m["role"], "".join(p.get("text", "") for p in m["parts"]))
            for m in json.loads(shown.stdout)["messages"]] == [
        ("user", "SUB-TASK look around the repo"), ("assistant", "SUB-RESULT found nothing")], shown.stdout
    # the agent really asked the model: the child's request carried its task
    assert any("SUB-TASK look around the repo" in r.text for r in fake_env.requests)
    # the run names the model Claude Code asked for (not the one yeetui would have chosen)
    asked = {r.body["model"] for r in fake_env.requests if isinstance(r.body, dict) and TITLE not in r.text}
    assert runs[root["run_id"]]["model"] in asked, (runs[root["run_id"]]["model"], asked)
    assert [e["model"] for e in done.events if e["type"] == "run_model" and e["run_id"] == root["run_id"]][-1] \
        == runs[root["run_id"]]["model"]


@needs_claude
@pytest.mark.parametrize("allowed", [False, True])
def test_claude_codes_permission_questions_are_yeetuis(fake_env, project: Path, tmp_path: Path,
                                                        allowed: bool) -> None:
    """Claude Code in the mode that asks: its Bash call comes to yeetui as a permission question — refused
    unattended in a headless run without --yes (the file is never made), allowed with --yes."""
    _claude(tmp_path)
    target = project / "made-by-claude.txt"
    fake_env.script(
        Reply(text="Touch test", when_contains=TITLE, repeat=True),
        Reply(tool_calls=[ToolCall("Bash", {"command": f"touch {target}", "description": "make the file"})],
              when_contains="TOUCH-IT"),
        Reply(text="FINISHED", when_contains="tool_result", repeat=True),
        Reply(text="(another request)", repeat=True))
    args = ["run", "--json", *(["--yes"] if allowed else []), "--profile", "claude", "TOUCH-IT now"]
    done = run_yeetui(*args, cwd=project, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.result["status"] == "completed", done.result
    assert target.exists() is allowed
    if not allowed:
        assert "refused 1 tool call that needs your permission: bash" in done.stderr, done.stderr


def _inner_yeetui() -> str:
    """A profile whose agent is `yeetui acp`: another yeetui, started as the test worker's other yeetui
    commands are (forked warm, `ZYGOTE.argv`)."""
    command, *args = ZYGOTE.argv("acp")
    return (f"description: another yeetui, over ACP\nrunner: acp\nacp:\n  command: {command}\n"
            f"  args: {json.dumps(args)}\n")


def test_yeetui_acp_as_an_external_agent_with_its_subagent_tree(fake_env, project: Path) -> None:
    """yeetui's own ACP agent, run as another yeetui's subagent: its oracle comes over as a subagent session
    (`subagent_update`), a node of this yeetui's tree with its own transcript and the usage its idle state
    says; the cost the inner yeetui reports is its whole session's, so the tree counts it once."""
    _profile("inner", _inner_yeetui())
    fake_env.script(
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "INNER-CHILD look",
                                                      "blocking": True})], when_contains="INNER-PARENT",
              usage={"input_tokens": 1000, "output_tokens": 10}),
        Reply(text="Inner child looked.", tool_calls=[ToolCall("complete", {"output": "INNER-CHILD-RESULT"})],
              when_contains="You are the oracle", usage={"input_tokens": 400, "output_tokens": 20}),
        Reply(text="INNER-DONE", when_contains="INNER-CHILD-RESULT", usage={"input_tokens": 2000, "output_tokens": 5}))
    done = run_yeetui("run", "--json", "--profile", "inner", "INNER-PARENT go", cwd=project, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.result["status"] == "completed" and done.result["output"] == "INNER-DONE", done.result
    registered = [e for e in done.events if e["type"] == "run_registered"]
    assert len(registered) == 2 and registered[1]["parent_session_id"] == registered[0]["session_id"]
    child = {r["id"]: r for r in _runs(project)}[registered[1]["run_id"]]
    assert child["status"] == "completed" and "Inner child looked." in child["output"]
    assert (child["usage"]["input_tokens"], child["usage"]["output_tokens"]) == (400, 20), child
    inner = {r["label"]: r for r in _runs(project) if r["profile"] != "inner"}  # the inner yeetui's own runs
    inner_root = next(r for r in inner.values() if r["profile"] != "oracle")
    inner_child = next(r for r in inner.values() if r["profile"] == "oracle")
    assert done.result["cost"] == pytest.approx(inner_root["cost"] + inner_child["cost"])
    tree = json.loads(run_yeetui("agents", "status", "--json", registered[0]["run_id"], cwd=project).stdout)["tree"]
    assert tree["cost"] == pytest.approx(done.result["cost"])


def test_an_agent_program_that_is_not_there_or_not_acp_fails_the_run_saying_why(fake_env, project: Path) -> None:
    _profile("ghost", "description: d\nrunner: acp\nacp: {command: no-such-agent-program}\n")
    _profile("chatty", f"description: d\nrunner: acp\nacp: {{command: {sys.executable}, start_timeout: 3, args: [-c, "
                       f"'import sys; print(\"hello, not json\"); sys.stderr.write(\"SECRET-ish trace\"); "
                       f"sys.stderr.flush(); sys.stdin.read()']}}\n")
    ghost = run_yeetui("run", "--json", "--profile", "ghost", "hi", cwd=project)
    assert ghost.result["status"] == "failed" and "not found: no-such-agent-program" in ghost.result["error"]
    chatty = run_yeetui("run", "--json", "--profile", "chatty", "hi", cwd=project, timeout=120)
    assert chatty.result["status"] == "failed", chatty.result
    assert "did not initialize within" in chatty.result["error"] and "SECRET-ish trace" in chatty.result["error"]


def _opencode(tmp_path: Path) -> None:
    """The built-in `opencode` profile, pointed at the npm package, with OpenCode's own config (an
    OpenAI-compatible provider at the fake LLM) and nothing fetched from the network."""
    home = tmp_path / "opencode-home"
    home.mkdir()
    config = {"provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake",
                                    "options": {"baseURL": os.environ["OPENAI_BASE_URL"], "apiKey": "sk-test"},
                                    # a price and a window, so OpenCode reports what it spends
                                    "models": {"fake-model": {"name": "Fake model", "cost": {"input": 3, "output": 15},
                                                              "limit": {"context": 100000, "output": 8000}}}}},
              "model": "fake/fake-model", "autoupdate": False, "share": "disabled"}
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".data"),
           "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".state"),
           "OPENCODE_CONFIG_CONTENT": json.dumps(config), "OPENCODE_DISABLE_MODELS_FETCH": "1",
           "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
           "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_SHARE": "1"}
    _profile("opencode", f"acp:\n  command: {OPENCODE}\n  args: [acp]\n  env: {json.dumps(env)}\n")


@needs_opencode
def test_opencode_runs_as_a_yeetui_agent_and_its_task_subagent_is_read_back_into_the_tree(
        fake_env, project: Path, tmp_path: Path) -> None:
    """OpenCode's `task` tool names its child session only in the tool's output: the child becomes a node,
    its transcript is read back with `session/load`, and its spend from OpenCode's record."""
    _opencode(tmp_path)
    fake_env.script(
        Reply(text="Title", when_contains="Generate a title", repeat=True, usage={"input_tokens": 50,
                                                                                   "output_tokens": 1}),
        Reply(tool_calls=[ToolCall("task", {"description": "look around", "prompt": "OC-SUB look around the repo",
                                            "subagent_type": "general"})], when_contains="OC-SPAWN",
              usage={"input_tokens": 1000, "output_tokens": 10}),
        Reply(text="OC-SUB-RESULT nothing here", when_contains="OC-SUB look",
              usage={"input_tokens": 300, "output_tokens": 5}),
        Reply(text="OC-MAIN-DONE", when_contains="OC-SUB-RESULT", usage={"input_tokens": 2000, "output_tokens": 7}),
        Reply(text="(another request)", repeat=True))
    done = run_yeetui("run", "--json", "--yes", "--profile", "opencode", "OC-SPAWN please", cwd=project,
                      timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.result["status"] == "completed" and done.result["output"] == "OC-MAIN-DONE", done.result
    registered = [e for e in done.events if e["type"] == "run_registered"]
    assert len(registered) == 2 and registered[1]["parent_session_id"] == registered[0]["session_id"]
    child = {r["id"]: r for r in _runs(project)}[registered[1]["run_id"]]
    assert child["status"] == "completed" and child["output"] == "OC-SUB-RESULT nothing here", child
    # spend ($3 / $15 per million tokens): OpenCode reports its own session's cost, with both of its requests'
    # tokens (its answer counts only the last); the child's, its own session's, comes from OpenCode's record;
    # the tree adds them up
    root = done.result
    assert (root["usage"]["input_tokens"], root["usage"]["output_tokens"]) == (3000, 17), root
    assert root["cost"] == pytest.approx((3000 * 3 + 17 * 15) / 1e6)
    assert (child["usage"]["input_tokens"], child["usage"]["output_tokens"]) == (300, 5), child
    assert child["cost"] == pytest.approx((300 * 3 + 5 * 15) / 1e6)
    tree = json.loads(run_yeetui("agents", "status", "--json", registered[0]["run_id"], cwd=project).stdout)["tree"]
    assert tree["cost"] == pytest.approx(root["cost"] + child["cost"])
    assert tree["usage"]["input_tokens"] == 3300


def test_what_a_hung_agent_started_is_stopped_with_it(fake_env, project: Path, tmp_path: Path) -> None:
    """An agent that never answers `initialize` but started a helper of its own: the run fails after the
    profile's start timeout, and the helper (in the agent's process group) is gone with it."""
    pidfile = tmp_path / "helper.pid"
    script = (f"import subprocess, sys; p = subprocess.Popen(['sleep', '300']); "
              f"open({str(pidfile)!r}, 'w').write(str(p.pid)); sys.stdin.read()")
    _profile("hung", f"description: d\nrunner: acp\nacp: {{command: {sys.executable}, start_timeout: 2, "
                     f"args: [-c, {json.dumps(script)}]}}\n")
    done = run_yeetui("run", "--json", "--profile", "hung", "hi", cwd=project, timeout=120)
    assert done.result["status"] == "failed" and "did not initialize within 2 s" in done.result["error"]
    helper = int(pidfile.read_text())
    deadline = time.monotonic() + 15
    while not gone(helper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(helper), f"the agent's helper (pid {helper}) outlived it"


def _scripted(name: str, script: list[dict], *, stop: str = "end_turn", modes: list[str] | None = None,
              quiet_after: float | None = None) -> None:
    """A profile running tests/fake_acp_agent.py with `script` as what it sends in a turn."""
    env = {"FAKE_ACP_SCRIPT": json.dumps(script), "FAKE_ACP_STOP": stop,
           "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
           **({"FAKE_ACP_MODES": json.dumps(modes)} if modes else {})}
    quiet = f"  quiet_after: {quiet_after}\n" if quiet_after is not None else ""
    _profile(name, f"description: d\nrunner: acp\nacp:\n  command: {sys.executable}\n"
                   f"  args: [-m, tests.fake_acp_agent]\n  env: {json.dumps(env)}\n{quiet}")


def test_an_agent_silent_with_a_tool_call_open_shows_as_waiting_on_it_and_can_be_cancelled(
        fake_env, project: Path) -> None:
    """OpenCode passes no `task` child's permission question over ACP, and goes silent with the call open: the
    run says it waits on the agent, and why, and how to stop it; cancelling it stops it."""
    _scripted("silent", [
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "task: explore", "kind": "think",
         "status": "in_progress"},
        {"sleep": 300}], quiet_after=1)
    running = start_yeetui("run", "--json", "--profile", "silent", "GO quiet", cwd=project,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert running.stdout is not None
        said = None
        deadline = time.monotonic() + 120
        while said is None and time.monotonic() < deadline:
            line = running.stdout.readline()
            assert line, f"yeetui run ended first: {running.stderr.read() if running.stderr else ''}"
            event = json.loads(line)
            if event.get("type") == "notice" and "waiting on" in event.get("text", ""):
                said = event["text"]
        assert said is not None, "the silence was never said"
        assert "no word from it for" in said and "permission it does not pass on" in said and "cancel" in said
        run_id = next(r["id"] for r in _runs(project) if r["status"] == "running")
        assert run_yeetui("agents", "cancel", run_id, cwd=project).returncode == 0
        out, err = running.communicate(timeout=120)
    finally:
        if running.poll() is None:
            running.kill()
    assert json.loads(out.splitlines()[-1])["status"] == "cancelled", err[-2000:]


def test_hostile_and_legacy_updates(fake_env, project: Path) -> None:
    """Older Claude Code adapters tag a subagent's updates with the spawning call (`parentToolUseId`): that
    child is a node, with the usage the call's response reports. Control sequences are stripped, malformed or
    unknown updates and other sessions' updates are dropped, a negative cost is not taken, and the mode that
    asks is chosen over a bypass mode."""
    _scripted("scripted", [
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Task", "kind": "think",
         "rawInput": {"description": "explore"}},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "child says hi"},
         "_meta": {"claudeCode": {"parentToolUseId": "t1"}}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "_meta": {"claudeCode": {"toolResponse": {
            "usage": {"input_tokens": 321, "output_tokens": 12, "cache_read_input_tokens": 5}}}}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
         "content": [{"type": "content", "content": {"type": "text", "text": "explored"}}]},
        {"sessionUpdate": "agent_message_chunk",
         "content": {"type": "text", "text": "\u001b]52;c;ZXZpbA==\u0007clean"}},
        {"sessionUpdate": "agent_message_chunk", "content": "not a block"},
        {"sessionUpdate": "weird_kind", "x": 1},
        {"sessionUpdate": "subagent_update", "sessionId": 123},
        {"_session": "sess-other", "sessionUpdate": "agent_message_chunk",
         "content": {"type": "text", "text": "INTRUDER"}},
        # an ACP subagent session: its task (sent on both sessions, kept once), hostile messages dropped
        {"sessionUpdate": "subagent_update", "sessionId": "kid", "title": "kid", "state": {"state": "running"}},
        {"sessionUpdate": "session_message", "messageId": "m-task", "senderSessionId": "sess-root",
         "recipientSessionId": "kid", "content": [{"type": "text", "text": "KID-TASK \u001b[2Jdo it"}]},
        {"_session": "kid", "sessionUpdate": "session_message", "messageId": "m-task", "senderSessionId": "sess-root",
         "recipientSessionId": "kid", "content": [{"type": "text", "text": "KID-TASK \u001b[2Jdo it"}]},
        {"sessionUpdate": "session_message", "messageId": "m-x", "recipientSessionId": "kid", "content": "not a list"},
        {"sessionUpdate": "session_message", "messageId": "m-y", "recipientSessionId": "nobody",
         "content": [{"type": "text", "text": "LOST"}]},
        {"_session": "kid", "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "kid done"}},
        {"sessionUpdate": "subagent_update", "sessionId": "kid", "state": {"state": "idle", "stopReason": "end_turn"}},
        {"sessionUpdate": "usage_update", "used": 1, "size": 2, "cost": {"amount": -5, "currency": "USD"}},
        {"sessionUpdate": "usage_update", "used": 1, "size": 2, "cost": {"amount": 0.25, "currency": "USD"}},
        {"sessionUpdate": "agent_message_chunk", "messageId": "m2", "content": {"type": "text", "text": "ROOT-FINAL"}},
    ])
    done = run_yeetui("run", "--json", "--profile", "scripted", "go", cwd=project, timeout=120)
    assert done.returncode == 0, done.stderr
    result = done.result
    assert result["status"] == "completed" and result["output"] == "ROOT-FINAL" and result["cost"] == 0.25, result
    text = "".join(e["text"] for e in done.events if e["type"] == "text_delta")
    assert "[mode default]" in text and "clean" in text and "\x1b" not in done.stdout and "INTRUDER" not in text
    registered = [e for e in done.events if e["type"] == "run_registered"]
    assert len(registered) == 3
    child = {r["id"]: r for r in _runs(project)}[registered[1]["run_id"]]
    assert child["output"] == "child says hi" and child["status"] == "completed"
    kid = {r["id"]: r for r in _runs(project)}[registered[2]["run_id"]]
    shown = json.loads(run_yeetui("sessions", "show", "--json", kid["session_id"], cwd=project).stdout)
    assert [(m["role"], "".join(p.get("text", "") for p in m["parts"])) for m in shown["messages"]] == [
        ("user", "KID-TASK do it"), ("assistant", "kid done")]
    assert child["usage"] == {"input_tokens": 321, "output_tokens": 12, "cache_read_tokens": 5,
                              "cache_write_tokens": 0}  # what the Agent call's response said it used
    # its report is kept in the inbox of the run's session (its agent took it; nothing is announced)
    with sqlite3.connect(Path(os.environ["YEETUI_DATA_DIR"]) / "yeetui.db") as db:
        items = db.execute("SELECT session_id, title, body, json_extract(data, '$.announce') FROM inbox_items"
                           " WHERE run_id = ?", (child["id"],)).fetchall()
    assert items == [(registered[0]["session_id"], f"{child['label']} — completed", "child says hi", 0)]


def test_an_external_agents_row_names_the_model_it_says_it_runs_and_drops_hostile_names(
        fake_env, project: Path) -> None:
    """Not the model yeetui would have chosen: the one the agent's options say, then the one its usage measured;
    a subagent its own. A name that is not a plain model id (escapes, markup, too long) is not taken."""
    def option(value: str) -> dict:
        return {"sessionUpdate": "config_option_update", "configOptions": [
            {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": value,
             "options": []}]}

    _scripted("scripted", [
        option("default"), option("openai/gpt-5"),
        {"sessionUpdate": "usage_update", "used": 1, "size": 2, "_meta": {"_claude/model": "\u001b[2Jevil model"}},
        {"sessionUpdate": "usage_update", "used": 1, "size": 2, "_meta": {"_claude/model": "x" * 500}},
        {"sessionUpdate": "subagent_update", "sessionId": "kid", "title": "kid", "state": {"state": "running"}},
        {"_session": "kid", "sessionUpdate": "usage_update", "used": 1, "size": 2,
         "_meta": {"_claude/model": "claude-haiku-5-5"}},
        {"_session": "kid", "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "kid done"}},
        {"sessionUpdate": "subagent_update", "sessionId": "kid", "state": {"state": "idle", "stopReason": "end_turn"}},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ROOT-FINAL"}},
    ])
    done = run_yeetui("run", "--json", "--profile", "scripted", "go", cwd=project, timeout=120)
    assert done.returncode == 0, done.stderr
    registered = [e for e in done.events if e["type"] == "run_registered"]
    root, kid = registered[0]["run_id"], registered[1]["run_id"]
    said = [(e["run_id"], e["model"]) for e in done.events if e["type"] == "run_model"]
    assert said == [(root, ""), (root, "openai/gpt-5"), (kid, "claude-haiku-5-5")], said
    runs = {r["id"]: r for r in _runs(project)}
    assert (runs[root]["model"], runs[kid]["model"]) == ("openai/gpt-5", "claude-haiku-5-5")
    listed = run_yeetui("agents", "list", cwd=project)
    assert "gpt-5" in listed.stdout and "claude-haiku-5-5" in listed.stdout and "evil" not in listed.stdout


def test_an_external_agents_question_is_refused_headless_and_garbage_on_its_stdout_is_survived(
        fake_env, project: Path) -> None:
    _scripted("asker", [
        {"raw": "this line is not JSON-RPC"},
        {"ask": {"toolCallId": "x1", "title": "rm -rf build", "kind": "execute",
                 "rawInput": {"command": "rm -rf build"}}},
    ])
    done = run_yeetui("run", "--json", "--profile", "asker", "go", cwd=project, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.result["status"] == "completed" and "[asked: no]" in done.result["output"], done.result
    assert "refused 1 tool call that needs your permission: bash 'rm -rf build'" in done.stderr, done.stderr
    allowed = run_yeetui("run", "--json", "--yes", "--profile", "asker", "go", cwd=project, timeout=120)
    assert "[asked: yes]" in allowed.result["output"], allowed.result


def test_cancelling_an_external_agents_subagent_stops_it_alone(fake_env, project: Path) -> None:
    """`yeetui agents cancel` on a node of the tree that an external agent's subagent is (here another
    yeetui's oracle, which its agent lets be cancelled alone): that subagent stops, its parent goes on."""
    _profile("inner", _inner_yeetui())
    fake_env.script(
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "SLOW-CHILD think",
                                                      "blocking": True})], when_contains="CANCEL-PARENT"),
        Reply(text="pondering " * 2000, chunk_size=30, chunk_delay=1.0, when_contains="You are the oracle"),
        Reply(text="INNER-CARRIED-ON", when_contains="cancel"))
    outer = start_yeetui("run", "--json", "--profile", "inner", "CANCEL-PARENT go", cwd=project,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        child = None
        while child is None:
            assert time.monotonic() < deadline and outer.poll() is None, "the subagent never showed as running"
            child = next((r for r in _runs(project) if "/" in (r.get("label") or "") and r["status"] == "running"),
                         None)
            time.sleep(0.1)
        cancelled = run_yeetui("agents", "cancel", child["id"], cwd=project)
        assert cancelled.returncode == 0, cancelled.stderr
        out, err = outer.communicate(timeout=120)
    finally:
        if outer.poll() is None:
            outer.kill()
    result = json.loads(out.splitlines()[-1])
    assert result["status"] == "completed" and result["output"] == "INNER-CARRIED-ON", (result, err[-2000:])
    assert {r["id"]: r for r in _runs(project)}[child["id"]]["status"] == "cancelled"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed: panes cannot be tested")
def test_an_external_agent_runs_in_a_pane_like_any_subagent(fake_env, project: Path) -> None:
    """`mode: tmux`: the external agent's run is executed by a worker in a tmux window, and its result reaches
    the parent that spawned it."""
    _scripted("scripted", [{"sessionUpdate": "agent_message_chunk",
                            "content": {"type": "text", "text": "PANE-EXTERNAL-DONE"}}])
    fake_env.script(
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "scripted", "prompt": "work in a pane",
                                                      "mode": "tmux", "blocking": True})], when_contains="PANE-EXT"),
        Reply(tool_calls=[ToolCall("complete", {"output": "the pane agent said it"})],
              when_contains="PANE-EXTERNAL-DONE"))
    try:
        done = run_yeetui("run", "--json", "PANE-EXT delegate it", cwd=project, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.result["status"] == "completed" and done.result["output"] == "the pane agent said it", \
            done.result
        child = next(r for r in _runs(project) if r["profile"] == "scripted")
        assert child["status"] == "completed" and child["output"].endswith("PANE-EXTERNAL-DONE")
        assert child["options"]["mode"] == "tmux" and child["options"]["pane"]
    finally:
        asyncio.run(TmuxServer(server_name(paths.data_dir())).kill_server())


CODEX_UNKNOWN_MODEL = ("Warning: Model metadata for `fake-model` not found. Defaulting to fallback metadata; this can "
                       "degrade performance and cause issues.")
"""What Codex says first, at times, of the test's model."""


def _codex(tmp_path: Path) -> None:
    """The built-in `codex` profile (its mode, `read-only`, included), pointed at the npm package, with Codex's own
    config in a private home: a model provider at the fake LLM's Responses API with its key from the environment
    (`env_key`, so no login is asked for), and none of what Codex fetches at start (its curated plugins are a
    `git ls-remote` of GitHub, its apps and tool suggestions from OpenAI)."""
    home = tmp_path / "codex-home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(f"""model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake"
base_url = {json.dumps(os.environ["OPENAI_BASE_URL"])}
env_key = "OPENAI_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
plugin_discovery_prefetch = false
apps = false
tool_suggest = false
in_app_updates = false
""")
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex"), "NO_BROWSER": "1",
           "PATH": f"{NPM_BIN}:{os.environ['PATH']}"}
    _profile("codex", f"acp:\n  command: {CODEX_ACP}\n  env: {json.dumps(env)}\n")


@needs_codex
@pytest.mark.parametrize("allowed", [False, True])
def test_codex_runs_as_a_yeetui_agent_its_subagent_is_a_node_and_asks_yeetui(
        fake_env, project: Path, tmp_path: Path, allowed: bool) -> None:
    """The real Codex (codex-acp 2.6.0, Codex 0.166.0) against the fake Responses API, in the mode that asks
    (`read-only`; it starts in `agent`, which edits unasked): its subagent (`spawn_agent`, announced as an ACP
    subagent session) is a node of yeetui's tree with its task, its report and its model; the subagent's command
    outside Codex's sandbox comes to yeetui as the subagent's permission question — refused headless without
    --yes (the file is never made, and Codex stops the subagent's turn), allowed with it. The run names the model
    Codex says it runs, and its result is the last message alone (not the warning Codex says first)."""
    _codex(tmp_path)
    target = project / "made-by-codex.txt"
    fake_env.script(
        Reply(tool_calls=[ToolCall("spawn_agent", {"message": "CX-SUB make the file"})], when_contains="CX-SPAWN"),
        Reply(tool_calls=[ToolCall("wait_agent", {"targets": ["AGENT"], "timeout_ms": 20000},
                                   fill={"AGENT": r'"agent_id":\s*"([^"]+)"'})], when_contains='"agent_id"'),
        # the wait's result: the child's report, or (its command refused, which stops its turn) the wait timed out
        Reply(text="CX-MAIN-DONE the child is done", when_contains="timed_out", repeat=True),
        Reply(tool_calls=[ToolCall("exec_command", {"cmd": f"touch {target}", "justification": "make the file",
                                                    "sandbox_permissions": "require_escalated"})],
              when_contains="CX-SUB make"),
        Reply(text="CX-SUB-RESULT tried it", when_contains="CX-SUB make", repeat=True),
        Reply(text="(another request)", repeat=True))
    args = ["run", "--json", *(["--yes"] if allowed else []), "--profile", "codex", "CX-SPAWN please"]
    done = run_yeetui(*args, cwd=project, timeout=240)
    assert done.returncode == 0, done.stderr
    result = done.result
    assert result["status"] == "completed" and result["output"] == "CX-MAIN-DONE the child is done", result
    assert result["usage"]["input_tokens"] > 0 and result["usage"]["output_tokens"] > 0
    assert target.exists() is allowed
    if not allowed:
        assert "refused 1 tool call that needs your permission: bash" in done.stderr, done.stderr
    registered = [e for e in done.events if e["type"] == "run_registered"]
    assert len(registered) == 2, registered
    root, child = registered
    assert child["parent_session_id"] == root["session_id"] and child["label"].startswith(root["label"] + "/")
    runs = {r["id"]: r for r in _runs(project)}
    # refused, Codex stops the subagent's turn ("No, and tell Codex what to do differently"): it ends cancelled,
    # having said nothing of its own — at most the warning Codex may send first for a model it has no metadata
    # for (the test's `fake-model`), which comes before or after the turn is stopped
    kid = runs[child["run_id"]]
    if allowed:
        assert (kid["status"], kid["output"]) == ("completed", "CX-SUB-RESULT tried it"), kid
    else:
        assert kid["status"] == "cancelled" and kid["output"] in ("", CODEX_UNKNOWN_MODEL), kid
    assert runs[root["run_id"]]["model"] == "fake-model" and runs[child["run_id"]]["model"] == "fake-model"
    # the question was the subagent's: it waited on it, not its parent
    waiting = [e["run_id"] for e in done.events if e["type"] == "run_status" and e["status"] == "waiting_permission"]
    assert waiting and set(waiting) == {child["run_id"]}, waiting
    shown = run_yeetui("sessions", "show", "--json", child["session_id"], cwd=project)
    said = [(m["role"], "".join(p.get("text", "") for p in m["parts"])) for m in json.loads(shown.stdout)["messages"]]
    if allowed:
        assert [role for role, _ in said] == ["assistant"], said
    else:  # nothing of its own (at most Codex's warning of the unknown model, as above)
        assert said in ([], [("assistant", CODEX_UNKNOWN_MODEL)]), said
    assert runs[child["run_id"]]["prompt"] == "CX-SUB make the file"  # its task, as Codex announced it
    assert any("CX-SUB make the file" in r.text for r in fake_env.requests if r.api == "responses")


def _gemini(tmp_path: Path, fake_url: str) -> None:
    """The built-in `gemini-cli` profile (`gemini --acp`), pointed at the npm package, with a private home: its
    key from the environment and the fake LLM as its Gemini API (`GOOGLE_GEMINI_BASE_URL`), no update check, no
    usage statistics, no telemetry."""
    home = tmp_path / "gemini-home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False}}))
    env = {"HOME": str(home), "GEMINI_API_KEY": "test-gemini-key", "GOOGLE_GEMINI_BASE_URL": fake_url,
           "PATH": f"{NPM_BIN}:{os.environ['PATH']}"}
    _profile("gemini-cli", f"acp:\n  command: {GEMINI}\n  env: {json.dumps(env)}\n")


ROUTER = "Task Routing AI"
"""In Gemini CLI's side request that picks the model for a turn (its `auto` model): answered apart, as JSON."""


@needs_gemini
@pytest.mark.parametrize("allowed", [False, True])
def test_gemini_cli_runs_as_a_yeetui_agent_and_asks_yeetui(fake_env, project: Path, tmp_path: Path,
                                                           allowed: bool) -> None:
    """The real Gemini CLI (0.61.0, `--acp`) against the fake Gemini API: its shell command comes to yeetui as a
    permission question — refused headless without --yes, allowed with it; its result is its last message (what
    it said before the tool call is not glued to it); the run names the model its router chose and counts the
    tokens its answer reports in `_meta.quota`."""
    _gemini(tmp_path, fake_env.url)
    target = project / "made-by-gemini.txt"
    fake_env.script(
        Reply(text='{"complexity_reasoning": "simple", "complexity_score": 10}', when_contains=ROUTER, repeat=True),
        Reply(text="GM-PREAMBLE I will make it.", tool_calls=[ToolCall("run_shell_command", {
            "command": f"touch {target}", "description": "make the file"})], when_contains="GM-TOUCH",
              usage={"input_tokens": 1000, "output_tokens": 10}),
        Reply(text="GM-DONE", when_contains="functionResponse", usage={"input_tokens": 2000, "output_tokens": 5}),
        Reply(text="(another request)", repeat=True))
    args = ["run", "--json", *(["--yes"] if allowed else []), "--profile", "gemini-cli", "GM-TOUCH please"]
    done = run_yeetui(*args, cwd=project, timeout=240)
    assert done.returncode == 0, done.stderr
    result = done.result
    assert result["status"] == "completed" and result["output"] == "GM-DONE", result
    assert target.exists() is allowed
    if not allowed:
        assert "refused 1 tool call that needs your permission: bash" in done.stderr, done.stderr
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (3000, 15), result["usage"]
    asked = {r.path.rsplit("/", 1)[-1].split(":")[0] for r in fake_env.requests
             if r.api == "gemini" and ROUTER not in r.text}
    [run] = _runs(project)
    assert run["model"] in asked, (run["model"], asked)


def test_draft_subagent_shapes_nested_subagents_and_a_subagents_question_sent_on_the_root_session(
        fake_env, project: Path) -> None:
    """The draft subagent messages (`subagent_spawned`, `subagent_state_update`, which Codex's adapter sends some
    clients) make nodes as `subagent_update` does; one announced on a subagent's session is that subagent's
    child; a subagent's permission question that comes on the run's own session is the subagent's (its tool
    call says whose); the preamble before a tool call is not part of the result."""
    _scripted("scripted", [
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "PREAMBLE "}},
        {"sessionUpdate": "subagent_spawned", "subagentSessionId": "kid", "name": "kid", "task": "KID-TASK",
         "capabilities": {}},
        {"_session": "kid", "sessionUpdate": "subagent_spawned", "subagentSessionId": "grandkid", "name": "gk",
         "task": "GK-TASK"},
        {"_session": "kid", "sessionUpdate": "tool_call", "toolCallId": "kid-call", "title": "rm -rf build",
         "kind": "execute", "rawInput": {"command": "rm -rf build"}},
        {"ask": {"toolCallId": "kid-call", "title": "rm -rf build", "kind": "execute",
                 "rawInput": {"command": "rm -rf build"}}},
        {"_session": "grandkid", "sessionUpdate": "agent_message_chunk",
         "content": {"type": "text", "text": "gk done"}},
        {"_session": "kid", "sessionUpdate": "subagent_state_update", "subagentSessionId": "grandkid",
         "state": "completed"},
        {"_session": "kid", "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "kid done"}},
        {"sessionUpdate": "subagent_state_update", "subagentSessionId": "kid", "state": "failed"},
        {"sessionUpdate": "subagent_state_update", "subagentSessionId": "kid", "state": 42},
        {"sessionUpdate": "tool_call", "toolCallId": "root-call", "title": "look", "kind": "read"},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ROOT-FINAL"}},
    ])
    done = run_yeetui("run", "--json", "--profile", "scripted", "go", cwd=project, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.result["output"] == "ROOT-FINAL", done.result
    root, kid, grandkid = [e for e in done.events if e["type"] == "run_registered"]
    assert kid["parent_session_id"] == root["session_id"] and grandkid["parent_session_id"] == kid["session_id"]
    assert grandkid["label"].startswith(kid["label"] + "/")
    runs = {r["id"]: r for r in _runs(project)}
    assert (runs[kid["run_id"]]["status"], runs[kid["run_id"]]["prompt"]) == ("failed", "KID-TASK")
    assert (runs[grandkid["run_id"]]["status"], runs[grandkid["run_id"]]["output"]) == ("completed", "gk done")
    assert runs[grandkid["run_id"]]["parent_run_id"] == kid["run_id"]
    waiting = [e["run_id"] for e in done.events if e["type"] == "run_status" and e["status"] == "waiting_permission"]
    assert waiting == [kid["run_id"]], waiting
    assert "refused 1 tool call that needs your permission: bash 'rm -rf build'" in done.stderr, done.stderr


def test_an_agent_that_offers_no_asking_mode_is_not_run_unless_the_profile_names_its_mode(
        fake_env, project: Path) -> None:
    """Codex's adapter's modes, without `read-only`: it starts in `agent`, which edits unasked, and offers no mode
    that asks — the run fails saying so; a profile that names the mode runs it."""
    script = [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "RAN"}}]
    _scripted("unasking", script, modes=["agent", "workspace-write", "agent-full-access"])
    refused = run_yeetui("run", "--json", "--profile", "unasking", "go", cwd=project, timeout=120)
    assert refused.result["status"] == "failed", refused.result
    assert "starts in mode agent" in refused.result["error"] and "acp.mode" in refused.result["error"]
    agents = Path(os.environ["YEETUI_CONFIG_DIR"]) / "agents" / "unasking.yaml"
    agents.write_text(agents.read_text().replace("acp:\n", "acp:\n  mode: workspace-write\n"))
    named = run_yeetui("run", "--json", "--profile", "unasking", "go", cwd=project, timeout=120)
    assert named.result["status"] == "completed" and "[mode workspace-write]" in named.result["output"], named.result
