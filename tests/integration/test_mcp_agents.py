"""An agent uses the user's MCP servers: the real `mcp-server-time` from PyPI, driven by the fake LLM through
the real binary. The first request carries an index and `mcp_load`, not the schemas; loaded tools are offered
from the next turn; permissions, read-only profiles and consent apply."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.fakellm import Reply
from tests.integration.helpers import result_text, run_yeetui, tool_results, wait_for_stored_status

TIME = f"[{sys.executable}, -m, mcp_server_time, --local-timezone, UTC]"


def _inside_frame(text: str) -> str:
    """An MCP result as the model reads it is framed as untrusted data; what the server said is inside."""
    head, _, rest = text.partition(' trust="untrusted">\n')
    assert head.startswith("<mcp-result server=") and "</mcp-result>" in rest, text
    return rest.split("\n</mcp-result>", 1)[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


def config(text: str) -> None:
    """The user's config.yaml; the first request waits for the servers' tool lists however loaded the machine
    is (the default 3 s is for people, not for a suite beside a CPU hog)."""
    (Path(os.environ["YEETUI_CONFIG_DIR"]) / "config.yaml").write_text("mcp_index_wait: 60\n" + text)


def tool_names(body: dict) -> list[str]:
    return [tool["name"] for tool in body.get("tools", [])]


def test_an_agent_loads_a_servers_tools_and_calls_one(fake_env, project: Path, tmp_path: Path) -> None:
    config(f"mcp_servers:\n  time: {{command: {TIME}}}\npermissions:\n  'mcp__time__*': allow\n")
    fake_env.script(Reply.tool("mcp_load", server="time"),
                    Reply.tool("mcp__time__get_current_time", timezone="UTC"),
                    Reply.tool("complete", output="It is some time in UTC."))
    done = run_yeetui("run", "--json", "what time is it in UTC?", cwd=project, HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.result["status"] == "completed", done.result
    first, second, third = (r.body for r in fake_env.requests)
    system = first["system"] if isinstance(first["system"], str) else " ".join(b["text"] for b in first["system"])
    assert "# MCP servers" in system and "- time: get_current_time, convert_time" in system
    assert "mcp_load" in tool_names(first) and not any(n.startswith("mcp__") for n in tool_names(first))
    [loaded] = tool_results(second)
    assert "mcp__time__get_current_time" in result_text(loaded)
    offered = {t["name"]: t for t in second["tools"]}
    assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= set(offered)
    assert offered["mcp__time__get_current_time"]["input_schema"]["required"] == ["timezone"]
    answer = tool_results(third)[-1]  # the history holds the load's result too
    assert not answer.get("is_error") and json.loads(_inside_frame(result_text(answer)))["timezone"] == "UTC"


def test_without_a_rule_a_headless_call_is_refused_and_read_only_profiles_get_only_read_only_servers(
        fake_env, project: Path, tmp_path: Path) -> None:
    config(f"mcp_servers:\n  time: {{command: {TIME}}}\n  clock: {{command: {TIME}, read_only: true}}\n")
    fake_env.script(Reply.tool("mcp_load", server="time", tools=["get_current_time"]),
                    Reply.tool("mcp__time__get_current_time", timezone="UTC"),
                    Reply.tool("complete", output="refused"))
    done = run_yeetui("run", "--json", "time?", cwd=project, HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "refused 1 tool call that needs your permission: mcp__time__get_current_time" in done.stderr
    refused = tool_results(fake_env.requests[2].body)[-1]
    assert refused.get("is_error") and "needs permission" in result_text(refused)
    assert "mcp__time__convert_time" not in tool_names(fake_env.requests[1].body)  # only what was loaded

    before = len(fake_env.requests)
    fake_env.script(Reply.tool("mcp_load", server="clock"), Reply.tool("mcp__clock__get_current_time", timezone="UTC"),
                    Reply.tool("complete", output="It is now."))
    oracle = run_yeetui("run", "--json", "--profile", "oracle", "time?", cwd=project, HOME=str(tmp_path))
    assert oracle.returncode == 0, oracle.stderr
    first = fake_env.requests[before].body
    system = first["system"] if isinstance(first["system"], str) else " ".join(b["text"] for b in first["system"])
    assert "- clock: get_current_time" in system and "- time:" not in system
    answer = tool_results(fake_env.requests[before + 2].body)[-1]
    assert not answer.get("is_error"), result_text(answer)  # a read-only server's tools need no rule


def test_a_projects_server_is_not_started_until_approved(fake_env, project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"theirs": {
        "command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w').close()"]}}}))
    fake_env.script(Reply.tool("complete", output="ok"))
    done = run_yeetui("run", "--json", "hi", cwd=project, HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    [warning] = [e["text"] for e in done.events if e["type"] == "notice" and "MCP server theirs" in e["text"]]
    assert "needs your approval" in warning and "yeetui mcp approve theirs" in warning
    assert "mcp_load" not in tool_names(fake_env.requests[0].body)
    assert not marker.exists()


def test_the_git_server_from_pypi_answers_git_status(fake_env, tmp_path: Path) -> None:
    import subprocess

    project = tmp_path / "repo"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "untracked_file.txt").write_text("new\n")
    config(f"mcp_servers:\n  git: {{command: [{sys.executable}, -m, mcp_server_git, --repository, {project}]}}\n"
           "permissions:\n  mcp__git__git_status: allow\n")
    fake_env.script(Reply.tool("mcp_load", server="git", tools=["git_status"]),
                    Reply.tool("mcp__git__git_status", repo_path=str(project)),
                    Reply.tool("complete", output="one untracked file"))
    done = run_yeetui("run", "--json", "what is untracked?", cwd=project, HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    status = tool_results(fake_env.requests[2].body)[-1]
    assert not status.get("is_error") and "untracked_file.txt" in result_text(status)
    assert done.result["status"] == "completed"


def test_an_opencode_agent_file_keeps_its_mcp_tool_keys(fake_env, project: Path, tmp_path: Path) -> None:
    """OpenCode's `tools: {time_convert_time: false}`: the agent from that file sees the real server without
    that tool, and `"*": false` with `clock_*: true` leaves it only that server."""
    config(f"mcp_servers:\n  time: {{command: {TIME}}}\n  clock: {{command: {TIME}}}\n")
    agents = project / ".opencode" / "agents"
    agents.mkdir(parents=True)
    (agents / "timer.md").write_text("---\ndescription: d\nmode: all\ntools:\n  time_convert_time: false\n---\nx\n")
    (agents / "clocky.md").write_text(
        "---\ndescription: d\nmode: all\ntools:\n  '*': false\n  read: true\n  clock_*: true\n---\nx\n")
    # What `mcp_load` answers (it waits for a server still starting, so a loaded machine does not matter).
    fake_env.script(Reply.tool("mcp_load", server="time"), Reply.tool("mcp_load", server="clock"),
                    Reply.tool("complete", output="ok"))
    before = len(fake_env.requests)
    done = run_yeetui("run", "--json", "--profile", "timer", "time?", cwd=project, HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    time_loaded, clock_loaded = (result_text(tool_results(fake_env.requests[before + n].body)[-1]) for n in (1, 2))
    assert "mcp__time__get_current_time" in time_loaded and "convert_time" not in time_loaded, time_loaded
    assert "mcp__clock__convert_time" in clock_loaded, clock_loaded

    fake_env.script(Reply.tool("mcp_load", server="time"), Reply.tool("mcp_load", server="clock"),
                    Reply.tool("complete", output="ok"))
    before = len(fake_env.requests)
    done = run_yeetui("run", "--json", "--profile", "clocky", "time?", cwd=project, HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    time_refused, clock_result = (tool_results(fake_env.requests[before + n].body)[-1] for n in (1, 2))
    assert time_refused.get("is_error") and "time" in result_text(time_refused), result_text(time_refused)
    assert "mcp__clock__get_current_time" in result_text(clock_result)


def test_a_detached_worker_starts_the_servers_its_agent_uses_and_stops_them(fake_env, project: Path,
                                                                             tmp_path: Path) -> None:
    """`yeetui agents start` runs in a worker process of its own: that process starts the server its agent loads
    (its own connection, shared by its agents) and the server is gone when the worker is."""
    import time

    config(f"mcp_servers:\n  time: {{command: {TIME}}}\npermissions:\n  'mcp__time__*': allow\n")
    fake_env.script(Reply.tool("mcp_load", server="time"),
                    Reply.tool("mcp__time__get_current_time", timezone="UTC"),
                    Reply.tool("complete", output="detached time"))
    started = run_yeetui("agents", "start", "--json", "generic", "time, detached?", cwd=project, HOME=str(tmp_path))
    assert started.returncode == 0, started.stderr
    launched = json.loads(started.stdout)
    run_id, worker = launched["run_id"], launched["pid"]
    wait_for_stored_status(run_id, timeout=90)
    record = json.loads(run_yeetui("agents", "status", "--json", run_id, cwd=project, HOME=str(tmp_path)).stdout)
    deadline = time.monotonic() + 90
    assert record["status"] == "completed" and record["output"] == "detached time", record
    answer = tool_results(fake_env.requests[2].body)[-1]
    assert not answer.get("is_error") and json.loads(_inside_frame(result_text(answer)))["timezone"] == "UTC"
    from yeetui.store.liveness import pid_alive

    while time.monotonic() < deadline and pid_alive(worker):  # the worker ends (a zombie counts), its server too
        time.sleep(0.05)
    leftovers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p).count("mcp_server_time")
                 and str(project) in _cwd(p)]
    assert leftovers == []


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _cwd(proc: Path) -> str:
    try:
        return os.readlink(proc / "cwd")
    except OSError:
        return ""
