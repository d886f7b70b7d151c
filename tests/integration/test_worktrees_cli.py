"""`yeetui worktrees …` as a user types it: create, show, refused delete, cleanup dry run, merge, list --all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gitrepo import git_project
from tests.integration.helpers import run_yeetui

IDENTITY = ("-c", "user.name=Test", "-c", "user.email=test@example.com")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_project(tmp_path / "checkout", {"a.txt": "a\n"})


def test_the_worktree_lifecycle_from_the_shell(repo: Path) -> None:
    created = run_yeetui("worktrees", "create", "Add mul()", "--json", cwd=repo)
    assert created.returncode == 0, created.stderr
    wt = json.loads(created.stdout)
    path = Path(wt["path"])
    assert wt["branch"] == "yeetui/add-mul" and path.is_dir()
    (path / "mul.py").write_text("def mul(a, b):\n    return a * b\n")

    shown = run_yeetui("worktrees", "show", wt["id"][:8], cwd=repo)
    assert "1 uncommitted change(s)" in shown.stdout and f"yeetui worktrees merge {wt['id'][:8]}" in shown.stdout

    refused = run_yeetui("worktrees", "delete", wt["id"][:8], cwd=repo)
    assert refused.returncode == 1 and "uncommitted changes in mul.py" in refused.stderr and path.is_dir()

    dry = run_yeetui("worktrees", "cleanup", "--hours", "0", cwd=repo)
    assert "keeps" in dry.stdout and "1 uncommitted change(s)" in dry.stdout and path.is_dir()

    merged = run_yeetui("worktrees", "merge", wt["id"][:8], cwd=repo)
    assert merged.returncode == 0, merged.stderr
    assert "yeetui/add-mul merged into main" in merged.stdout
    assert (repo / "mul.py").is_file() and not path.exists()

    listed = run_yeetui("worktrees", "list", "--all", cwd=repo)
    assert "merged" in listed.stdout and "yeetui/add-mul" in listed.stdout
    assert "No active worktrees" in run_yeetui("worktrees", "list", cwd=repo).stdout


def test_worktree_commands_outside_a_repository_say_so(tmp_path: Path) -> None:
    done = run_yeetui("worktrees", "create", "x", cwd=tmp_path)
    assert done.returncode == 1 and "is not inside a git repository" in done.stderr
    assert "Traceback" not in done.stderr
