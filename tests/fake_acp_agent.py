"""A scripted ACP agent for tests of yeetui as a client (`runner: acp`): on `session/prompt` it sends the raw
`session/update`s of the JSON list in `FAKE_ACP_SCRIPT` (hostile ones included) as they are written — `$SID` in
a string becomes its session id — then ends the turn with `FAKE_ACP_STOP` (default `end_turn`). An entry
`{"ask": {...tool call...}}` asks permission instead and sends `{"asked": "<option id or cancelled>"}` as agent
text; `{"raw": "…"}` writes a line to stdout as it is (not JSON-RPC); `{"sleep": seconds}` is silent a while.
`FAKE_ACP_MODES` (a JSON list of mode ids, the first the current one) is what it offers; by default a bypass
mode, current, and `default`."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from acp import run_agent, schema


class ScriptedAgent:
    def __init__(self) -> None:
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> schema.InitializeResponse:
        return schema.InitializeResponse(protocol_version=protocol_version,
                                         agent_info=schema.Implementation(name="fake-acp", version="1"))

    async def new_session(self, cwd: str, **_: Any) -> schema.NewSessionResponse:
        modes = json.loads(os.environ.get("FAKE_ACP_MODES", '["bypassPermissions", "default"]'))
        return schema.NewSessionResponse(session_id="sess-root", modes=schema.SessionModeState(
            current_mode_id=modes[0], available_modes=[schema.SessionMode(id=m, name=m) for m in modes]))

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> None:
        await self._send(session_id, {"sessionUpdate": "agent_message_chunk",
                                      "content": {"type": "text", "text": f"[mode {mode_id}]"}})

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> schema.PromptResponse:
        for entry in json.loads(os.environ.get("FAKE_ACP_SCRIPT", "[]")):
            if "sleep" in entry:  # silent a while, as an agent waiting on something it does not say
                await asyncio.sleep(float(entry["sleep"]))
            elif "raw" in entry:
                sys.stdout.write(entry["raw"] + "\n")
                sys.stdout.flush()
            elif "ask" in entry:
                answer = await self.conn.request_permission(
                    session_id=session_id, tool_call=schema.ToolCallUpdate.model_validate(entry["ask"]),
                    options=[schema.PermissionOption(option_id="yes", name="Yes", kind="allow_once"),
                             schema.PermissionOption(option_id="no", name="No", kind="reject_once")])
                chosen = getattr(answer.outcome, "option_id", "cancelled")
                await self._send(session_id, {"sessionUpdate": "agent_message_chunk",
                                              "content": {"type": "text", "text": f"[asked: {chosen}]"}})
            else:
                await self._send(entry.pop("_session", session_id), _filled(entry, session_id))
            await asyncio.sleep(0)
        return schema.PromptResponse(stop_reason=os.environ.get("FAKE_ACP_STOP", "end_turn"),
                                     usage=schema.Usage(total_tokens=30, input_tokens=20, output_tokens=10))

    async def _send(self, session_id: str, update: dict[str, Any]) -> None:
        await self.conn._conn.send_notification("session/update", {"sessionId": session_id, "update": update})


def _filled(value: Any, session_id: str) -> Any:
    if isinstance(value, str):
        return value.replace("$SID", session_id)
    if isinstance(value, list):
        return [_filled(v, session_id) for v in value]
    if isinstance(value, dict):
        return {k: _filled(v, session_id) for k, v in value.items()}
    return value


if __name__ == "__main__":
    from typing import cast

    asyncio.run(run_agent(cast(Any, ScriptedAgent())))
