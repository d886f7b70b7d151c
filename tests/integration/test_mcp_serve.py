"""`yeetui mcp serve` driven by the MCP SDK's own client over stdio: spawn an oracle, follow it, collect it;
bad calls come back as tool errors naming what is wrong."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import start_yeetui
from tests.integration.zygote import ZYGOTE

if TYPE_CHECKING:
    from mcp_types import TextContent

_PASSED = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "YEETUI_CONFIG_DIR",
           "YEETUI_DATA_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "LITELLM_LOCAL_MODEL_COST_MAP", "YEETUI_NETGUARD",
           "YEETUI_SANDBOX", "PYTHONPATH", "XDG_RUNTIME_DIR")
"""What the client passes on to the yeetui it starts. XDG_RUNTIME_DIR too, as a desktop session's has it:
without it yeetui's relay folder for each test's data dir was left in /tmp/yeetui-UID."""


def _json(result) -> dict:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if isinstance(data, dict) and set(data) == {"result"} else data
    return json.loads(result.content[0].text)


async def test_spawn_wait_and_collect_an_oracle(fake_env, tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "The answer is 42."})], when_contains="ORACLE-Q"))
    env = {k: os.environ[k] for k in _PASSED if k in os.environ}
    env["YEETUI_MODEL"] = "anthropic/claude-sonnet-4-5"
    params = StdioServerParameters(command=sys.executable, args=ZYGOTE.argv("mcp", "serve")[1:], env=env,
                                   cwd=str(project))
    errors = (tmp_path / "stderr.txt").open("w")
    async with stdio_client(params, errlog=errors) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = {t.name for t in (await session.list_tools()).tools}
        assert names == {"list_profiles", "spawn", "status", "wait", "result", "send", "cancel"}
        profiles = _json(await session.call_tool("list_profiles", {}))
        listed = profiles if isinstance(profiles, list) else profiles["result"]
        assert any(p["name"] == "oracle" and p["read_only"] for p in listed)

        spawned = _json(await session.call_tool("spawn", {"profile": "oracle", "prompt": "ORACLE-Q what is 6*7?"}))
        run_id = spawned["run_id"]
        waited = _json(await session.call_tool("wait", {"run_id": run_id, "timeout_s": 45}))
        while not waited["done"]:  # a loaded machine: wait again, as a client would
            waited = _json(await session.call_tool("wait", {"run_id": run_id, "timeout_s": 45}))
        assert waited["status"] == "completed" and waited["output"] == "The answer is 42.", waited
        collected = _json(await session.call_tool("result", {"run_id": run_id[:12]}))
        assert collected["done"] and collected["output"] == "The answer is 42."
        status = _json(await session.call_tool("status", {"run_id": run_id}))
        assert status["label"].startswith("oracle#") and status["tree"]["usage"]["output_tokens"] > 0

        unknown = await session.call_tool("spawn", {"profile": "wizard", "prompt": "x"})
        assert unknown.is_error and "wizard" in cast("TextContent", unknown.content[0]).text
        missing = await session.call_tool("wait", {"run_id": "ffffffffffff"})
        assert missing.is_error and "ffffffffffff" in cast("TextContent", missing.content[0]).text
        finished = await session.call_tool("send", {"run_id": run_id, "text": "more"})
        assert finished.is_error and "only a running" in cast("TextContent", finished.content[0]).text
    errors.close()


NPM_BIN = Path(__file__).resolve().parents[2] / ".ci" / "cache" / "npm" / "node_modules" / ".bin"
CONFORMANCE = NPM_BIN.parent / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SCENARIOS = ("server-initialize", "ping", "tools-list", "tools-call-error", "dns-rebinding-protection")
"""The suite's server scenarios that apply to yeetui's server: its tools are its own (the tool-content
scenarios call the suite's reference tools), and it offers no logging, prompts, resources or completion."""


def _serve_http(project: Path, *extra: str, env: dict[str, str] | None = None):
    import re
    import subprocess
    import time

    process = start_yeetui("mcp", "serve", "--http", *extra, cwd=project, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, **(env or {}))
    deadline = time.monotonic() + 60
    assert process.stderr is not None
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if match := re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line):
            return process, match.group(1)
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError("yeetui mcp serve --http did not say where it listens")


