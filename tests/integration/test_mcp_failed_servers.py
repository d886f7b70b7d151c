"""Issue 47, item 7: an MCP server that fails to start is named, with why, instead of being quietly left out —
in a short reason on its status ("command not found: …", "exited with status 1: <its last stderr line>", "did
not answer initialize within N s", "sent something that is not MCP"), in one notice per server (not one per
turn), and in `yeetui doctor`, which starts each server that may start and says whether it does."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import project_and_home, run_yeetui, time_server_unless
from yeetui.bus import Bus
from yeetui.events import Event, Notice
from yeetui.mcp.client import RESTART_AFTER, McpConnection, McpConnections
from yeetui.mcp.servers import ServerSpec

PY = sys.executable
SECRET = "s3cr3t-t0ken-in-the-env"


def spec(name: str, *command: str, env: dict[str, str] | None = None) -> ServerSpec:
    return ServerSpec(name=name, transport="stdio", scope="user", source="yeetui config.yaml", path=Path("/cfg"),
                      command=command, command_as_written=command, env=env or {})


async def test_each_failed_start_has_a_short_reason_and_is_told_once_naming_the_server_and_its_file() -> None:
    bus = Bus()
    told: list[Event] = []
    bus.add_listener(told.append)
    crash = ("import sys; sys.stderr.write('loading config\\nerror: bad token ' + sys.argv[1] + ' ' + 'x' * 400); "
             "sys.exit(1)")
    servers = McpConnections([
        spec("missing", "no-such-mcp-server-anywhere"),
        spec("crash", PY, "-c", crash, SECRET, env={"TOKEN": SECRET}),
        spec("babble", PY, "-c", "import time; print('Server listening on stdio', flush=True); time.sleep(120)"),
        spec("mute", PY, "-c", "import time; time.sleep(120)"),
    ], start_timeout=4, bus=bus)
    # a server that works, beside them, is not told of — given the time a loaded machine takes to start it
    working = McpConnections([spec("time", PY, "-m", "mcp_server_time", "--local-timezone", "UTC")],
                             start_timeout=120, bus=bus)
    try:
        (missing, crashed, babble, mute), [clock] = await asyncio.gather(servers.start_all(), working.start_all())
        assert missing.reason == "command not found: no-such-mcp-server-anywhere"
        assert crashed.reason is not None and crashed.reason.startswith("exited with status 1: error: bad token ")
        assert SECRET not in crashed.reason and "[REDACTED]" in crashed.reason  # its argv's secret, too
        assert "loading config" not in crashed.reason and len(crashed.reason) < 260  # the last line, capped
        assert "loading config" in (crashed.error or "")  # the whole tail stays for the model and `--check`
        assert babble.reason == "sent something that is not MCP"
        assert mute.reason == "did not answer initialize within 4 s"
        assert clock.state == "started" and clock.reason is None
        notices = [e for e in told if isinstance(e, Notice)]
        assert sorted(n.text.split(" from ")[0] for n in notices) == [
            "The MCP server babble", "The MCP server crash", "The MCP server missing", "The MCP server mute"]
        [said] = [n for n in notices if "server missing" in n.text]
        assert said.level == "warning" and said.text.startswith(
            "The MCP server missing from yeetui config.yaml (your own config) did not start: command not found: "
            "no-such-mcp-server-anywhere.")
        assert all(SECRET not in n.text for n in notices)
    finally:
        await servers.close()
        await working.close()


async def test_a_server_that_writes_garbage_and_exits_says_both() -> None:
    connection = McpConnection(spec("noise", PY, "-c", "print('hello, I am not JSON-RPC')"), start_timeout=30)
    try:
        status = await connection.ensure_started()
        assert status.reason == "sent something that is not MCP, then exited with status 0"
    finally:
        await connection.close()


async def test_garbage_is_said_even_when_the_sdk_tells_of_it_after_the_server_is_gone(monkeypatch) -> None:
    """The race a loaded machine lost: the SDK tells of a line that is not JSON-RPC in a task of its own, and a
    server that exits right after its garbage can end the session first (the failure read 'exited with status 0').
    Forced here: the SDK's telling is held back until long after the server is gone."""
    from mcp.client.session import ClientSession

    told_late = ClientSession._deliver_stream_exception

    async def late(self, exc):
        await asyncio.sleep(30)
        await told_late(self, exc)

    monkeypatch.setattr(ClientSession, "_deliver_stream_exception", late)
    connection = McpConnection(spec("noise", PY, "-c", "print('hello, I am not JSON-RPC')"), start_timeout=30)
    try:
        status = await asyncio.wait_for(connection.ensure_started(), 25)
        assert status.reason == "sent something that is not MCP, then exited with status 0"
    finally:
        await connection.close()


