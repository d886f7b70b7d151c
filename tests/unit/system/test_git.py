"""system.git: hardened git calls against a real repository."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from tests.gitrepo import git_project
from yeetui.system.git import diff, git, scrubbed_env

IDENTITY = ("-c", "user.name=Test", "-c", "user.email=test@example.com")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_project(tmp_path / "repo", {"a.txt": "one\n"})


def cli(repo: Path, *args: str) -> None:
    """Plain git (no hardening), for setting repositories up."""
    subprocess.run(["git", *args], cwd=repo, check=True)


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


async def test_git_returns_code_and_output(repo: Path) -> None:
    rc, out, err = await git("rev-parse", "--abbrev-ref", "HEAD", cwd=repo)
    assert (rc, out.strip(), err) == (0, "main", "")
    rc, _, err = await git("rev-parse", "no-such-ref", cwd=repo)
    assert rc != 0 and "no-such-ref" in err


async def test_hooks_never_run(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    executable(repo / ".git" / "hooks" / "pre-commit", f"#!/bin/sh\ntouch {marker}\n")
    (repo / "a.txt").write_text("two\n")
    rc, _, err = await git(*IDENTITY, "commit", "-q", "-am", "change", cwd=repo)
    assert rc == 0, err
    assert not marker.exists()
    (repo / "a.txt").write_text("three\n")  # control: plain git does run the hook
    cli(repo, *IDENTITY, "commit", "-q", "-am", "again")
    assert marker.exists()


async def test_redirecting_git_variables_are_removed(repo: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "ext-ran"
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    external = executable(tmp_path / "ext.sh", f"#!/bin/sh\ntouch {marker}\n")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(external))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.pager")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "touch /tmp/never")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Kept")
    env = scrubbed_env()
    assert "GIT_DIR" not in env and "GIT_EXTERNAL_DIFF" not in env and "GIT_CONFIG_COUNT" not in env
    assert env["GIT_AUTHOR_NAME"] == "Kept" and env["GIT_TERMINAL_PROMPT"] == "0"
    (repo / "a.txt").write_text("changed\n")
    text = await diff(repo)
    assert "+changed" in text and not marker.exists()


async def test_diff_ignores_external_diff_and_textconv_from_repo_config(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "driver-ran"
    tool = executable(tmp_path / "driver.sh", f"#!/bin/sh\ntouch {marker}\necho fake\n")
    cli(repo, "config", "diff.external", str(tool))
    cli(repo, "config", "diff.evil.textconv", str(tool))
    (repo / ".gitattributes").write_text("*.txt diff=evil\n")
    (repo / "a.txt").write_text("changed\n")
    text = await diff(repo)
    assert "-one\n+changed" in text and not marker.exists()
    cli(repo, "diff")  # control: plain git diff does run the repository's driver
    assert marker.exists()


async def test_diff_against_a_base_revision(repo: Path) -> None:
    cli(repo, "checkout", "-q", "-b", "feature")
    (repo / "b.txt").write_text("new file\n")
    cli(repo, *IDENTITY, "add", "b.txt")
    cli(repo, *IDENTITY, "commit", "-q", "-m", "b")
    assert await diff(repo) == ""
    text = await diff(repo, "main...feature")
    assert "b.txt" in text and "+new file" in text


async def test_diff_outside_a_repository_raises_clearly(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(RuntimeError, match=f"(?i)git diff failed in {plain}: .*not a git repository[^\n]*$"):
        await diff(plain, "HEAD")