BEARER_PRELOAD = """
const { Agent, setGlobalDispatcher } = require(process.env.CONFORMANCE_UNDICI);
const bearer = `Bearer ${process.env.CONFORMANCE_TOKEN}`;
setGlobalDispatcher(new Agent().compose((dispatch) => (options, handler) => {
  const headers = options.headers;
  if (Array.isArray(headers)) return dispatch({ ...options, headers: [...headers, "authorization", bearer] }, handler);
  const given = headers && typeof headers[Symbol.iterator] === "function" ? Object.fromEntries(headers) : headers;
  return dispatch({ ...options, headers: { ...given, authorization: bearer } }, handler);
}));
"""
"""Loaded into the suite's Node (`--require`): every request it makes, through fetch or undici, carries the
token. The suite has no option for a header, and yeetui serves nobody without the token."""


@pytest.mark.skipif(not CONFORMANCE.exists(), reason="the MCP conformance suite and Node 22 are installed by .ci/run")
@pytest.mark.timeout(300)
def test_the_official_conformance_suite_passes_the_scenarios_that_apply(tmp_path: Path) -> None:
    import subprocess

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    token = "tok-" + "c" * 30
    preload = tmp_path / "bearer.cjs"
    preload.write_text(BEARER_PRELOAD)
    suite_env = dict(os.environ, NODE_OPTIONS=f"--require {preload}", CONFORMANCE_TOKEN=token,
                     CONFORMANCE_UNDICI=str(NPM_BIN.parent / "undici"))
    process, url = _serve_http(project, env={"YEETUI_MCP_TOKEN": token})
    try:
        for scenario in SCENARIOS:
            ran = subprocess.run([str(NPM_BIN / "node"), str(CONFORMANCE), "server", "--url", url, "--scenario",
                                  scenario], capture_output=True, text=True, timeout=120, env=suite_env)
            assert ran.returncode == 0 and ", 0 failed" in ran.stdout, f"{scenario}:\n{ran.stdout[-2000:]}"
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_over_http_a_token_is_needed(tmp_path: Path) -> None:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    process, url = _serve_http(project, env={"YEETUI_MCP_TOKEN": "tok-" + "x" * 30})
    try:
        async with httpx2.AsyncClient() as plain:
            refused = await plain.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 401
            # the shape OAuth-capable clients read: where the protected resource's metadata is, and that metadata
            metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
            challenge = refused.headers["www-authenticate"]
            assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge, challenge
            metadata = (await plain.get(metadata_url)).json()
            assert metadata["resource"] == url, metadata
            # resumable streams: every event of a stream has an id a client can resume after (Last-Event-ID)
            opened = await plain.post(url, json=INITIALIZE, headers={
                "Authorization": "Bearer tok-" + "x" * 30, "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-11-25"})
            assert opened.status_code == 200 and "\nid: " in f"\n{opened.text}", opened.text[:500]
        client = httpx2.AsyncClient(headers={"Authorization": "Bearer tok-" + "x" * 30})
        async with client, streamable_http_client(url, http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            assert "spawn" in {t.name for t in (await session.list_tools()).tools}
        refused_bad = await _post_with(url, "Bearer wrong")
        assert refused_bad == 401
        assert await _post_with(url.replace("/mcp", "/other"), "Bearer wrong") == 404  # nothing there to be had
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=30)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}


