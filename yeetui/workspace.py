"""WorkspaceBinding: where a session's tools may read and write.

Enforced by the tool layer (`yeetui.tools.*` via `yeetui.system.safepath`), never by the prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

WorkspaceMode = Literal["shared", "sandbox", "worktree", "clone", "custom"]
BashSandbox = Literal["auto", "required", "unshielded", "off"]

PROTECTED_NAMES = (".git", ".yeetui", ".claude", ".opencode")
"""Directories never written by tools anywhere in a workspace: git's own, and every place agent profiles and
config are read from (an agent that could write them could raise its own rights on the next run)."""


CLONE_GIT_SHIELDED = ("config", "hooks", "info")
"""In a clone's own `.git/`: the config (fsmonitor, filters, aliases …), the hooks and the attributes and
excludes under `info/` stay read-only to its agent's bash."""


@dataclass(frozen=True)
class WorkspaceBinding:
    cwd: Path
    roots: tuple[Path, ...] = ()
    """Directories tools may touch. Empty means (cwd,)."""
    mode: WorkspaceMode = "shared"
    allow_writes: bool = True
    protected: tuple[Path, ...] = field(default_factory=tuple)
    """Extra absolute directories never writable (the user config dir, the data dir)."""
    bash_sandbox: BashSandbox = "auto"
    """Read-only bindings: `auto`/`required` run bash under an OS sandbox when one exists; `required`
    refuses bash when none exists; `off` refuses bash outright in read-only bindings. Writable bindings: bash
    runs in a sandbox whose only writable places are the roots and `git_writable`, with the shielded folders
    read-only — bubblewrap; where only the Landlock fallback (which cannot shield them) or nothing works, bash
    is refused unless the user's own config says `unshielded`; `off` runs it unconfined."""
    git_writable: tuple[Path, ...] = ()
    """For a worktree: the places in the main repository's git dir its git must write (its own admin dir,
    the object store, its branch's ref and log folders). Only bash's sandbox opens them; file tools never."""
    git_readable: tuple[Path, ...] = ()
    """For a worktree: the main repository's git dir, which its `.git` file points into."""
    network: bool = False
    """bash in a writable sandbox may use the network."""

    def __post_init__(self) -> None:
        cwd = Path(self.cwd).resolve()
        object.__setattr__(self, "cwd", cwd)
        roots = tuple(Path(r).resolve() for r in self.roots) or (cwd,)
        object.__setattr__(self, "roots", roots)
        object.__setattr__(self, "protected", tuple(Path(p).resolve() for p in self.protected))
        object.__setattr__(self, "git_writable", tuple(Path(p).resolve() for p in self.git_writable))
        object.__setattr__(self, "git_readable", tuple(Path(p).resolve() for p in self.git_readable))

    def shielded(self) -> tuple[Path, ...]:
        """What bash must not write even inside the roots: git's own files and every place agent profiles and
        config are read from (`PROTECTED_NAMES` at the top of each root, whether they exist or not), plus the
        protected dirs that fall inside a root. A clone's git folder is the agent's own (it commits there): only
        what would run code on a later git command in it — its config, hooks and info — stays read-only."""
        inside = tuple(p for p in self.protected if any(r in p.parents for r in self.roots))
        names = [name for name in PROTECTED_NAMES if not (self.mode == "clone" and name == ".git")]
        own_git = CLONE_GIT_SHIELDED if self.mode == "clone" else ()
        return (tuple(root / name for root in self.roots for name in names)
                + tuple(root / ".git" / part for root in self.roots for part in own_git) + inside)
