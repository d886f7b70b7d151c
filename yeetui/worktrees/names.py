"""Names for what `Worktrees` creates: branch slugs and directories.

A slug comes from text a model or a user wrote (a task, a label), so it is reduced to `[a-z0-9-]` and
never starts with `-` — git could otherwise read a branch name as an option, and a path could climb out of
the worktrees directory.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

from yeetui import paths
from yeetui.definitions.profiles import OWNED_BRANCH_FOLDER

SLUG_MAX = 40
_PREFIX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")


def slug(text: str, *, limit: int = SLUG_MAX) -> str:
    """`Add mul() with a test!` → `add-mul-with-a-test`; `work` when nothing usable is left. Longer than `limit`,
    it is cut after the last whole word that fits (a single word longer than that is cut inside)."""
    words = re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-")
    if len(words) <= limit:
        return words or "work"
    cut = words[:limit + 1]  # a word ending exactly at the limit is whole
    whole = cut[:cut.rfind("-")] if "-" in cut else ""
    return whole or words[:limit]


def branch_prefix(prefix: str) -> str:
    """A profile's `branch_prefix`, checked: git's rules, no `..`, and a folder under `yeetui/` (a builder's
    bash may write the refs of its branch's folder: never `refs/heads/` itself, never the user's branches)."""
    if not prefix.startswith(OWNED_BRANCH_FOLDER) or not prefix.endswith("/"):
        raise ValueError(f"branch_prefix {prefix!r} must name a folder yeetui owns: start with "
                         f"{OWNED_BRANCH_FOLDER!r} and end with '/', like 'yeetui/build/'.")
    if not _PREFIX.match(prefix) or ".." in prefix or "//" in prefix or "/." in prefix or ".lock/" in prefix:
        raise ValueError(f"branch_prefix {prefix!r} is not usable in a git branch name; use letters, digits, "
                         "'.', '_', '-' and '/', like 'yeetui/build/'.")
    return prefix


def repo_dir_name(repo: Path) -> str:
    """`<name>-<hash>` of a repository path: one folder per repository under the worktrees dir."""
    digest = hashlib.sha256(str(repo).encode()).hexdigest()[:8]
    name = re.sub(r"[^a-z0-9]+", "-", repo.name.casefold()).strip("-")[:24].rstrip("-")  # as first made: stable
    return f"{name or 'work'}-{digest}"


def worktrees_root(env: Mapping[str, str] | None = None) -> Path:
    """Where yeetui puts worktrees and clones: under the data dir, never the system temp dir."""
    return paths.data_dir(env) / "worktrees"
