"""`yeetui acp` reads whatever its client writes on stdin: a frame that is not a JSON-RPC object is answered with
Invalid Request and the agent serves on. One `[]` (or `42`, `"x"`, `null`) used to end it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any, cast

from tests.integration.zygote import ZYGOTE

_PASSED = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "YEETUI_CONFIG_DIR", "YEETUI_DATA_DIR", "XDG_CONFIG_HOME",
           "XDG_DATA_HOME", "LITELLM_LOCAL_MODEL_COST_MAP", "YEETUI_NETGUARD", "YEETUI_SANDBOX", "PYTHONPATH", "HOME",
           "PATH", "XDG_RUNTIME_DIR")
WAIT = 60.0
INITIALIZE = {"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": 1}}


async def _reply(process: asyncio.subprocess.Process, frame: str) -> dict[str, Any]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(frame.encode() + b"\n")
    await process.stdin.drain()
    line = await asyncio.wait_for(process.stdout.readline(), WAIT)
    assert line, f"yeetui acp ended after {frame!r} (exit status {await process.wait()})"
    answer: dict[str, Any] = json.loads(line)
    return answer


async def test_a_frame_that_is_not_a_json_rpc_object_is_refused_and_the_agent_serves_on(
        fake_env, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    env = {k: os.environ[k] for k in _PASSED if k in os.environ}
    process = await asyncio.create_subprocess_exec(*ZYGOTE.argv("acp"), stdin=subprocess.PIPE,
                                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=project,
                                                   env=env)
    try:
        for frame, answered_id in (("[]", None), ("42", None), ('"x"', None), ("null", None), ("true", None),
                                   ("[1, 2]", None), ("{}", None),
                                   ('{"jsonrpc": "2.0", "id": [1], "method": "x"}', None),
                                   ('{"jsonrpc": "2.0", "id": {"a": 1}}', None),
                                   ('{"jsonrpc": "2.0", "id": 7, "method": 5}', 7)):
            refused = await _reply(process, frame)
            assert refused["jsonrpc"] == "2.0" and refused["id"] == answered_id, (frame, refused)
            assert refused["error"]["code"] == -32600 and refused["error"]["message"] == "Invalid Request", refused
        answer = await _reply(process, json.dumps({**INITIALIZE, "id": 1}))
        assert answer["id"] == 1 and answer["result"]["agentInfo"]["name"] == "yeetui", answer
        # an answer to a question it never asked, with an error that is not an object: dropped, still serving
        process.stdin.write(b'{"jsonrpc": "2.0", "id": 99, "error": "boom"}\n')  # type: ignore[union-attr]
        answer = await _reply(process, json.dumps({**INITIALIZE, "id": "two"}))
        assert answer["id"] == "two" and "result" in answer, answer
    finally:
        if process.returncode is None:
            process.stdin.close()  # type: ignore[union-attr]
            await asyncio.wait_for(process.wait(), WAIT)


async def test_a_malformed_answer_to_the_agents_own_question_fails_that_question_only() -> None:
    """The client answers a permission question with `"error": "boom"`: the SDK read `.get` of a string and its
    receive loop died — the question was never answered, nor anything after it. Now the question fails with an
    error, and the connection serves on. The agent's connection over a socket pair, as over stdio."""
    import socket

    from acp import RequestError
    from acp.agent.connection import AgentSideConnection

    from yeetui.acp.agent import YeetuiAgent

    ours, theirs = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=ours)
    client_reader, client_writer = await asyncio.open_connection(sock=theirs)

    async def said() -> dict[str, Any]:
        frame: dict[str, Any] = json.loads(await asyncio.wait_for(client_reader.readline(), WAIT))
        return frame

    def say(frame: dict[str, Any]) -> None:
        client_writer.write(json.dumps(frame).encode() + b"\n")

    agent = YeetuiAgent()
    # As `yeetui acp` hands it over: the SDK routes only the methods the agent has; its protocol names them all.
    connection = AgentSideConnection(cast(Any, agent), agent_writer, agent_reader, use_unstable_protocol=True)
    try:
        asked = asyncio.ensure_future(agent.conn._conn.send_request("session/request_permission", {"x": 1}))
        question = await said()
        assert question["method"] == "session/request_permission"
        say({"jsonrpc": "2.0", "id": question["id"], "error": "boom"})
        try:
            await asyncio.wait_for(asked, WAIT)
        except RequestError as exc:
            assert exc.code == -32603
        else:
            raise AssertionError("a malformed error answer was taken as an answer")
        say({**INITIALIZE, "id": 5})
        answer = await said()
        assert answer["id"] == 5 and answer["result"]["agentInfo"]["name"] == "yeetui", answer
    finally:
        await connection._conn.close()
        await agent.close()
        client_writer.close()
