"""Giving a worktree's work back: merge it into the checkout it came from, bring it up to date, or discard it.

Nothing here runs without someone asking: the user (inbox, `/merge`, `yeetui worktrees merge`) or a config
that says so. A merge that conflicts is undone at once and reported with the files involved; the user's
checkout is left as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from yeetui.store.records import WorktreeRecord
from yeetui.system.git import Confine
from yeetui.worktrees.manager import WorktreeError, Worktrees, is_dir

Strategy = Literal["merge", "ff", "squash"]
SyncHow = Literal["rebase", "merge"]
STRATEGIES: tuple[Strategy, ...] = ("merge", "ff", "squash")


@dataclass(frozen=True)
class MergeOutcome:
    merged: bool
    into: Path
    """The checkout the work went into (the worktree's `repo`)."""
    target: str
    """Its branch, or `HEAD` when detached."""
    message: str
    commit: str | None = None
    conflicts: list[str] = field(default_factory=list)


async def merge_work(worktrees: Worktrees, wt: WorktreeRecord, *, strategy: Strategy = "merge",
                     message: str | None = None) -> MergeOutcome:
    """Merge `wt`'s branch into the checkout it was made from; on success the worktree and its branch are
    removed and it is marked merged. Uncommitted work in it is committed first (the user asked for it)."""
    wt = await worktrees.fresh(wt)
    if wt.status != "active":
        raise WorktreeError(f"Worktree {wt.id[:12]} ({wt.branch}) is {wt.status}; there is nothing to merge.")
    if strategy not in STRATEGIES:
        raise WorktreeError(f"Unknown merge strategy {strategy!r}; use one of {', '.join(STRATEGIES)}.")
    name = wt.label or wt.branch
    await worktrees.commit_work(wt, f"{name}: work left uncommitted")
    repo = wt.repo
    if not is_dir(repo):
        raise WorktreeError(f"The checkout {repo} that worktree {wt.id[:12]} came from is gone.")
    target = await _current_branch(worktrees, repo)
    if wt.kind == "clone":
        refspec = f"+refs/heads/{wt.branch}:refs/heads/{wt.branch}"
        await worktrees.git_checked(repo, "fetch", "--quiet", "--no-tags", "--no-recurse-submodules",
                                    "--end-of-options", str(wt.path), refspec, what=f"fetch {wt.branch} from the clone",
                                    confine=await worktrees.checkout_confine(repo, reads=wt.path))
    rc, out, _ = await worktrees.git_result(repo, "rev-list", "--count", f"HEAD..refs/heads/{wt.branch}")
    if rc == 0 and out.strip() == "0":
        return MergeOutcome(False, repo, target, f"{wt.branch} has nothing that {target} does not already have; "
                            "nothing was merged (discard the worktree if its work is done).")
    if strategy == "squash":
        rc, _, _ = await worktrees.git_result(repo, "diff", "--cached", "--quiet")
        if rc != 0:
            raise WorktreeError(f"{repo} has staged changes; commit or unstage them before a squash merge, so "
                                "they do not end up in the squashed commit.")
    ref = f"refs/heads/{wt.branch}"
    nested = await worktrees.new_gitlinks(repo, "HEAD", ref)
    if nested:
        raise WorktreeError(f"{wt.branch} adds nested git repositories ({', '.join(nested[:5])}); yeetui does not "
                            "merge a gitlink an agent made. Copy the files in, or add the submodule yourself.")
    text = message or f"Merge {name} ({wt.branch})"
    identity = await worktrees.identity(repo)
    confine = await worktrees.checkout_confine(repo)
    if strategy == "ff":
        args = ["merge", "--ff-only", "--end-of-options", ref]
    elif strategy == "squash":
        args = ["merge", "--squash", "--end-of-options", ref]
    else:
        args = ["merge", "--no-ff", "--no-edit", "-m", text, "--end-of-options", ref]
    rc, _, err = await worktrees.git_result(repo, *args, settings=identity, confine=confine)
    if rc == 0 and strategy == "squash":
        rc, _, err = await worktrees.git_result(repo, "commit", "--quiet", "--no-verify", "-m",
                                                message or f"{name} (squashed from {wt.branch})", settings=identity,
                                                confine=confine)
    if rc != 0:
        conflicts = await _conflicted(worktrees, repo)
        if conflicts or strategy == "squash":
            await worktrees.git_result(repo, *(("reset", "--merge") if strategy == "squash" else ("merge", "--abort")),
                                       confine=confine)
        if conflicts:
            return MergeOutcome(False, repo, target, f"Merging {wt.branch} into {target} conflicts in "
                                f"{', '.join(conflicts)}; nothing was merged. Bring the worktree up to date "
                                f"(`yeetui worktrees sync {wt.id[:8]}`), or merge by hand.", conflicts=conflicts)
        raise WorktreeError(f"git refused to merge {wt.branch} into {target} in {repo}: {_said(err)}")
    _, head, _ = await worktrees.git_result(repo, "rev-parse", "HEAD")
    await worktrees.delete(wt, force=True, status="merged")
    how = {"ff": "fast-forwarded", "squash": "squashed into one commit", "merge": "merged"}[strategy]
    return MergeOutcome(True, repo, target, f"{wt.branch} {how} into {target} ({head.strip()[:10]}); its worktree "
                        "is removed.", commit=head.strip())


async def discard_work(worktrees: Worktrees, wt: WorktreeRecord) -> WorktreeRecord:
    """Throw the work away: the worktree and its branch are removed, the row marked discarded."""
    return await worktrees.delete(wt, force=True, status="discarded")


async def sync_worktree(worktrees: Worktrees, wt: WorktreeRecord, *, how: SyncHow = "rebase") -> MergeOutcome:
    """Bring `wt` up to date with its checkout's current HEAD (rebase its commits, or merge HEAD in). A
    conflict is undone and reported; the worktree must have no uncommitted changes."""
    wt = await worktrees.fresh(wt)
    if wt.status != "active":
        raise WorktreeError(f"Worktree {wt.id[:12]} ({wt.branch}) is {wt.status}.")
    state = await worktrees.state(wt)
    if not state.exists:
        raise WorktreeError(f"The folder of worktree {wt.id[:12]} ({wt.path}) is gone.")
    if state.dirty:
        raise WorktreeError(f"Worktree {wt.id[:12]} has uncommitted changes; commit or discard them first.")
    target = await _current_branch(worktrees, wt.repo)
    _, head, _ = await worktrees.git_result(wt.repo, "rev-parse", "HEAD")
    head = head.strip()
    if wt.kind == "clone":
        await worktrees.git_checked(wt.path, "fetch", "--quiet", "--no-tags", "--end-of-options", str(wt.repo), head,
                             what="fetch the checkout's HEAD into the clone")
    identity = await worktrees.identity(wt.path)
    writable, _ = await worktrees.git_dirs(wt)
    confine = Confine(writable=(wt.path, *writable), readable=(wt.repo,))
    args = ("rebase", "--quiet", head) if how == "rebase" else ("merge", "--no-edit", "-m",
                                                                  f"Merge {target} into {wt.branch}", head)
    rc, _, err = await worktrees.git_result(wt.path, *args, settings=identity, confine=confine)
    if rc != 0:
        conflicts = await _conflicted(worktrees, wt.path)
        await worktrees.git_result(wt.path, how, "--abort", confine=confine)
        if conflicts:
            return MergeOutcome(False, wt.path, wt.branch, f"Bringing {wt.branch} up to date with {target} "
                                f"conflicts in {', '.join(conflicts)}; it was left as it was.", conflicts=conflicts)
        raise WorktreeError(f"git could not {how} {wt.branch} onto {target}: {_said(err)}")
    await worktrees.store.worktree_records.update(wt.id, base_commit=head)
    done = "rebased onto" if how == "rebase" else "merged with"
    return MergeOutcome(True, wt.path, wt.branch, f"{wt.branch} {done} {target} ({head[:10]}).", commit=head)


async def _current_branch(worktrees: Worktrees, repo: Path) -> str:
    rc, out, _ = await worktrees.git_result(repo, "symbolic-ref", "--quiet", "--short", "HEAD")
    return out.strip() if rc == 0 and out.strip() else "HEAD"


async def _conflicted(worktrees: Worktrees, cwd: Path) -> list[str]:
    rc, out, _ = await worktrees.git_result(cwd, "diff", "--name-only", "--diff-filter=U", "-z")
    return [name for name in out.split("\0") if name] if rc == 0 else []


def _said(err: str) -> str:
    lines = [line.strip() for line in err.splitlines() if line.strip() and not line.startswith("hint:")]
    return " ".join(lines[:6]) or "no message"
