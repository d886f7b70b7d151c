"""Claude Code (`.claude/agents`) and OpenCode (`.opencode/agent(s)`) agent files become yeetui profiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from yeetui.definitions.profile_loader import load_profiles
from yeetui.definitions.profiles import ProfileFileError, ProfileSet


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    (tmp_path / "builtin").mkdir()
    return tmp_path / "project"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _load(project: Path, *, trusted: bool = True) -> ProfileSet:
    """The translation tests read a trusted project (what the files say); untrusted narrowing is tested
    in tests/security/test_project_files.py."""
    return load_profiles(project_dir=project, user_dir=project.parent / "user",
                         builtin_dir=project.parent / "builtin", trusted=trusted)


def _warnings(result: ProfileSet) -> list[ProfileFileError]:
    assert all(isinstance(e, ProfileFileError) and e.warning for e in result.errors), result.errors
    return [e for e in result.errors if isinstance(e, ProfileFileError)]


CLAUDE_REVIEWER = """\
---
name: code-reviewer
description: Reviews code after changes
tools: Read, Grep, Glob, Bash, Edit, MultiEdit, WebFetch, TodoWrite
model: opus
color: blue
---
You are a meticulous reviewer.
"""


def test_claude_agent_fields_are_mapped(project: Path) -> None:
    path = _write(project / ".claude" / "agents" / "reviewer-file.md", CLAUDE_REVIEWER)
    result = _load(project)
    profile = result.get("code-reviewer")  # the front matter name beats the file stem
    assert profile.description == "Reviews code after changes"
    assert profile.tools == ["read_file", "grep", "glob", "bash", "edit_file"]
    assert profile.model == "anthropic/claude-opus-4-5"
    assert profile.capabilities == ["subtask"]
    assert profile.prompt == "You are a meticulous reviewer."
    assert profile.sources == (path,)
    notes = _warnings(result)
    [note] = notes  # one line per file, naming every dropped tool
    assert note.line == 4 and "WebFetch, TodoWrite" in str(note) and str(path) in str(note)


@pytest.mark.parametrize(("model", "expected"), [
    ("sonnet", "anthropic/claude-sonnet-4-6"),
    ("haiku", "anthropic/claude-haiku-4-5"),
    ("opus", "anthropic/claude-opus-4-5"),
    ("inherit", None),
    ("claude-sonnet-4-5-20250929", "anthropic/claude-sonnet-4-5-20250929"),
])
def test_claude_models(project: Path, model: str, expected: str | None) -> None:
    _write(project / ".claude" / "agents" / "m.md", f"---\ndescription: x\nmodel: {model}\n---\nhi\n")
    result = _load(project)
    assert result.errors == []
    assert result.get("m").model == expected


def test_claude_unknown_model_is_a_warning(project: Path) -> None:
    _write(project / ".claude" / "agents" / "m.md", "---\ndescription: x\nmodel: mystery-9\n---\nhi\n")
    result = _load(project)
    [note] = _warnings(result)
    assert note.line == 3 and "'mystery-9'" in str(note)
    assert result.get("m").model is None


def test_claude_without_tools_gets_all_tools(project: Path) -> None:
    _write(project / ".claude" / "agents" / "free.md", "---\ndescription: anything\n---\nDo it.\n")
    assert _load(project).get("free").tools is None


OPENCODE_DOCS = """\
---
description: Writes documentation
mode: subagent
model: openai/gpt-5
temperature: 0.1
steps: 12
tools:
  write: false
  bash: false
  read: true
  webfetch: true
permission:
  edit: deny
  bash:
    "git *": allow
    "*": ask
  webfetch: deny
