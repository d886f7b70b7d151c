"""Claude Code's records of its subagents, read back for their usage: the sum over assistant messages (each
once), and nothing read from a path an id could smuggle in or from lines that are not what is expected."""

from __future__ import annotations

import json
from pathlib import Path

from yeetui.external.records.claude import subagent_usage, tool_response_usage
from yeetui.external.spend import MAX_TOKENS
from yeetui.messages import Usage

SESSION, AGENT = "75c0e187-e747-4bfe-806c-ab30298ae553", "aaba996cfe19efa17"


def _record(home: Path, lines: list[object], *, session: str = SESSION, agent: str = AGENT) -> Path:
    folder = home / ".claude" / "projects" / "-tmp-project" / session / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"agent-{agent}.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def _assistant(message_id: str | None, **usage: int) -> dict:
    message: dict = {"role": "assistant", "usage": usage}
    if message_id is not None:
        message["id"] = message_id
    return {"type": "assistant", "isSidechain": True, "message": message}


def test_each_message_counts_once_and_messages_add_up(tmp_path: Path) -> None:
    _record(tmp_path, [
        {"type": "user", "message": {"role": "user", "content": "task"}},
        _assistant("m1", input_tokens=100, output_tokens=5, cache_read_input_tokens=7),
        _assistant("m1", input_tokens=100, output_tokens=9, cache_read_input_tokens=7),  # its next block
        _assistant("m2", input_tokens=200, output_tokens=3, cache_creation_input_tokens=11),
        _assistant(None, input_tokens=1, output_tokens=1),
    ])
    usage = subagent_usage({"HOME": str(tmp_path)}, SESSION, AGENT)
    assert usage == Usage(input_tokens=301, output_tokens=13, cache_read_tokens=7, cache_write_tokens=11)


def test_claude_config_dir_wins_over_home(tmp_path: Path) -> None:
    config = tmp_path / "elsewhere"
    _record(tmp_path, [_assistant("m1", input_tokens=5, output_tokens=1)])
    assert subagent_usage({"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(config)}, SESSION, AGENT) is None
    (config / "projects").mkdir(parents=True)
    (tmp_path / ".claude" / "projects").rename(config / "projects" / "x")  # one level deeper: not its place
    assert subagent_usage({"CLAUDE_CONFIG_DIR": str(config)}, SESSION, AGENT) is None


def test_hostile_records_and_ids_are_survived(tmp_path: Path) -> None:
    _record(tmp_path, [
        "not json at all", "[1, 2]", '{"type": "assistant", "message": "text"}',
        {"type": "assistant", "message": {"id": "m1", "usage": {"input_tokens": -5, "output_tokens": True}}},
        {"type": "assistant", "message": {"id": "m2", "usage": {"input_tokens": 10**15, "output_tokens": "9"}}},
        {"type": "user", "message": {"id": "m3", "usage": {"input_tokens": 50}}},  # not the agent's message
        _assistant("m4", input_tokens=3, output_tokens=2),
    ])
    assert subagent_usage({"HOME": str(tmp_path)}, SESSION, AGENT) == Usage(input_tokens=MAX_TOKENS,
                                                                             output_tokens=2)  # 10**15: clamped
    # ids that would reach another file are not looked up at all
    _record(tmp_path, [_assistant("x", input_tokens=9, output_tokens=9)], agent="evil")
    for session, agent in ((SESSION, "../../x/subagents/agent-evil"), ("*", AGENT), (SESSION, "*"), ("", AGENT)):
        assert subagent_usage({"HOME": str(tmp_path)}, session, agent) is None
    assert subagent_usage({}, SESSION, AGENT) is None  # no HOME: nowhere to look
    # a record with nothing spent says nothing
    _record(tmp_path, [{"type": "user"}], agent="empty")
    assert subagent_usage({"HOME": str(tmp_path)}, SESSION, "empty") is None


def test_an_older_adapters_tool_response_usage() -> None:
    update = {"_meta": {"claudeCode": {"toolName": "Agent", "toolResponse": {
        "usage": {"input_tokens": 7644, "output_tokens": 6, "cache_read_input_tokens": 0}}}}}
    assert tool_response_usage(update) == Usage(input_tokens=7644, output_tokens=6)
    assert tool_response_usage({"_meta": {"claudeCode": {"toolResponse": "done"}}}) is None
    assert tool_response_usage({"_meta": []}) is None