async def test_a_server_failing_on_every_use_is_told_once_and_again_only_after_it_worked(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.touch()
    code = time_server_unless(broken)
    now = [1000.0]
    told: list[tuple[str, str]] = []
    connection = McpConnection(spec("flaky", PY, "-c", code), clock=lambda: now[0],
                               report=lambda s, reason: told.append((s.name, reason)))
    try:
        for _ in range(3):  # a turn each, far enough apart for a start each
            assert (await connection.ensure_started()).state == "failed"
            now[0] += RESTART_AFTER
        assert told == [("flaky", "exited with status 1: the database is locked")]
        broken.unlink()
        assert (await connection.ensure_started()).state == "started"
        await connection.close()
        broken.touch()
        assert (await connection.ensure_started()).state == "failed"
        assert len(told) == 2
    finally:
        await connection.close()


def test_doctor_says_of_each_server_whether_it_starts_and_starts_none_that_needs_approval(tmp_path: Path) -> None:
    project, home = project_and_home(tmp_path)
    marker = tmp_path / "theirs-started"
    config = Path(os.environ["YEETUI_CONFIG_DIR"]) / "config.yaml"
    config.write_text(
        f"mcp_servers:\n"
        f"  time: {{command: [{PY}, -m, mcp_server_time]}}\n"
        f"  gone: {{command: [no-such-mcp-server-anywhere, --flag]}}\n"
        f"  crash: {{command: [{PY}, -c, 'import sys; sys.exit(\"no such database: app.db\")']}}\n"
        f"  noise: {{command: [{PY}, -c, 'print(\"hello\")']}}\n")
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"theirs": {
        "command": PY, "args": ["-c", f"open({str(marker)!r}, 'w').close()"]}}}))
    doctor = run_yeetui("doctor", "--json", cwd=project, HOME=str(home))
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["mcp time"]["state"] == "ok" and checks["mcp time"]["detail"].startswith("starts: 2 tools")
    gone = checks["mcp gone"]
    assert gone["state"] == "warning"
    assert gone["detail"].startswith("does not start: command not found: no-such-mcp-server-anywhere; defined in "
                                     f"yeetui {config} (your own config)")
    assert checks["mcp crash"]["detail"].startswith("does not start: exited with status 1: no such database: app.db")
    assert checks["mcp noise"]["detail"].startswith(
        "does not start: sent something that is not MCP, then exited with status 0")
    theirs = checks["mcp theirs"]
    assert theirs["state"] == "warning" and "needs your approval" in theirs["detail"]
    assert "Claude Code .mcp.json (the project's file)" in theirs["detail"]
    assert "yeetui mcp approve theirs" in theirs["detail"]
    assert not marker.exists()  # asked of nobody, started by nobody

    text = run_yeetui("doctor", cwd=project, HOME=str(home)).stdout.splitlines()
    assert any(line.startswith("mcp gone") and "warning" in line and "command not found" in line for line in text)


async def test_a_failed_server_reaches_the_bus_of_a_headless_run(tmp_path: Path) -> None:
    """`McpConnections(bus=…)` as the runtime builds it: the notice is an event on the bus, for every front end
    (the TUI shows it in the conversation, `yeetui run` on stderr)."""
    bus = Bus()
    got: asyncio.Queue[Event] = asyncio.Queue()
    bus.add_listener(got.put_nowait)
    servers = McpConnections([spec("gone", "no-such-mcp-server-anywhere")], bus=bus)
    try:
        await servers.settle(10)
        event = await asyncio.wait_for(got.get(), 10)
        assert isinstance(event, Notice) and "The MCP server gone" in event.text
        await servers.settle(10)  # asked again (as `/mcp` does): within RESTART_AFTER nothing starts, nothing told
        assert got.empty()
    finally:
        await servers.close()


def test_a_headless_run_says_which_server_did_not_start_and_goes_on(fake_env, project: Path, tmp_path: Path) -> None:
    home = tmp_path / "userhome"
    home.mkdir()
    (Path(os.environ["YEETUI_CONFIG_DIR"]) / "config.yaml").write_text(
        "mcp_servers:\n  gone: {command: [no-such-mcp-server-anywhere]}\n")
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "done anyway"})]))
    run = run_yeetui("run", "hello", cwd=project, HOME=str(home))
    assert run.returncode == 0, run.stderr
    assert "done anyway" in run.stdout
    said = [line for line in run.stderr.splitlines() if "The MCP server gone" in line]
    assert len(said) == 1 and "did not start: command not found: no-such-mcp-server-anywhere" in said[0], run.stderr