---
You write docs.
"""


def test_opencode_agent_fields_are_mapped(project: Path) -> None:
    path = _write(project / ".opencode" / "agents" / "docs.md", OPENCODE_DOCS)
    result = _load(project)
    docs = result.get("docs")
    assert docs.description == "Writes documentation"
    assert docs.capabilities == ["subtask"]
    assert docs.model == "openai/gpt-5"
    assert docs.limits.max_turns == 12
    assert docs.tools is None
    assert docs.disallowed_tools == ["write_file", "bash", "edit_file"]  # denied tools are not offered at all
    assert docs.permissions == {"bash": {"git *": "allow", "*": "ask"}}
    assert docs.prompt == "You write docs."
    notes = _warnings(result)
    assert [n.line for n in notes] == [7, 12]  # one line per section of the file
    assert "tools with no yeetui equivalent were ignored: webfetch" in str(notes[0])
    assert "permissions with no yeetui equivalent were ignored: webfetch" in str(notes[1])
    assert all(n.path == path for n in notes)


@pytest.mark.parametrize(("mode", "capabilities"), [
    ("primary", ["primary"]), ("subagent", ["subtask"]), ("all", ["primary", "subtask"]),
])
def test_opencode_modes(project: Path, mode: str, capabilities: list[str]) -> None:
    _write(project / ".opencode" / "agent" / "x.md", f"---\ndescription: x\nmode: {mode}\n---\nhi\n")
    assert _load(project).get("x").capabilities == capabilities


def test_opencode_singular_dir_default_mode_and_disable(project: Path) -> None:
    _write(project / ".opencode" / "agent" / "plain.md", "---\ndescription: x\n---\nhi\n")
    _write(project / ".opencode" / "agent" / "off.md", "---\ndescription: x\ndisable: true\n---\nhi\n")
    result = _load(project)
    assert result.names() == ["plain"]
    assert result.get("plain").capabilities == ["primary", "subtask"]


def test_opencode_bad_permission_value_names_its_line(project: Path) -> None:
    path = _write(project / ".opencode" / "agents" / "bad.md",
                  "---\ndescription: x\npermission:\n  edit: sometimes\n---\nhi\n")
    result = _load(project)
    [err] = result.errors
    assert isinstance(err, ProfileFileError) and not err.warning
    assert err.path == path and err.line == 4 and "'sometimes'" in str(err)
    assert "bad" not in result


def test_foreign_files_never_merge_into_builtin_or_user_profiles(project: Path) -> None:
    builtin = project.parent / "builtin"
    b = _write(builtin / "helper.yaml", "description: built in\nthinking: high\nlimits: {max_turns: 5}\n"
                                        "triggers: {slash: /helper}\n")
    c = _write(project / ".claude" / "agents" / "helper.md",
               "---\ndescription: from claude\nmodel: sonnet\ntools: Read\n---\nClaude prompt.\n")
    o = _write(project / ".opencode" / "agents" / "helper.md",
               "---\ndescription: from opencode\nmode: subagent\n---\nOpenCode prompt.\n")
    u = _write(project.parent / "user" / "helper.yaml", "model: openai/gpt-5\n")
    p = _write(project / ".yeetui" / "agents" / "helper.yaml", "description: from project\n")
    result = _load(project)
    helper = result.get("helper")
    assert helper.description == "from project"  # the project's native file merges over it, on purpose
    assert helper.model == "openai/gpt-5" and helper.prompt == ""
    assert (helper.thinking, helper.limits.max_turns, helper.triggers.slash) == ("high", 5, "/helper")
    assert helper.tools is None
    assert helper.sources == (b, u, p)
    assert "changed by the project" in helper.note
    claude, opencode = result.get("helper-claude"), result.get("helper-opencode")
    assert (claude.description, claude.prompt, claude.tools, claude.sources) == (
        "from claude", "Claude prompt.", ["read_file"], (c,))
    assert (opencode.description, opencode.prompt, opencode.sources) == ("from opencode", "OpenCode prompt.", (o,))
    assert claude.note == "renamed from helper (the built-in profile has that name)"
    said = [str(e) for e in _warnings(result)]
    assert any("loads as 'helper-claude'" in w and str(c) in w for w in said)
    assert any("loads as 'helper-opencode'" in w and str(o) in w for w in said)
    assert any("changes the built-in profile 'helper'" in w and str(p) in w for w in said)


def test_claude_mcp_tools_and_servers_are_honoured(project: Path) -> None:
    """Claude Code names MCP tools `mcp__server__tool`: a tools list gets only the MCP tools it names (none when it
    names none), `disallowedTools` withholds them, `mcpServers` narrows to those servers; a server defined inside
    the agent file is not started."""
    _write(project / ".claude/agents/timekeeper.md",
           "---\nname: timekeeper\ndescription: d\ntools: Read, mcp__time__get_current_time, mcp__git\n---\nx\n")
    _write(project / ".claude/agents/plain.md", "---\nname: plain\ndescription: d\ntools: Read, Grep\n---\nx\n")
    _write(project / ".claude/agents/open.md",
           "---\nname: open\ndescription: d\ndisallowedTools: mcp__git__git_commit, mcp__web\n---\nx\n")
    _write(project / ".claude/agents/scoped.md",
           "---\nname: scoped\ndescription: d\nmcpServers:\n  - time\n  - evil: {command: curl}\n---\nx\n")
    result = _load(project)
    assert result.get("timekeeper").mcp == ["time/get_current_time", "git"]
    assert result.get("timekeeper").tools == ["read_file"]
    assert result.get("plain").mcp == "none"
    opened = result.get("open")
    assert opened.mcp == "inherit" and {"mcp__git__git_commit", "mcp__web"} <= set(opened.disallowed_tools)
    assert result.get("scoped").mcp == ["time"]
    notes = [str(w) for w in _warnings(result)]
    assert any("defined inside the agent file are not started (evil)" in n for n in notes), notes
    assert not any("mcp__" in n and "dropped" in n for n in notes), notes


def test_opencode_mcp_tool_keys_are_honoured(project: Path) -> None:
    """OpenCode names MCP tools `{server}_{tool}`: `github_*: false` withholds a server's tools, `"*": false`
    withholds every MCP tool but those named true; a name holding `_` is withheld under each way of splitting it."""
    _write(project / ".opencode/agents/nogit.md",
           "---\ndescription: d\ntools:\n  git_*: false\n  my_server_do_it: false\n---\nx\n")
    _write(project / ".opencode/agents/only.md",
           "---\ndescription: d\ntools:\n  '*': false\n  read: true\n  time_*: true\n  git_git_status: true\n---\nx\n")
    _write(project / ".opencode/agents/bare.md", "---\ndescription: d\ntools:\n  '*': false\n  read: true\n---\nx\n")
    _write(project / ".opencode/agents/typo.md", "---\ndescription: d\ntools:\n  wirte: false\n---\nx\n")
    result = _load(project)
    nogit = result.get("nogit")
    assert nogit.mcp == "inherit"
    assert {"mcp__git__*", "mcp__my__server_do_it", "mcp__my_server__do_it",
            "mcp__my_server_do__it"} <= set(nogit.disallowed_tools)
    only = result.get("only")
    assert only.tools == ["read_file"] and only.mcp == ["time", "git/git_status", "git_git/status"]
    assert result.get("bare").mcp == "none"
    notes = [str(w) for w in _warnings(result)]
    assert any("ignored: wirte" in n for n in notes), notes
    assert not any("git_*" in n and "ignored" in n for n in notes), notes
