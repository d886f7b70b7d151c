"""Hook matchers as Claude Code reads them: plain names and `A|B` lists compare exactly, anything else is a
regular expression searched for in the tool's name; the subagent tool is `Agent` (formerly `Task`)."""

from __future__ import annotations

import pytest

from yeetui.hooks.sources import load_hooks


def _matches(matcher: str, tool: str) -> bool:
    hooks = load_hooks({"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": "true"}]}]},
                       project_dir=None, trusted=False)
    return bool(hooks.commands("PreToolUse", tool))


@pytest.mark.parametrize(("matcher", "tool", "expected"), [
    ("^mcp__github", "mcp__github__create_issue", True),
    ("^mcp__github", "mcp__gitlab__x", False),
    ("Edit$", "edit_file", True),
    ("^Ba", "bash", True),
    ("Bash", "bash", True),
    ("Bash", "mcp__x__Bash_helper", False),  # a plain name is compared whole
    ("Edit|Write", "write_file", True),
    ("Edit|Write", "read_file", False),
    ("mcp__.*__write.*", "mcp__fs__write_text", True),
    ("Agent", "spawn_subagent", True),
    ("Task", "spawn_subagent", True),
    ("*", "anything", True),
])
def test_a_matcher_takes_what_it_takes_in_claude_code(matcher: str, tool: str, expected: bool) -> None:
    assert _matches(matcher, tool) is expected
