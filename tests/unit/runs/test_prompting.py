from __future__ import annotations

import datetime as dt
from pathlib import Path

from yeetui.runs.prompting import CONTEXT_FILE_CAP, build_system_prompt, read_context_files


def test_agents_md_and_claude_md_join_the_prompt(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Use tabs.")
    (tmp_path / "CLAUDE.md").write_text("Run make test.")
    files = read_context_files(tmp_path, ["AGENTS.md", "CLAUDE.md", "MISSING.md"])
    prompt = build_system_prompt(profile_prompt="You code.", cwd=tmp_path, read_only=False,
                                 exit_tools=["complete"], context_files=files, today=dt.date(2026, 1, 2))
    assert prompt.startswith("You code.")
    assert "Use tabs." in prompt and "Run make test." in prompt
    assert "2026-01-02" in prompt and str(tmp_path) in prompt
    assert "`complete`" in prompt


def test_context_file_is_capped(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("x" * (CONTEXT_FILE_CAP + 10))
    ((_, text),) = read_context_files(tmp_path, ["AGENTS.md"])
    assert text.endswith("[… 10 more characters omitted]")


def test_read_only_and_workflow_are_stated(tmp_path: Path) -> None:
    prompt = build_system_prompt(profile_prompt="p", cwd=tmp_path, read_only=True, exit_tools=[],
                                 workflow_instructions="Step one: plan.")
    assert "read-only" in prompt and "Step one: plan." in prompt and "How to finish" not in prompt
