"""Real git repositories for tests: one way to make a project that is a repository with a first commit."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

IDENTITY = ("-c", "user.name=T", "-c", "user.email=t@e.st")
"""Who commits in a test's repository (a machine may have no git identity of its own)."""


def git(cwd: Path, *args: str) -> str:
    """`git ARGS` in `cwd` as the test's identity; its output. A failing command fails the test, saying why."""
    done = subprocess.run(["git", *IDENTITY, *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)} in {cwd}: {done.stderr.strip()}"
    return done.stdout


def git_project(root: Path, files: Mapping[str, str], *, branch: str = "main", message: str = "init") -> Path:
    """`root` (made if missing) as a repository on `branch` with `files` (path → text) in one first commit, and
    the test's identity in its config, for the commits yeetui's agents make there later."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", branch)
    git(root, "config", "user.name", "T")
    git(root, "config", "user.email", "t@e.st")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "--", *files)
    git(root, "commit", "-q", "-m", message)
    return root
