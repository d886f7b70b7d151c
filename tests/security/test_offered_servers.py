"""Servers yeetui offers answer only their own user and project (`yeetui mcp serve`, `yeetui acp`).

Attacks: another local user (or a web page, through DNS rebinding) reaching `yeetui mcp serve --http`; an MCP
client of one project reading, steering or cancelling the runs of another project on the same data dir; an ACP
client listing or reopening another project's conversations.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest

from tests.integration.helpers import start_yeetui
from tests.integration.zygote import ZYGOTE
from yeetui import paths
from yeetui.events import RunStatus
from yeetui.messages import Message
from yeetui.store import Store

_PASSED = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "YEETUI_CONFIG_DIR",
           "YEETUI_DATA_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "LITELLM_LOCAL_MODEL_COST_MAP", "YEETUI_NETGUARD",
           "YEETUI_SANDBOX", "PYTHONPATH", "HOME", "PATH", "XDG_RUNTIME_DIR")
TOKEN = "tok-" + "s" * 40
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "attacker", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _env() -> dict[str, str]:
    env = {k: os.environ[k] for k in _PASSED if k in os.environ}
    env["YEETUI_MODEL"] = "anthropic/claude-sonnet-4-5"
    return env


def _project(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    (root / ".git").mkdir(parents=True)
    return root.resolve()


# -- 1. over HTTP: a token always, and only this server's names in Host and Origin --------------------------------

@pytest.mark.timeout(120)
def test_http_without_a_token_is_refused_saying_why_and_what_to_do_instead(tmp_path: Path) -> None:
    """`--no-token` served on loopback with no auth: any local user (`nobody` too) could spawn agents that write
    in this project and read what they found. It still parses, and is refused."""
    project = _project(tmp_path, "project")
    process = start_yeetui("mcp", "serve", "--http", "--no-token", cwd=project, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    said = []
    for line in process.stderr:  # until it exits, or says it listens
        said.append(line)
        if "http://" in line:
            process.kill()
            process.wait(timeout=30)
            pytest.fail(f"it served without a token: {line.strip()}")
    assert process.wait(timeout=30) == 2, said
    text = "".join(said)
    assert "--no-token" in text and "YEETUI_MCP_TOKEN" in text and "Authorization: Bearer" in text, text


def _serve(project: Path, *extra: str):
    import re

    process = start_yeetui("mcp", "serve", "--http", *extra, cwd=project, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, YEETUI_MCP_TOKEN=TOKEN)
    assert process.stderr is not None
    for line in process.stderr:
        if match := re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line):
            return process, int(match.group(1))
    process.kill()
    raise AssertionError("yeetui mcp serve --http did not say where it listens")


async def _status(port: int, path: str = "/mcp", *, token: str | None = TOKEN, **headers: str) -> int:
    import httpx2

    sent = dict(MCP_HEADERS, **headers)
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with httpx2.AsyncClient() as client:
        response = await client.post(f"http://127.0.0.1:{port}{path}", headers=sent, json=INITIALIZE)
        return response.status_code


@pytest.mark.timeout(180)
async def test_on_loopback_every_request_must_name_this_server_in_host_and_origin(tmp_path: Path) -> None:
    """A page on evil.example whose name resolves to 127.0.0.1 makes the browser send `Host: evil.example`: refused
    on every path, before the token is looked at; an Origin that is not this server (another port, `null`) is
    refused (403) even with the token."""
    process, port = _serve(_project(tmp_path, "project"))
    try:
        assert await _status(port, Host=f"127.0.0.1:{port}") == 200  # the client it is for
        assert await _status(port, Host=f"localhost:{port}", Origin=f"http://localhost:{port}") == 200
        assert await _status(port, Host=f"evil.example:{port}") == 421
        assert await _status(port, "/other", Host="evil.example") == 421
        assert await _status(port, token=None, Host=f"evil.example:{port}") == 421
        assert await _status(port, Host=f"127.0.0.1:{port}", Origin="http://127.0.0.1:1") == 403
        assert await _status(port, Host=f"127.0.0.1:{port}", Origin="null") == 403
        assert await _status(port, Host=f"127.0.0.1:{port}", Origin="http://evil.example") == 403
        assert await _status(port, Host=f"127.0.0.1:{port}", Origin=f"https://evil.example:{port}") == 403
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=30)


@asynccontextmanager
async def _lifespan(app: Any) -> AsyncIterator[None]:
    """The ASGI lifespan of `app` (the MCP session manager runs in it), as uvicorn drives it."""
    inbox: asyncio.Queue[dict[str, str]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    task = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, inbox.get,
                                   outbox.put))
    await inbox.put({"type": "lifespan.startup"})
    assert (await asyncio.wait_for(outbox.get(), 30))["type"] == "lifespan.startup.complete"
    try:
        yield
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        await asyncio.wait_for(task, 30)


async def test_off_loopback_host_and_origin_are_checked_with_a_token_too(runtime, monkeypatch) -> None:
    """`--host 0.0.0.0`: a request that reached the server on its address 192.0.2.7 but names evil.example in
    Host (DNS rebinding) got 200 with the token. The app `serve_http` serves, driven in-process (a test
    binds nothing but loopback)."""
    import httpx2

    from yeetui.application.mcp_http import http_app
    from yeetui.application.mcp_serve import AgentService
    from yeetui.application.surface import Surface

    app = http_app(AgentService(Surface(runtime)), host="0.0.0.0", port=8123, token=TOKEN)
    async with _lifespan(app), httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app)) as client:
        async def status(**headers: str) -> int:
            response = await client.post("http://192.0.2.7:8123/mcp", json=INITIALIZE,
                                         headers={**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}", **headers})
            return response.status_code

        assert await status(Host="evil.example") == 421
        assert await status(Host="evil.example:8123") == 421
        assert await status(Host="localhost:8123") == 421  # not a name of this address
        assert await status(Host="192.0.2.7:8123", Origin="http://evil.example") == 403
        assert await status(Host="192.0.2.7:8123", Origin="http://192.0.2.7:8123") == 200
        assert await status(Host="192.0.2.7:8123") == 200


# -- 2. an MCP client of one project, the runs of another ----------------------------------------------------------

async def _seed_runs(project: Path, *, secret: str) -> dict[str, str]:
    """Runs of `project` as its own `yeetui` would leave them: one completed (its output `secret`), one
    interrupted (cancellable), one running in this (live) process (steerable)."""
    made: dict[str, str] = {}
    async with await Store.open(paths.database_path(os.environ)) as store:
        for name, status in (("done", RunStatus.COMPLETED), ("stopped", RunStatus.INTERRUPTED),
                             ("live", RunStatus.RUNNING)):
            session = await store.create_session(profile="oracle", title=f"{secret} {name}", cwd=str(project),
                                                 origin="detached")
            await store.append_message(session.id, Message.user(f"{secret} the task"))
            await store.append_message(session.id, Message.assistant(f"{secret} what it found"))
            run = await store.create_run(session_id=session.id, profile="oracle", model=None,
                                         prompt=f"{secret} the task", status=RunStatus.RUNNING)
            run = await store.update_run(run.id, status=status, result={"output": f"{secret} output"}
                                         if status == RunStatus.COMPLETED else None)
            made[name] = run.id
            made[f"{name}-label"] = run.label or ""
    return made


async def _statuses(run_ids: list[str]) -> list[str]:
    async with await Store.open(paths.database_path(os.environ)) as store:
        return [(await store.resolve_run(r)).status.value for r in run_ids]


def _texts(result: Any) -> str:
    return json.dumps([getattr(c, "text", "") for c in result.content]) + json.dumps(result.structured_content)


async def test_an_mcp_client_sees_and_stops_only_the_runs_of_its_own_project(fake_env, tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError
    from mcp_types import Request, RequestParams, Result

    ours, theirs = _project(tmp_path, "ours"), _project(tmp_path, "theirs")
    mine = await _seed_runs(ours, secret="OURS")
    other = await _seed_runs(theirs, secret="THEIRS-SECRET")

    class TaskId(RequestParams):
        task_id: str

    class Get(Request[TaskId, str]):
        method: str = "tasks/get"
        params: TaskId
        name_param = "taskId"

    class Cancel(Request[TaskId, str]):
        method: str = "tasks/cancel"
        params: TaskId
        name_param = "taskId"

    params = StdioServerParameters(command=sys.executable, args=ZYGOTE.argv("mcp", "serve")[1:], env=_env(),
                                   cwd=str(ours))
    async with Client(params) as client:
        collected = await client.call_tool("result", {"run_id": mine["done"]})
        assert not collected.is_error and "OURS output" in _texts(collected)  # its own project's run: as before
        for tool, arguments in (
                ("status", {"run_id": other["done"]}), ("result", {"run_id": other["done-label"]}),
                ("wait", {"run_id": other["done"][:12], "timeout_s": 0}), ("cancel", {"run_id": other["stopped"]}),
                ("send", {"run_id": other["live"], "text": "rm -rf ~"}), ("status", {"run_id": other["live-label"]})):
            refused = await client.call_tool(tool, arguments)
            assert refused.is_error, (tool, refused)
            assert "THEIRS-SECRET" not in _texts(refused) and str(theirs) not in _texts(refused), (tool, refused)
        for request in (Get(params=TaskId(task_id=other["done"])), Cancel(params=TaskId(task_id=other["stopped"]))):
            with pytest.raises(MCPError) as unknown:
                await client.session.send_request(request, Result)
            assert "THEIRS-SECRET" not in unknown.value.message
    assert await _statuses([other["stopped"], other["live"]]) == ["interrupted", "running"]
    async with await Store.open(paths.database_path(os.environ)) as store:
        assert await store.run_commands.take({other["live"]: "live"}) == []  # no guidance was posted to it


# -- 2. an ACP client, the conversations of another project --------------------------------------------------------

class _Editor:
    """An editor with only the methods it answers (handed to the SDK as `Any`: the protocol names them all)."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(self, **_: Any) -> Any:
        from acp import schema

        return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))


