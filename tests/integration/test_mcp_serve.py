"""`yeetui mcp serve` driven by the MCP SDK's own client over stdio: spawn an oracle, follow it, collect it;
bad calls come back as tool errors naming what is wrong."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

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
