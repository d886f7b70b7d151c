"""Claude Code / OpenCode slash-command files read as yeetui commands (yeetui.definitions.foreign.commands)."""

from __future__ import annotations

from pathlib import Path

from yeetui.definitions.foreign.commands import MAX_TEMPLATE_CHARS, load_commands, place


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_claude_and_opencode_command_files_become_commands(tmp_path: Path) -> None:
    _write(tmp_path / ".claude/commands/fix-issue.md",
           "---\ndescription: Fix a GitHub issue\nargument-hint: <number>\n---\nFix issue #$ARGUMENTS, with a test.\n")
    _write(tmp_path / ".claude/commands/frontend/component.md", "Make a component named $1 in $2.\n")
    _write(tmp_path / ".opencode/command/explain.md", "---\ndescription: Explain\nagent: oracle\n---\nExplain this.\n")
    commands, warnings = load_commands(tmp_path)
    by_name = {c.name: c for c in commands}
    assert set(by_name) == {"fix-issue", "component", "explain"} and warnings == []
    assert by_name["fix-issue"].expand("123") == "Fix issue #123, with a test."
    assert by_name["fix-issue"].description == "Fix a GitHub issue" and by_name["fix-issue"].argument_hint == "<number>"
    assert by_name["component"].expand("Button src/ui") == "Make a component named Button in src/ui."
    assert by_name["explain"].agent == "oracle"
    assert by_name["explain"].expand("the retry loop") == "Explain this.\n\nthe retry loop"  # appended, as Claude does


def test_taken_names_keep_their_meaning_and_the_file_is_renamed(tmp_path: Path) -> None:
    _write(tmp_path / ".claude/commands/review.md", "Review it my way.\n")
    _write(tmp_path / ".claude/commands/a/deploy.md", "Deploy A.\n")
    _write(tmp_path / ".claude/commands/b/deploy.md", "Deploy B.\n")
    found, _ = load_commands(tmp_path)
    assert sorted(c.name for c in found) == ["b:deploy", "deploy", "review"]
    placed, warnings = place(found, taken=["review", "help"])
    assert sorted(c.name for c in placed) == ["b:deploy", "claude:review", "deploy"]
    assert any("/review is taken by a built-in command; it is /claude:review" in w for w in warnings)


def test_what_is_not_honoured_is_said_and_bad_files_are_skipped_with_their_name(tmp_path: Path) -> None:
    shell = _write(tmp_path / ".claude/commands/status.md",
                   "---\nallowed-tools: Bash(git status:*)\nmodel: opus\n---\nStatus: !`git status`\nSummarise.\n")
    empty = _write(tmp_path / ".claude/commands/empty.md", "---\ndescription: nothing\n---\n")
    huge = _write(tmp_path / ".claude/commands/huge.md", "x" * (MAX_TEMPLATE_CHARS + 1))
    odd = _write(tmp_path / ".claude/commands/Run Tests.md", "Run the tests.\n")
    lenient = _write(tmp_path / ".claude/commands/lenient.md",
                     "---\ndescription: Use when: the build breaks: fix it\n---\nFix the build.\n")
    commands, warnings = load_commands(tmp_path)
    text = "\n".join(warnings)
    assert sorted(c.name for c in commands) == ["lenient", "run-tests", "status"]
    assert f"{shell}: its !`command` lines are not run" in text and "allowed-tools is not applied" in text
    assert "model is not applied" in text
    assert f"{empty}: has no prompt; skipped" in text and f"{huge}: its prompt is" in text
    assert f"{odd}: 'Run Tests' is not a command name; it is /run-tests" in text
    assert f"{lenient}, line" in text and "read leniently" in text
    assert next(c for c in commands if c.name == "lenient").description == "Use when: the build breaks: fix it"


def test_a_command_file_linked_out_of_the_project_is_not_read(tmp_path: Path) -> None:
    project = tmp_path / "project"
    secret = _write(tmp_path / "outside" / "secret.md", "SECRET-PROMPT\n")
    (project / ".claude/commands").mkdir(parents=True)
    (project / ".claude/commands/leak.md").symlink_to(secret)
    (project / ".opencode").mkdir()
    (project / ".opencode/command").symlink_to(secret.parent, target_is_directory=True)
    commands, _ = load_commands(project)
    assert commands == []
