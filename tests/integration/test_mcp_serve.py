"""`yeetui mcp serve` driven by the MCP SDK's own client over stdio: spawn an oracle, follow it, collect it;
bad calls come back as tool errors naming what is wrong."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall

_PASSED = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "YEETUI_CONFIG_DIR",
           "YEETUI_DATA_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "LITELLM_LOCAL_MODEL_COST_MAP", "YEETUI_NETGUARD",
           "YEETUI_SANDBOX", "PYTHONPATH")


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
    params = StdioServerParameters(command=sys.executable, args=["-m", "yeetui", "mcp", "serve"], env=env,
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
        assert unknown.is_error and "wizard" in unknown.content[0].text
        missing = await session.call_tool("wait", {"run_id": "ffffffffffff"})
        assert missing.is_error and "ffffffffffff" in missing.content[0].text
        finished = await session.call_tool("send", {"run_id": run_id, "text": "more"})
        assert finished.is_error and "only a running" in finished.content[0].text
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

    process = subprocess.Popen([sys.executable, "-m", "yeetui", "mcp", "serve", "--http", *extra], cwd=project,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, **(env or {})})
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


@pytest.mark.skipif(not CONFORMANCE.exists(), reason="the MCP conformance suite and Node 22 are installed by .ci/run")
@pytest.mark.timeout(300)
def test_the_official_conformance_suite_passes_the_scenarios_that_apply(tmp_path: Path) -> None:
    import subprocess

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    process, url = _serve_http(project, "--no-token")
    try:
        for scenario in SCENARIOS:
            ran = subprocess.run([str(NPM_BIN / "node"), str(CONFORMANCE), "server", "--url", url, "--scenario",
                                  scenario], capture_output=True, text=True, timeout=120)
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
        client = httpx2.AsyncClient(headers={"Authorization": "Bearer tok-" + "x" * 30})
        async with client, streamable_http_client(url, http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            assert "spawn" in {t.name for t in (await session.list_tools()).tools}
        refused_bad = await _post_with(url, "Bearer wrong")
        assert refused_bad == 401
        assert await _post_with(url.replace("/mcp", "/other"), "Bearer wrong") == 401
        assert process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=30)


async def _post_with(url: str, authorization: str) -> int:
    import httpx2

    async with httpx2.AsyncClient() as client:
        response = await client.post(url, headers={"Authorization": authorization},
                                     json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        return response.status_code
