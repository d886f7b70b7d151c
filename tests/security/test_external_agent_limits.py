"""A hostile external agent (`runner: acp`) reporting without bounds: subagents by the hundred (each one was a
session and a run in yeetui's store) and usage of 10**30 tokens or an infinite cost (stored as said, summed into
every tree and budget above it)."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import sys
from pathlib import Path

from tests.integration.helpers import run_yeetui
from yeetui.events import RunStatus
from yeetui.external.spend import MAX_COST_USD, MAX_TOKENS
from yeetui.runs.external_run import MAX_CHILDREN, MAX_LIVE_CHILDREN

FINAL = {status.value for status in RunStatus if status.is_final}
HOSTILE_USAGE = {"inputTokens": -5, "outputTokens": 10**30, "cachedReadTokens": "lots", "cachedWriteTokens": True}


def _scripted(script: list[dict]) -> None:
    """A profile `hostile` running tests/fake_acp_agent.py with `script` as what it sends in a turn."""
    env = {"FAKE_ACP_SCRIPT": json.dumps(script), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    agents = Path(os.environ["YEETUI_CONFIG_DIR"]) / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "hostile.yaml").write_text(f"description: d\nrunner: acp\nacp:\n  command: {sys.executable}\n"
                                         f"  args: [-m, tests.fake_acp_agent]\n  env: {json.dumps(env)}\n")


def test_an_external_agents_subagents_and_usage_are_bounded(fake_env, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    script: list[dict] = []
    for i in range(MAX_LIVE_CHILDREN + 3):  # started together: the ones beyond the cap are not taken yet
        script.append({"sessionUpdate": "subagent_update", "sessionId": f"live-{i}", "title": f"live-{i}",
                       "state": {"state": "running"}})
    for i in range(MAX_LIVE_CHILDREN + 3):  # and ended
        script.append({"sessionUpdate": "subagent_update", "sessionId": f"live-{i}", "title": f"live-{i}",
                       "state": {"state": "idle", "stopReason": "end_turn"}})
    for i in range(MAX_CHILDREN + 40):  # each one started and ended at once, saying it used 10**30 tokens
        script.append({"sessionUpdate": "subagent_update", "sessionId": f"bogus-{i}",
                       "state": {"state": "idle", "stopReason": "end_turn", "usage": HOSTILE_USAGE}})
    for i in range(20):  # older adapters' children, one per spawning tool call: none left to take
        script.append({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"},
                       "_meta": {"claudeCode": {"parentToolUseId": f"t{i}"}}})
    script += [{"sessionUpdate": "usage_update", "used": 1, "size": 2, "cost": {"amount": math.inf}},
               {"sessionUpdate": "usage_update", "used": 1, "size": 2, "cost": {"amount": math.nan}},
               {"sessionUpdate": "usage_update", "used": 1, "size": 2, "cost": {"amount": True}},
               {"sessionUpdate": "usage_update", "used": 1, "size": 2, "cost": {"amount": 1e30}},
               {"sessionUpdate": "agent_message_chunk", "messageId": "last",
               "content": {"type": "text", "text": "ROOT-DONE"}}]
    _scripted(script)
    done = run_yeetui("run", "--json", "--profile", "hostile", "go", cwd=project, timeout=240)
    assert done.returncode == 0, done.stderr
    result = done.result
    assert result["status"] == "completed" and result["output"] == "ROOT-DONE", result
    assert result["cost"] == MAX_COST_USD, result  # clamped; infinity, NaN and true were not taken
    with sqlite3.connect(Path(os.environ["YEETUI_DATA_DIR"]) / "yeetui.db") as db:
        children = db.execute("SELECT prompt, usage FROM agent_runs WHERE parent_run_id = ?",
                              (result["run_id"],)).fetchall()
    assert len(children) == MAX_CHILDREN, len(children)
    live: set[str] = set()
    most = 0
    for event in done.events:  # never more at once than yeetui lets its own agents have
        if event["type"] == "run_registered" and event["run_id"] != result["run_id"]:
            live.add(event["run_id"])
            most = max(most, len(live))
        elif event["type"] == "run_status" and event["status"] in FINAL:
            live.discard(event["run_id"])
    assert most == MAX_LIVE_CHILDREN, most
    for _prompt, usage in children:
        counts = json.loads(usage)
        assert all(isinstance(n, int) and 0 <= n <= MAX_TOKENS for n in counts.values()), counts
    ended = [json.loads(usage) for prompt, usage in children if not prompt.startswith("live-")]
    clamped = {"input_tokens": 0, "output_tokens": MAX_TOKENS, "cache_read_tokens": 0, "cache_write_tokens": 0}
    assert len(ended) == MAX_CHILDREN - MAX_LIVE_CHILDREN - 3 and all(u == clamped for u in ended), ended[:3]
    warned = [e["text"] for e in done.events if e["type"] == "notice" and e.get("level") == "warning"]
    assert any(f"{MAX_CHILDREN}" in text and "subagents" in text for text in warned), warned
