"""Class 3 and 4: yeetui's own git calls. A review target from a model (or `/review REF`) is never read by
git as an option, and nothing a repository's config or attributes name — filters, diff drivers, textconv,
`diff.external`, a pager, fsmonitor, hooks — runs when yeetui itself calls git."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.runtime import Runtime
from yeetui.subagents.review import review_request
from yeetui.subagents.spawner import SpawnRefused
from yeetui.system.git import git, verified_revision


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def project_dir(project_dir: Path) -> Path:
    _git(project_dir, "init", "-q")
    _git(project_dir, "config", "user.email", "t@e.st")
    _git(project_dir, "config", "user.name", "T")
    (project_dir / "a.txt").write_text("one\n")
    _git(project_dir, "add", ".")
    _git(project_dir, "commit", "-qm", "one")
    (project_dir / "a.txt").write_text("two\n")
    return project_dir


HOSTILE_TARGETS = ["--output={out}", "-o{out}", "HEAD --output={out}", "HEAD..--output={out}",
                   "--output={out}...HEAD", "HEAD\n--output={out}", "--ext-diff", "-p"]


@pytest.mark.parametrize("target", HOSTILE_TARGETS)
async def test_a_review_target_is_never_an_option(project_dir: Path, tmp_path: Path, target: str) -> None:
    out = tmp_path / "written-by-git"
    with pytest.raises(SpawnRefused, match=r"Could not get the diff to review"):
        await review_request(project_dir, parent_session_id="s", target=target.format(out=out))
    assert not out.exists()


async def test_request_review_from_a_model_with_an_option_target_writes_nothing(
        runtime: Runtime, scripted, project_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "bashrc"
    scripted.script(
        Reply(tool_calls=[ToolCall("request_review", {"target": f"--output={out}"})], when_contains="REVIEW-IT"),
        Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    result = await runtime.launcher.run_prompt("REVIEW-IT")
    assert result.status.value == "completed"
    assert not out.exists()
    sent = scripted.requests[-1].text
    assert "starts with '-'" in sent  # the model is told why, as a tool error


async def test_real_revisions_and_ranges_still_review(project_dir: Path) -> None:
    _git(project_dir, "commit", "-qam", "two")
    assert await verified_revision(project_dir, "HEAD~1") == "HEAD~1"
    assert await verified_revision(project_dir, "HEAD~1..HEAD") == "HEAD~1..HEAD"
    assert await verified_revision(project_dir, "HEAD~1...") == "HEAD~1..."
    request = await review_request(project_dir, parent_session_id="s", target="HEAD")  # that commit
    assert "-one" in request.prompt_suffix and "+two" in request.prompt_suffix
    assert request.prompt.startswith("Review commit HEAD")
    request = await review_request(project_dir, parent_session_id="s", target="HEAD~1..")  # a range
    assert "-one" in request.prompt_suffix and "+two" in request.prompt_suffix


def _plant(project_dir: Path, marks: Path) -> list[Path]:
    """Config and attributes that run a command from every hook git offers; the marks they would leave."""
    names = ["clean", "smudge", "process", "textconv", "command", "external", "pager", "fsmonitor", "hook"]
    files = [marks / name for name in names]
    config = {
        "filter.evil.clean": f"touch {marks / 'clean'}; cat", "filter.evil.smudge": f"touch {marks / 'smudge'}; cat",
        "filter.proc.process": f"touch {marks / 'process'}",
        "diff.evil.textconv": f"touch {marks / 'textconv'}; cat", "diff.evil.command": f"touch {marks / 'command'}",
        "diff.external": f"touch {marks / 'external'}", "core.pager": f"touch {marks / 'pager'}; cat",
        "core.fsmonitor": f"touch {marks / 'fsmonitor'}",
    }
    for key, value in config.items():
        _git(project_dir, "config", key, value)
    (project_dir / ".gitattributes").write_text("*.txt filter=evil diff=evil\n*.md filter=proc\n")
    hook = project_dir / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {marks / 'hook'}\n")
    hook.chmod(0o755)
    (project_dir / "new.txt").write_text("untracked\n")
    (project_dir / "notes.md").write_text("untracked\n")
    return files


async def test_yeetui_s_git_runs_nothing_the_repository_names(project_dir: Path, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    files = _plant(project_dir, marks)
    request = await review_request(project_dir, parent_session_id="s")  # uncommitted + untracked
    assert "+two" in request.prompt_suffix and "+untracked" in request.prompt_suffix
    await review_request(project_dir, parent_session_id="s", target="HEAD")
    rc, _, _ = await git("rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=project_dir)
    assert rc == 0
    await git("status", "--porcelain", cwd=project_dir)
    ran = [f.name for f in files if f.exists()]
    assert ran == [], f"yeetui's git ran the repository's commands: {ran}"
    # The planted config really is live: plain git runs it (so the test above can fail).
    plain = await asyncio.create_subprocess_exec("git", "diff", "HEAD", cwd=project_dir,
                                                 stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    await plain.wait()
    assert (marks / "clean").exists() or (marks / "external").exists()
