"""`Worktrees`: the git worktrees (and local clones) that agents work in, each recorded in SQLite.

A worktree is made for a session (`create`), belongs to one session at a time (`claim`/`release`, atomic
in the store), and ends merged, discarded or deleted — the row stays as history. Every git call goes
through `yeetui.system.git` (no hooks, no fsmonitor, no drivers or editors from the repository's config).

Worktrees live under the data dir (`<data>/worktrees/<repo>-<hash>/<branch-slug>`), one folder per
repository; `Worktrees` never reuses a path or a branch that exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from yeetui import paths
from yeetui.definitions.profiles import OWNED_BRANCH_FOLDER
from yeetui.errors import StoreError, YeetuiError
from yeetui.events import RunStatus
from yeetui.store import Store
from yeetui.store.records import WorktreeRecord
from yeetui.system.git import Confine, git, user_identity, verified_revision
from yeetui.worktrees.names import branch_prefix, repo_dir_name, slug, worktrees_root

Kind = Literal["worktree", "clone"]
STALE_AFTER = timedelta(hours=24)
_LIVE = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_PERMISSION)
_UNFINISHED = frozenset({RunStatus.INTERRUPTED, RunStatus.CANCELLED, RunStatus.FAILED, RunStatus.TIMEOUT,
                         RunStatus.BUDGET_EXHAUSTED, RunStatus.QUOTA_EXHAUSTED})
"""How a run ends that leaves its worktree to nobody: stale at once, not after `STALE_AFTER`."""
GITLINK_MODE = "160000"


class WorktreeError(YeetuiError):
    """A worktree operation was refused or git failed; the message says which and why."""


@dataclass(frozen=True)
class WorktreeState:
    """What is in a worktree now, read from git."""

    exists: bool
    changed: list[str] = field(default_factory=list)
    """Paths with uncommitted changes (untracked files included)."""
    commits: int = 0
    """Commits on the branch since `base_commit`."""

    @property
    def dirty(self) -> bool:
        return bool(self.changed)


@dataclass(frozen=True)
class CleanupEntry:
    worktree: WorktreeRecord
    action: Literal["remove", "keep"]
    reason: str


class Worktrees:
    """Creates, hands out and removes worktrees; `yeetui.worktrees.merging` gives their work back."""

    def __init__(self, store: Store, *, env: Mapping[str, str] | None = None) -> None:
        self.store = store
        self.env = env
        self.root = worktrees_root(env)

    # -- creating ------------------------------------------------------------------------------------

    async def create(self, checkout: Path, *, task: str, prefix: str = "yeetui/", base: str | None = None,
                     owner_session_id: str | None = None, kind: Kind = "worktree",
                     label: str | None = None) -> WorktreeRecord:
        """A new worktree (or clone) of the repository `checkout` is in, on a new branch `prefix + slug(task)`
        (made unique), starting at `base` (default: the checkout's HEAD)."""
        repo = await self.toplevel(checkout)
        base_commit = await self._commit_of(repo, base or "HEAD")
        try:
            checked = branch_prefix(prefix)
        except ValueError as exc:
            raise WorktreeError(str(exc)) from None
        name = await self._unique_branch(repo, checked, slug(task))
        folder = paths.private_dir(self.root / repo_dir_name(repo))
        path = _unique_path(folder / slug(name.replace("/", "-"), limit=60))
        if kind == "clone":
            await self.git_checked(repo.parent, "clone", "--quiet", "--no-hardlinks", "--end-of-options", str(repo),
                            str(path), what=f"clone {repo}")
            await self.git_checked(path, "checkout", "--quiet", "-b", name, base_commit, what=f"create branch {name}")
        else:
            await self.git_checked(repo, "worktree", "add", "--quiet", "-b", name, str(path), base_commit,
                            what=f"add a worktree for {name}")
        try:
            return await self.store.worktree_records.add(path=path, branch=name, repo=repo, base_branch=base,
                                                         owner_session_id=owner_session_id, kind=kind,
                                                         base_commit=base_commit, label=label or task[:80])
        except StoreError:
            await self._remove_tree(repo, path, name, kind=kind, force=True)
            raise

    async def toplevel(self, checkout: Path) -> Path:
        rc, out, err = await self.git_result(checkout, "rev-parse", "--show-toplevel")
        if rc != 0:
            raise WorktreeError(f"{checkout} is not inside a git repository ({_first(err)}); a worktree needs one.")
        return real_path(out.strip())

    async def _commit_of(self, repo: Path, revision: str) -> str:
        try:
            await verified_revision(repo, revision)
        except (ValueError, RuntimeError) as exc:
            hint = " (the repository has no commit yet: commit once first)" if revision == "HEAD" else ""
            raise WorktreeError(f"Cannot start a worktree from {revision!r} in {repo}: {exc}{hint}") from None
        rc, out, err = await self.git_result(repo, "rev-parse", "--verify", "--end-of-options",
                                             f"{revision}^{{commit}}")
        if rc != 0:
            raise WorktreeError(f"Cannot read {revision!r} in {repo}: {_first(err)}")
        return out.strip()

    async def _unique_branch(self, repo: Path, prefix: str, name: str) -> str:
        taken = {w.branch for w in await self.store.worktree_records.list(repo=repo)}
        for n in range(1, 1000):
            branch = f"{prefix}{name}" + (f"-{n}" if n > 1 else "")
            rc, _, _ = await self.git_result(repo, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}")
            if rc != 0 and branch not in taken:
                return branch
        raise WorktreeError(f"Every branch name {prefix}{name}-N up to 999 is taken in {repo}.")

    # -- ownership -----------------------------------------------------------------------------------

    async def claim(self, worktree_id: str, session_id: str, *, from_session_id: str | None = None) -> WorktreeRecord:
        try:
            return await self.store.worktree_records.claim(worktree_id, session_id, from_session_id=from_session_id)
        except StoreError as exc:
            raise WorktreeError(str(exc)) from None

    async def release(self, worktree_id: str) -> WorktreeRecord:
        try:
            return await self.store.worktree_records.claim(worktree_id, None)
        except StoreError as exc:
            raise WorktreeError(str(exc)) from None

    async def find(self, name: str, *, sessions: list[str] | None = None) -> WorktreeRecord:
        """The active worktree `name` names — a run label (`builder#3`), a branch, or an id prefix — or, with
        no name, the newest active one owned by any of `sessions`. WorktreeError says what exists instead."""
        active = await self.store.worktree_records.list(statuses=("active",))
        if name:
            found = [w for w in active if name in (w.label, w.branch)] or [w for w in active if w.id.startswith(name)]
        else:
            found = [w for w in active if sessions is None or w.owner_session_id in sessions][:1]
        if len(found) == 1:
            return found[0]
        known = ", ".join(f"{w.label or w.id[:8]} ({w.branch})" for w in active[:8]) or "none"
        if len(found) > 1:
            raise WorktreeError(f"{name!r} names {len(found)} worktrees; use the id. Active worktrees: {known}.")
        where = f"named {name!r}" if name else "from this conversation"
        raise WorktreeError(f"There is no active worktree {where}. Active worktrees: {known}.")

    async def of_session(self, session_id: str) -> WorktreeRecord | None:
        owned = await self.store.worktree_records.list(owner_session_id=session_id, statuses=("active",))
        return owned[0] if owned else None

    # -- reading -------------------------------------------------------------------------------------

    async def fresh(self, wt: WorktreeRecord) -> WorktreeRecord:
        """`wt` as the store has it now (another process may have merged or claimed it meanwhile)."""
        current = await self.store.worktree_records.get(wt.id)
        if current is None:
            raise WorktreeError(f"Worktree {wt.id[:12]} is not recorded any more.")
        return current

    async def state(self, wt: WorktreeRecord) -> WorktreeState:
        if not is_dir(wt.path):
            return WorktreeState(exists=False)
        rc, out, err = await self.git_result(wt.path, "status", "--porcelain=v1", "-z", "--untracked-files=all",
                                             "--ignore-submodules=all", confine=Confine())
        if rc != 0:
            raise WorktreeError(f"Cannot read the state of worktree {wt.path}: {_first(err)}")
        changed = _porcelain_paths(out)
        commits = 0
        if wt.base_commit:
            rc, out, _ = await self.git_result(wt.path, "rev-list", "--count", f"{wt.base_commit}..HEAD")
            commits = int(out.strip()) if rc == 0 and out.strip().isdigit() else 0
        return WorktreeState(exists=True, changed=changed, commits=commits)

    async def git_dirs(self, wt: WorktreeRecord) -> tuple[list[Path], list[Path]]:
        """(writable, readable): what a worktree's own git must reach in the main repository's git dir — its
        admin dir, the object store, its branch's ref and reflog folders — and that git dir itself, to read.
        A clone has its git dir inside it: nothing more."""
        if wt.kind == "clone":
            return [], []
        own = Path((await self.git_checked(wt.path, "rev-parse", "--absolute-git-dir",
                                           what="find its git dir")).strip())
        common = (await self.git_checked(wt.path, "rev-parse", "--git-common-dir", what="find the git dir")).strip()
        shared = real_path(wt.path / common)
        branch = Path("refs", "heads", wt.branch).parent
        if not branch.is_relative_to(Path("refs", "heads", OWNED_BRANCH_FOLDER)):
            raise WorktreeError(f"Branch {wt.branch} is not in a folder yeetui owns ({OWNED_BRANCH_FOLDER}…): its "
                                "worktree's bash would be able to move the branches beside it.")
        folders = [shared / branch, shared / "logs" / branch]
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
        return [own, shared / "objects", *folders], [shared]

    async def checkout_confine(self, repo: Path, *, reads: Path | None = None) -> Confine:
        """What a merge into the user's checkout `repo` may write: its work tree and its git dirs (and read:
        `reads`, a clone it fetches from)."""
        out = await self.git_checked(repo, "rev-parse", "--absolute-git-dir", "--git-common-dir",
                                     what=f"find the git dir of {repo}")
        return Confine(writable=(repo, *(real_path(repo / line) for line in out.splitlines() if line.strip())),
                       readable=(reads,) if reads is not None else ())

    async def commit_work(self, wt: WorktreeRecord, message: str) -> str | None:
        """Commit whatever is uncommitted in the worktree (an agent that ended without committing); the new
        commit's id, or None when there was nothing to commit. Runs confined: the work tree is read-only to
        it, only the worktree's own git places are writable. A nested repository the agent made (a gitlink)
        is never committed: WorktreeError names it, after the rest is committed."""
        if wt.kind == "clone":
            _unredirect(wt.path)
        state = await self.state(wt)
        if not state.exists or not state.dirty:
            return None
        confine = Confine(writable=tuple((await self.git_dirs(wt))[0]) or (wt.path / ".git",))
        await self.git_checked(wt.path, "add", "--all", what=f"stage the work in {wt.path}", confine=confine)
        refused = await self.new_gitlinks(wt.path, "HEAD")
        if refused:
            await self.git_checked(wt.path, "rm", "--cached", "-r", "-q", "-f", "--ignore-unmatch", "--", *refused,
                                   what="leave the nested repositories out", confine=confine)
        rc, _, _ = await self.git_result(wt.path, "diff", "--cached", "--quiet", "--ignore-submodules=none",
                                         confine=confine)
        commit = None
        if rc != 0:
            await self.git_checked(wt.path, "commit", "--quiet", "--no-verify", "-m", message,
                                   what=f"commit the work in {wt.path}", settings=await self.identity(wt.path),
                                   confine=confine)
            rc, out, _ = await self.git_result(wt.path, "rev-parse", "HEAD")
            commit = out.strip() if rc == 0 else None
        if refused:
            raise WorktreeError(f"Not committed in {wt.path}: {_files(refused)} — nested git repositories an agent "
                                "made (yeetui never commits or merges a gitlink it did not start with; copy "
                                "the files in, or add the submodule yourself).")
        return commit

    async def new_gitlinks(self, cwd: Path, base: str, target: str | None = None) -> list[str]:
        """Paths that are gitlinks (nested repositories, mode 160000) in `target` (a commit; None: the index)
        but were not in `base`."""
        if target is None:
            args = ["diff-index", "--cached", "-r", "--raw", "-z", "--no-renames", "--end-of-options", base]
        else:
            args = ["diff-tree", "-r", "--raw", "-z", "--no-renames", "--end-of-options", base, target]
        rc, out, err = await self.git_result(cwd, *args)
        if rc != 0:
            raise WorktreeError(f"Could not list the changes in {cwd}: {_first(err) or f'git exited {rc}'}")
        fields = out.split("\0")
        found = []
        for header, path in zip(fields[0::2], fields[1::2], strict=False):
            modes = header.lstrip(":").split(" ")
            if len(modes) >= 2 and modes[1] == GITLINK_MODE and modes[0] != GITLINK_MODE:
                found.append(path)
        return found

    async def identity(self, cwd: Path) -> dict[str, str]:
        """The `user.*` settings for a commit yeetui makes (see `yeetui.system.git.user_identity`)."""
        return await user_identity(cwd, self.env)

    # -- ending --------------------------------------------------------------------------------------

    async def delete(self, wt: WorktreeRecord, *, force: bool = False, status: str = "deleted") -> WorktreeRecord:
        """Remove the worktree and its branch. Refused, unless `force`, when it holds uncommitted changes or
        commits nobody merged."""
        wt = await self.fresh(wt)
        if wt.status not in ("active", "merged", "discarded"):
            raise WorktreeError(f"Worktree {wt.id[:12]} ({wt.branch}) is already {wt.status}.")
        if not force and wt.status == "active":
            state = await self.state(wt)
            if state.dirty:
                raise WorktreeError(f"Worktree {wt.id[:12]} ({wt.path}) has uncommitted changes in "
                                    f"{_files(state.changed)}; delete it with --force to lose them.")
            if state.commits:
                raise WorktreeError(f"Branch {wt.branch} of worktree {wt.id[:12]} has {state.commits} commit(s) "
                                    "that are not merged; merge them, or delete with --force to lose them.")
        await self._remove_tree(wt.repo, wt.path, wt.branch, kind=wt.kind, force=True)
        return await self.store.worktree_records.update(wt.id, status=status if wt.status == "active" else wt.status,
                                                        owner_session_id=None)

    async def _remove_tree(self, repo: Path, path: Path, branch: str, *, kind: str, force: bool) -> None:
        if kind == "clone":
            if is_dir(path):
                await asyncio.to_thread(shutil.rmtree, path)
        else:
            if exists(path):
                forced = ["--force"] if force else []
                rc, _, err = await self.git_result(repo, "worktree", "remove", *forced, str(path))
                if rc != 0 and exists(path):
                    raise WorktreeError(f"git could not remove the worktree {path}: {_first(err)}")
            await self.git_result(repo, "worktree", "prune")
        if is_dir(repo):
            rc, _, err = await self.git_result(repo, "branch", "-D", "--end-of-options", branch)
            if rc != 0 and "not found" not in err:
                raise WorktreeError(f"git could not delete branch {branch}: {_first(err)}")

    async def stale(self, *, older_than: timedelta = STALE_AFTER, now: datetime | None = None) -> list[WorktreeRecord]:
        """Active worktrees untouched for `older_than` whose owner runs nothing, those whose owner's last run
        ended without finishing (interrupted by a crash, cancelled, failed, timed out: nobody will come back
        for it unless the user resumes it), and those whose folder is gone."""
        now = now or datetime.now(UTC)
        found = []
        for wt in await self.store.worktree_records.list(statuses=("active",)):
            if not exists(wt.path):
                found.append(wt)
            elif (now - wt.updated_at >= older_than or await self._owner_gave_up(wt)) and \
                    not await self._owner_busy(wt):
                found.append(wt)
        return found

    async def _owner_gave_up(self, wt: WorktreeRecord) -> bool:
        if wt.owner_session_id is None:
            return False
        last = await self.store.list_runs(session_id=wt.owner_session_id, limit=1)
        return bool(last) and last[0].status in _UNFINISHED

    async def _owner_busy(self, wt: WorktreeRecord) -> bool:
        if wt.owner_session_id is None:
            return False
        return bool(await self.store.list_runs(session_id=wt.owner_session_id, statuses=_LIVE, limit=1))

    async def cleanup(self, *, dry_run: bool = True, older_than: timedelta = STALE_AFTER,
                      now: datetime | None = None) -> list[CleanupEntry]:
        """What cleanup removes (and, unless `dry_run`, removes it): merged or discarded worktrees still on
        disk, stale ones with nothing to lose, and records whose folder is gone. Stale worktrees with
        uncommitted or unmerged work are listed as kept."""
        plan: list[CleanupEntry] = []
        for wt in await self.store.worktree_records.list(statuses=("merged", "discarded")):
            if exists(wt.path):
                plan.append(CleanupEntry(wt, "remove", f"{wt.status}; its folder is still on disk"))
        for wt in await self.stale(older_than=older_than, now=now):
            if not exists(wt.path):
                plan.append(CleanupEntry(wt, "remove", "its folder is gone"))
                continue
            state = await self.state(wt)
            if state.dirty:
                plan.append(CleanupEntry(wt, "keep", f"stale, but {len(state.changed)} uncommitted change(s)"))
            elif state.commits:
                plan.append(CleanupEntry(wt, "keep", f"stale, but {state.commits} unmerged commit(s)"))
            else:
                plan.append(CleanupEntry(wt, "remove", "stale, with no work in it"))
        if not dry_run:
            for entry in plan:
                if entry.action == "remove":
                    await self.delete(entry.worktree, force=True)
        return plan

    # -- git -----------------------------------------------------------------------------------------

    async def git_result(self, cwd: Path, *args: str, settings: Mapping[str, str] | None = None,
                         confine: Confine | None = None) -> tuple[int, str, str]:
        try:
            return await git(*args, cwd=cwd, env=self.env, settings=settings, confine=confine)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise WorktreeError(f"Cannot run git in {cwd}: {exc}") from None

    async def git_checked(self, cwd: Path, *args: str, what: str, settings: Mapping[str, str] | None = None,
                          confine: Confine | None = None) -> str:
        rc, out, err = await self.git_result(cwd, *args, settings=settings, confine=confine)
        if rc != 0:
            raise WorktreeError(f"Could not {what}: {_first(err) or f'git exited {rc}'}")
        return out


def _unredirect(clone: Path) -> None:
    """A clone's `.git/` is its agent's to write, but a `commondir` file there would make git read its config and
    hooks from wherever the agent chose, on the user's next git command in it: removed."""
    with contextlib.suppress(FileNotFoundError):
        (clone / ".git" / "commondir").unlink()


def is_dir(path: str | os.PathLike[str]) -> bool:
    """A stat, in sync helpers: a local stat is too quick to be worth a thread."""
    return os.path.isdir(path)


def exists(path: str | os.PathLike[str]) -> bool:
    return os.path.lexists(path)


def real_path(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(path))


def _porcelain_paths(out: str) -> list[str]:
    """Paths of `git status --porcelain=v1 -z`; a rename's entry is followed by its old path."""
    entries, names = iter(out.split("\0")), []
    for entry in entries:
        if len(entry) > 3:
            names.append(entry[3:])
            if entry[0] in "RC":
                next(entries, None)
    return names


def _unique_path(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def _first(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _files(names: list[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
