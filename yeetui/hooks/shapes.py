"""yeetui's tool calls as Claude Code's hooks see its own: the tool's name, its input and its response in
Claude Code's shapes (as Claude Code 2.1 sends them; `tests/integration/test_hooks_like_claude_code.py` runs
the same hook under both and compares), so a hook script written for Claude Code reads yeetui's calls
unchanged. yeetui's own keys are kept beside Claude Code's where the two do not collide."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from yeetui.tools.base import ToolOutput

CLAUDE_TOOL_NAMES = {"bash": "Bash", "read_file": "Read", "write_file": "Write", "edit_file": "Edit",
                     "list_dir": "LS", "glob": "Glob", "grep": "Grep", "spawn_subagent": "Agent",
                     "ask_user": "AskUserQuestion", "web_fetch": "WebFetch"}
"""yeetui's tools by the names Claude Code gives its own (what hook matchers and payloads use)."""
FORMER_CLAUDE_TOOL_NAMES = {"spawn_subagent": "Task"}
"""Names Claude Code gave its tools before (its subagent tool was `Task`): matchers written then still match."""
_FILE_TOOLS = ("read_file", "write_file", "edit_file")


def claude_tool_name(name: str) -> str:
    return CLAUDE_TOOL_NAMES.get(name, name)


def claude_tool_input(name: str, arguments: Mapping[str, Any], cwd: Path | None = None) -> dict[str, Any]:
    """A tool call's arguments as Claude Code's tool of the same job takes them (`file_path`, absolute as Claude
    Code's are, for a path; an Agent's `subagent_type`), yeetui's own keys kept beside them."""
    shaped = dict(arguments)
    if isinstance(arguments.get("path"), str) and name in _FILE_TOOLS:
        shaped.setdefault("file_path", _absolute(arguments["path"], cwd))
    if name == "spawn_subagent":
        shaped.setdefault("subagent_type", arguments.get("profile"))
        shaped.setdefault("description", arguments.get("label") or "")
    return shaped


def yeetui_tool_input(name: str, arguments: Mapping[str, Any], updated: Mapping[str, Any],
                      cwd: Path | None = None) -> dict[str, Any]:
    """A hook's `updatedInput` (Claude Code's keys, or yeetui's) laid over the call's own arguments, in yeetui's
    keys: what `claude_tool_input` added is taken back (`file_path` → `path`, an Agent's `subagent_type` →
    `profile`, `description` → `label`); keys the hook left out, or gave back as they were shown, keep their
    value."""
    shaped = dict(updated)
    renamed = {"file_path": "path"} if name in _FILE_TOOLS else \
        {"subagent_type": "profile", "description": "label"} if name == "spawn_subagent" else {}
    shown = claude_tool_input(name, arguments, cwd)
    for claude, ours in renamed.items():
        value = shaped.pop(claude, None)
        if ours not in shaped and value is not None and value != shown.get(claude):
            shaped[ours] = value
    return {**arguments, **shaped}


def claude_tool_response(name: str, arguments: Mapping[str, Any], output: ToolOutput,
                         cwd: Path | None = None) -> Any:
    """What a `PostToolUse` hook reads as `tool_response`: Claude Code's shape for the tools it has (Bash's
    `stdout`, `stderr`, `interrupted`; Read's `file`; Write's and Edit's `filePath`, `originalFile` and
    `structuredPatch`; an MCP tool's content blocks), else yeetui's `{content, is_error}`."""
    data = output.data or {}
    path = _absolute(arguments["path"], cwd) if isinstance(arguments.get("path"), str) else ""
    if name == "bash" and "output" in data:
        return {"stdout": data["output"], "stderr": "", "interrupted": bool(data.get("timed_out")),
                "isImage": False, "noOutputExpected": False}
    if name == "read_file" and "text" in data:
        return {"type": "text", "file": {"filePath": path, "content": data["text"], "numLines": data["num_lines"],
                                         "startLine": data["start_line"], "totalLines": data["total_lines"]}}
    if name == "write_file" and "created" in data:
        original = data.get("original")
        content = str(arguments.get("content", ""))
        return {"type": "create" if data["created"] else "update", "filePath": path, "content": content,
                "structuredPatch": _patch(original, content) if original is not None else [],
                "originalFile": original, "userModified": False}
    if name == "edit_file" and "original" in data:
        original = str(data["original"])
        old, new = str(arguments.get("old_string", "")), str(arguments.get("new_string", ""))
        every = bool(arguments.get("replace_all"))
        after = original.replace(old, new) if every else original.replace(old, new, 1)
        return {"filePath": path, "oldString": old, "newString": new, "originalFile": original,
                "structuredPatch": _patch(original, after), "userModified": False, "replaceAll": every}
    if name.startswith("mcp__"):
        return [{"type": "text", "text": output.content}]
    if name == "spawn_subagent":
        return {"status": "failed" if output.is_error else "completed", "prompt": arguments.get("prompt", ""),
                "content": [{"type": "text", "text": output.content}]}
    return {"content": output.content, "is_error": output.is_error}


def _absolute(path: str, cwd: Path | None) -> str:
    if cwd is None or os.path.isabs(path):
        return path
    return os.path.normpath(os.path.join(cwd, path))


def _patch(before: str, after: str) -> list[dict[str, Any]]:
    """The change as Claude Code's `structuredPatch`: unified hunks of three lines' context, each with its
    old and new start and length and its lines marked ` `, `-`, `+`."""
    old, new = before.splitlines(), after.splitlines()
    hunks = []
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(3):
        first, last = group[0], group[-1]
        lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [f" {line}" for line in old[i1:i2]]
                continue
            lines += [f"-{line}" for line in old[i1:i2]]
            lines += [f"+{line}" for line in new[j1:j2]]
        hunks.append({"oldStart": first[1] + 1, "oldLines": last[2] - first[1], "newStart": first[3] + 1,
                      "newLines": last[4] - first[3], "lines": lines})
    return hunks