async def _seed_session(project: Path, text: str) -> str:
    async with await Store.open(paths.database_path(os.environ)) as store:
        session = await store.create_session(profile="generic", title=text, cwd=str(project))
        await store.append_message(session.id, Message.user(text))
        return session.id


async def test_an_acp_client_lists_and_loads_only_the_conversations_of_the_project_it_names(
        fake_env, tmp_path: Path) -> None:
    from acp import PROTOCOL_VERSION, RequestError, text_block
    from acp.stdio import spawn_agent_process

    ours, theirs = _project(tmp_path, "ours"), _project(tmp_path, "theirs")
    mine = await _seed_session(ours, "OURS a conversation")
    other = await _seed_session(theirs, "THEIRS-SECRET a conversation")
    editor = _Editor()
    async with spawn_agent_process(cast(Any, editor), *ZYGOTE.argv("acp"), env=_env(), cwd=ours, transport_kwargs={
            "stderr": subprocess.DEVNULL, "shutdown_timeout": 60.0}) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 60)
        named = {s.session_id for s in (await conn.list_sessions(cwd=str(ours))).sessions}
        unnamed = {s.session_id for s in (await conn.list_sessions()).sessions}  # the folder it was started in
        assert mine in named and mine in unnamed
        assert other not in named and other not in unnamed
        for reopen in (conn.load_session, conn.resume_session):
            with pytest.raises(RequestError) as refused:
                await reopen(cwd=str(ours), session_id=other, mcp_servers=[])
            assert other in str(refused.value.data) and "THEIRS-SECRET" not in str(refused.value.data)
        with pytest.raises(RequestError):
            await conn.prompt(session_id=other, prompt=[text_block("and what else?")])
        # a client naming the other project's folder is that project's client
        assert other in {s.session_id for s in (await conn.list_sessions(cwd=str(theirs))).sessions}
    assert "THEIRS-SECRET" not in repr(editor.updates)
