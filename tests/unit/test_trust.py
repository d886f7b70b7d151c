"""Trust pinned to content: which files count, how they are read, and the record, old and new."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yeetui import paths
from yeetui.settings.trust import fingerprint, is_trusted, project_files, set_trusted, trust_state, trusted_projects


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for rel in (".yeetui/config.yaml", ".yeetui/agents/a.yaml", ".yeetui/agents/deep/b.md", ".claude/agents/c.md",
                ".opencode/agents/d.md", ".opencode/agent/e.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n")
    return root


def test_the_files_are_the_config_and_agent_files_by_relative_path(project: Path) -> None:
    for rel in (".claude/commands/x.md", ".yeetui/workflows/w.yaml", "src/main.py", ".yeetui/agents/.hidden.md",
                ".yeetui/agents/.git/config", ".claude/settings.json", ".claude/other.json"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("not what trust widens\n")
    files = project_files(project)
    # Claude Code's settings file is there too: its hooks are commands trusting the project lets run
    assert sorted(files) == [".claude/agents/c.md", ".claude/settings.json", ".opencode/agent/e.md",
                             ".opencode/agents/d.md", ".yeetui/agents/a.yaml", ".yeetui/agents/deep/b.md",
                             ".yeetui/config.yaml"]
    assert all(digest.startswith("sha256:") for digest in files.values())


def test_the_digest_follows_content_and_names_not_times_or_order(project: Path) -> None:
    before = fingerprint(project_files(project))
    (project / ".claude/agents/c.md").touch()
    assert fingerprint(project_files(project)) == before
    assert fingerprint(dict(reversed(project_files(project).items()))) == before
    (project / ".claude/agents/c.md").write_text("# changed\n")
    assert fingerprint(project_files(project)) != before
    (project / ".claude/agents/c.md").write_text("# .claude/agents/c.md\n")
    assert fingerprint(project_files(project)) == before
    (project / ".claude/agents/c.md").rename(project / ".claude/agents/renamed.md")
    assert fingerprint(project_files(project)) != before


def test_symlinks_out_of_the_project_are_not_followed(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("secret stuff\n")
    (project / ".claude/agents/link.md").symlink_to(outside / "x.md")
    (project / ".claude/agents/inside.md").symlink_to(project / ".claude/agents/c.md")
    (project / ".claude/agents/folder").symlink_to(outside, target_is_directory=True)
    files = project_files(project)
    assert files[".claude/agents/link.md"] == f"link:{outside / 'x.md'}"
    assert files[".claude/agents/inside.md"] == files[".claude/agents/c.md"]  # read through, as the loader does
    assert not any(rel.startswith(".claude/agents/folder") for rel in files)  # not entered, as by the loader
    before = fingerprint(files)
    (outside / "x.md").write_text("changed outside, never read\n")
    assert fingerprint(project_files(project)) == before


def test_trust_holds_while_the_files_are_unchanged(project: Path) -> None:
    assert not is_trusted(project) and trust_state(project).note == ""
    set_trusted(project)
    assert is_trusted(project) and trusted_projects() == [str(project.resolve())]
    (project / ".yeetui/agents/new.md").write_text("---\npermissions: {bash: allow}\n---\n")
    (project / ".yeetui/config.yaml").write_text("permissions: {bash: allow}\n")
    (project / ".opencode/agent/e.md").unlink()
    state = trust_state(project)
    assert not state.trusted
    assert state.changed == (".yeetui/agents/new.md (added)", ".yeetui/config.yaml (changed)",
                             ".opencode/agent/e.md (removed)")
    assert "changed since you trusted it" in state.note and ".yeetui/agents/new.md (added)" in state.note
    set_trusted(project)
    assert is_trusted(project)
    set_trusted(project, False)
    assert not is_trusted(project) and trusted_projects() == []


def test_a_long_list_of_changes_is_counted(project: Path) -> None:
    set_trusted(project)
    for n in range(15):
        (project / f".claude/agents/new{n:02}.md").write_text("x\n")
    state = trust_state(project)
    assert len(state.changed) == 15 and "and 5 more" in state.note


def test_trusting_pins_the_files_as_they_were_shown(project: Path) -> None:
    """`files` taken before the user saw what trusting grants: a change made in between is not trusted."""
    shown = project_files(project)
    (project / ".yeetui/agents/a.yaml").write_text("permissions: {bash: allow}\n")
    set_trusted(project, files=shown)
    state = trust_state(project)
    assert not state.trusted and state.changed == (".yeetui/agents/a.yaml (changed)",)


def test_an_old_record_is_read_and_rewritten(project: Path) -> None:
    record = paths.data_dir() / "trusted-projects.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"projects": [str(project.resolve()), "/other/project", 7]}))
    state = trust_state(project)
    assert not state.trusted and "before yeetui pinned trust" in state.note and str(project.resolve()) in state.note
    set_trusted(project)
    data = json.loads(record.read_text())
    assert data["version"] == 2 and list(data["pinned"]) == [str(project.resolve())]
    assert data["projects"] == ["/other/project"]
    assert is_trusted(project)


def test_a_hooks_script_and_executable_are_pinned_by_trust(project: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46, item 1: trust pins the project files a hook's command names and the program it runs — an
    agent's edit of the script, or another `fmt-tool` put first on PATH, untrusts the project for the next start,
    naming what changed."""
    bin1, bin0 = tmp_path / "bin1", tmp_path / "bin0"
    for folder in (bin1, bin0):
        folder.mkdir()
    (bin1 / "fmt-tool").write_text("#!/bin/sh\n")
    (bin1 / "fmt-tool").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin0}:{bin1}:/usr/bin:/bin")
    (project / "scripts").mkdir()
    (project / "scripts/fmt.sh").write_text("fmt-tool .\n")
    (project / ".claude/settings.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": 'bash "$CLAUDE_PROJECT_DIR"/scripts/fmt.sh && fmt-tool --check'}]}]}}))
    set_trusted(project)
    assert is_trusted(project)
    (project / "scripts/fmt.sh").write_text("env > /tmp/stolen\n")
    state = trust_state(project)
    assert not state.trusted and "scripts/fmt.sh (changed)" in state.changed, state.changed
    set_trusted(project)
    (bin0 / "fmt-tool").write_text("#!/bin/sh\n# another program\n")
    (bin0 / "fmt-tool").chmod(0o755)
    state = trust_state(project)
    assert not state.trusted and any(str(bin0 / "fmt-tool") in change for change in state.changed), state.changed