async def test_wait_sends_progress_notifications_while_the_run_works(fake_env, tmp_path: Path) -> None:
    """A client that asks for progress (a progress token on its `wait`) hears, while it waits, how long it has
    waited of what it allowed and what the run is doing — a long wait is not silence."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "Slowly: 42."})], text="x" * 60, chunk_size=2,
                          chunk_delay=0.2, when_contains="SLOW-Q"))
    token = "tok-" + "p" * 30
    process, url = _serve_http(project, env={"YEETUI_MCP_TOKEN": token, "YEETUI_MODEL": "anthropic/claude-sonnet-4-5"})
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    try:
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(120))
        async with client, streamable_http_client(url, http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            run_id = _json(await session.call_tool("spawn", {"profile": "oracle", "prompt": "SLOW-Q please"}))["run_id"]
            waited = _json(await session.call_tool("wait", {"run_id": run_id, "timeout_s": 45},
                                                   progress_callback=progress))
            while not waited["done"]:
                waited = _json(await session.call_tool("wait", {"run_id": run_id, "timeout_s": 45},
                                                       progress_callback=progress))
        assert waited["output"] == "Slowly: 42.", waited
        assert heard, "no progress notification while the run worked"
        done, total, message = heard[0]
        assert total == 45 and 0 <= done <= 45 and message is not None and message.startswith("oracle#"), heard
    finally:
        process.terminate()
        process.wait(timeout=30)


async def _post_with(url: str, authorization: str) -> int:
    import httpx2

    async with httpx2.AsyncClient() as client:
        response = await client.post(url, headers={"Authorization": authorization},
                                     json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        return response.status_code


# -- the MCP Tasks extension: a client that speaks it gets spawn as a task -----------------------------------------

def _tasks_client():
    """A real SDK client with the Tasks extension: a `spawn` answered with a task is followed with `tasks/get`
    until it ends (what an editor speaking the extension does)."""
    from typing import Any, Literal

    from mcp.client.extension import ClientExtension, ResultClaim
    from mcp_types import CallToolResult, Request, RequestParams, Result

    class TaskId(RequestParams):
        task_id: str

    class GetTask(Request[TaskId, Literal["tasks/get"]]):
        method: Literal["tasks/get"] = "tasks/get"
        params: TaskId
        name_param = "taskId"

    class CancelTask(Request[TaskId, Literal["tasks/cancel"]]):
        method: Literal["tasks/cancel"] = "tasks/cancel"
        params: TaskId
        name_param = "taskId"

    class TaskState(Result):
        task_id: str
        status: str
        status_message: str | None = None
        created_at: str
        last_updated_at: str
        ttl_ms: int | None = None
        poll_interval_ms: int | None = None
        result: dict[str, Any] | None = None

    class CreatedTask(TaskState):
        result_type: Literal["task"] = "task"

    class Tasks(ClientExtension):
        identifier = "io.modelcontextprotocol/tasks"

        def __init__(self) -> None:
            self.created: list[CreatedTask] = []
            self.polls: list[TaskState] = []
            self.cancel_after_first_poll = False

        def claims(self):
            return (ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve),)

        async def resolve(self, created: CreatedTask, ctx) -> CallToolResult:
            import anyio

            self.created.append(created)
            while True:
                state = await ctx.session.send_request(GetTask(params=TaskId(task_id=created.task_id)), TaskState)
                self.polls.append(state)
                if state.status in ("completed", "failed", "cancelled"):
                    break
                if self.cancel_after_first_poll:
                    self.cancel_after_first_poll = False
                    await ctx.session.send_request(CancelTask(params=TaskId(task_id=created.task_id)), Result)
                await anyio.sleep(0.2)  # the server asks for 2 s; a test has no time to spare
            if state.status == "cancelled":
                return CallToolResult(content=[], is_error=True, structured_content={"cancelled": True})
            return CallToolResult.model_validate(state.result)

    return Tasks()


def _stdio_params(project: Path):
    from mcp import StdioServerParameters

    env = {k: os.environ[k] for k in _PASSED if k in os.environ}
    env["YEETUI_MODEL"] = "anthropic/claude-sonnet-4-5"
    return StdioServerParameters(command=sys.executable, args=ZYGOTE.argv("mcp", "serve")[1:], env=env,
                                 cwd=str(project))


async def test_a_client_speaking_the_tasks_extension_gets_spawn_as_a_task(fake_env, tmp_path: Path) -> None:
    from mcp import Client

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "Tasked: 42."})], when_contains="TASK-Q"))
    tasks = _tasks_client()
    async with Client(_stdio_params(project), extensions=[tasks]) as client:
        result = await client.call_tool("spawn", {"profile": "oracle", "prompt": "TASK-Q what is 6*7?"})
        assert not result.is_error, result
        assert (result.structured_content["output"] == "Tasked: 42."
                and cast("TextContent", result.content[0]).text == "Tasked: 42.")
        created = tasks.created[0]
        assert created.status == "working" and created.ttl_ms is None and created.poll_interval_ms == 2000
        assert created.created_at.endswith("Z")
        assert tasks.polls[-1].status == "completed" and tasks.polls[-1].task_id == created.task_id
        # the task is the run: the ordinary tools see it
        status = _json(await client.call_tool("status", {"run_id": created.task_id}))
        assert status["status"] == "completed" and status["label"].startswith("oracle#")

        bad = await client.call_tool("spawn", {"profile": "wizard", "prompt": "x"})
        assert bad.is_error and "wizard" in cast("TextContent", bad.content[0]).text and len(tasks.created) == 1
        wrong = await client.call_tool("spawn", {"profile": "oracle", "prompt": 7})
        assert wrong.is_error


async def test_a_task_is_cancelled_with_tasks_cancel_and_unknown_tasks_are_errors(fake_env, tmp_path: Path) -> None:
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp_types import Request, RequestParams, Result

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    fake_env.script(Reply(text="slow " * 400, chunk_size=20, chunk_delay=1.0, when_contains="SLOW-Q"))
    tasks = _tasks_client()
    tasks.cancel_after_first_poll = True
    async with Client(_stdio_params(project), extensions=[tasks]) as client:
        result = await client.call_tool("spawn", {"profile": "oracle", "prompt": "SLOW-Q take your time"})
        assert result.is_error and result.structured_content == {"cancelled": True}
        assert tasks.polls[0].status == "working" and tasks.polls[-1].status == "cancelled"
        status = _json(await client.call_tool("status", {"run_id": tasks.created[0].task_id}))
        assert status["status"] == "cancelled"

        class TaskId(RequestParams):
            task_id: str

        class Get(Request[TaskId, str]):
            method: str = "tasks/get"
            params: TaskId
            name_param = "taskId"

        with pytest.raises(MCPError) as unknown:
            await client.session.send_request(Get(params=TaskId(task_id="ffffffffffff")), Result)
        assert "ffffffffffff" in unknown.value.message


async def test_a_client_without_the_extension_gets_a_run_id_as_before(fake_env, tmp_path: Path) -> None:
    from mcp import Client

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "plain"})], when_contains="PLAIN-Q"))
    async with Client(_stdio_params(project)) as client:
        spawned = _json(await client.call_tool("spawn", {"profile": "oracle", "prompt": "PLAIN-Q hi"}))
        assert spawned["run_id"] and spawned["status"] in ("queued", "running")


# -- what a spawned run would ask: in a yeetui with dialogs on this data dir, else refused, saying why ------------

async def _wait_done(session, run_id: str) -> dict:
    waited = _json(await session.call_tool("wait", {"run_id": run_id, "timeout_s": 45}))
    while not waited["done"]:
        waited = _json(await session.call_tool("wait", {"run_id": run_id, "timeout_s": 45}))
    return waited


async def test_a_spawned_runs_question_is_asked_in_the_open_yeetui(fake_env, tmp_path: Path) -> None:
    import asyncio

    from mcp import Client

    from yeetui.events import PermissionRequested
    from yeetui.runtime import FrontEnd, Runtime

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "echo MCP-ALLOWED-RAN"})], when_contains="MCP-ASK"),
        Reply(tool_calls=[ToolCall("complete", {"output": "ran it"})], when_contains="MCP-ALLOWED-RAN"))
    tui = await Runtime.open(cwd=project, front_end=FrontEnd(answers_asks=True))  # the TUI's runtime, headless
    asked: list[PermissionRequested] = []
    tui.bus.add_listener(lambda e: asked.append(e) if isinstance(e, PermissionRequested) else None)
    try:
        async with Client(_stdio_params(project)) as client:
            run_id = _json(await client.call_tool("spawn", {"profile": "generic", "prompt": "MCP-ASK run echo"}))[
                "run_id"]
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while not asked:
                assert loop.time() < deadline, "the question never reached the open yeetui"
                await asyncio.sleep(0.05)
            assert (asked[0].tool, asked[0].subject, asked[0].run_id) == ("bash", "echo MCP-ALLOWED-RAN", run_id)
            waiting = _json(await client.call_tool("status", {"run_id": run_id}))
            assert waiting["status"] == "waiting_permission" and "yeetui" in waiting["note"]
            asked[0].reply.set_result("allow_once")
            done = await _wait_done(client, run_id)
            assert done["status"] == "completed" and done["output"] == "ran it", done
    finally:
        await tui.close()
    assert any("MCP-ALLOWED-RAN" in r.text for r in fake_env.requests if "ran it" not in r.text)


async def test_with_no_yeetui_open_a_spawned_runs_question_is_refused_saying_so(fake_env, tmp_path: Path) -> None:
    from mcp import Client

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "touch refused.txt"})], when_contains="MCP-NOBODY"),
        Reply(tool_calls=[ToolCall("complete", {"output": "was refused"})], when_contains="nobody to ask"))
    async with Client(_stdio_params(project)) as client:
        run_id = _json(await client.call_tool("spawn", {"profile": "generic", "prompt": "MCP-NOBODY touch it"}))[
            "run_id"]
        done = await _wait_done(client, run_id)
        assert done["status"] == "completed" and done["output"] == "was refused", done
    [said] = [r.text for r in fake_env.requests if "was refused" not in r.text and "nobody to ask" in r.text]
    assert "Refused without asking: bash" in said and "no yeetui was open to answer" in said
    assert not (project / "refused.txt").exists()
