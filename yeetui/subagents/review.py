"""What a reviewer is given: the diff to review, taken through yeetui's hardened git, capped."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from yeetui.subagents.spawner import SpawnRefused, SpawnRequest
from yeetui.system.git import Confine, git, verified_revision
from yeetui.system.git import diff as git_diff
from yeetui.text import cap

DIFF_CAP = 60_000


async def review_request(project_dir: Path, *, parent_session_id: str, target: str | None = None,
                         focus: str | None = None, blocking: bool = False,
                         requested_by: Literal["user", "agent"] = "user",
                         parent_run_id: str | None = None,
                         ranges: list[tuple[str, str]] | None = None) -> SpawnRequest:
    """A reviewer spawn carrying `git diff` of `target` (None: uncommitted changes against HEAD), or of each
    `(title, range)` of `ranges` under its title, through yeetui's hardened git. Refused with a clear reason
    when there is nothing to review."""
    try:
        if ranges:
            parts = [(title, await git_diff(project_dir, span)) for title, span in ranges]
            text = "".join(f"### {title} ({span})\n\n{diff}\n" for (title, diff), (_, span) in zip(parts, ranges,
                                                                                                  strict=True)
                           if diff.strip())
        elif target and ".." not in target:
            text = await commit_diff(project_dir, target)
        else:
            text = await git_diff(project_dir, target or "HEAD")
            if target is None:
                text += await untracked_diff(project_dir)
    except (RuntimeError, OSError, ValueError) as exc:
        raise SpawnRefused(f"Could not get the diff to review: {exc}") from None
    shown = ", ".join(span for _, span in ranges) if ranges else target or "the working tree"
    if not text.strip():
        raise SpawnRefused(f"There is nothing to review: the diff of {shown} is empty.")
    text = cap(text, DIFF_CAP)
    if ranges:
        what = "the work on " + ", ".join(title for title, _ in ranges)
    elif target and ".." not in target:
        what = f"commit {target}"
    else:
        what = f"the changes in {target}" if target else "the uncommitted changes in the working tree"
    task = f"Review {what}." + (f" Focus: {focus}" if focus else "")
    return SpawnRequest(profile="reviewer", prompt=task, parent_session_id=parent_session_id,
                        parent_run_id=parent_run_id, blocking=blocking, requested_by=requested_by,
                        prompt_suffix=f"\n\n## Diff to review\n\n```diff\n{text}\n```\n")


async def commit_diff(cwd: Path, revision: str) -> str:
    """What one commit changed (`/review <sha>`; a root commit against nothing; a merge against its first parent,
    so what it brought into the branch — git's own combined diff of a clean merge is empty), through hardened
    git."""
    revision = await verified_revision(cwd, revision)
    rc, out, err = await git("show", "--format=commit %H%n%n%B", "--patch", "--diff-merges=first-parent",
                             "--no-ext-diff", "--no-textconv",
                             "--no-color", "--ignore-submodules=all", "--end-of-options", revision, "--", cwd=cwd,
                             confine=Confine())
    if rc != 0:
        raise RuntimeError(f"git show {revision} failed in {cwd}: {err.strip().splitlines()[0] if err.strip() else rc}")
    return out


async def untracked_diff(cwd: Path) -> str:
    """New files git does not track yet (and does not ignore), as diffs against nothing — a builder's new
    module is part of the change to review even before anyone commits it."""
    rc, out, err = await git("ls-files", "--others", "--exclude-standard", "-z", cwd=cwd, confine=Confine())
    if rc != 0:
        raise RuntimeError(f"git ls-files failed in {cwd}: {err.strip()}")
    parts, size = [], 0
    for name in filter(None, out.split("\0")):
        if name.endswith("/"):  # a nested repository: its own business, never looked into
            parts.append(f"(new nested repository {name}: not shown)\n")
            continue
        if size > DIFF_CAP:  # the rest would be cut anyway
            parts.append(f"(new file {name}: not shown, the diff is already long)\n")
            continue
        # --no-index exits 1 when the files differ, which they always do here.
        rc, diff, err = await git("diff", "--no-index", "--no-ext-diff", "--no-textconv", "--no-color", "--",
                                  "/dev/null", name, cwd=cwd, confine=Confine())
        if rc not in (0, 1):
            raise RuntimeError(f"git diff of new file {name} failed: {err.strip()}")
        parts.append(diff)
        size += len(diff)
    return "".join(parts)
