"""Which repositories the user trusts: until then, files that arrive with a repository may narrow an agent's
rights but never widen them.

A repository's `.yeetui/config.yaml`, `.yeetui/agents/`, `.claude/agents/` and `.opencode/agent(s)/` come
with whatever the user cloned. Until the user trusts the project (`yeetui trust`, remembered in the user's
data dir), allow rules in those files are dropped (ask and deny stay), a profile they name cannot be made
writable when the user's own and built-in files keep it read-only, and the dropped items are listed as
warnings, so the user sees what trusting would grant.

Trust is pinned to what the user trusted: the record holds, per project (its real path), a digest of each of
those files — and of every project file its hooks' commands name, and the executables they run
(`pins`) — and the project counts as trusted only while they are unchanged. A file an agent writes, changes
or deletes there afterwards makes the project untrusted again until the user says so again; `trust_state`
names the files that changed. A record from before pinning (the path alone) counts as untrusted, with a note.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from yeetui import paths
from yeetui.settings.pins import shell_command_pins
from yeetui.yamlfile import MAX_FILE_BYTES

TRUSTED_FILES = (".yeetui/config.yaml", ".yeetui/agents", ".claude/agents", ".opencode/agents", ".opencode/agent",
                 ".claude/settings.json", ".claude/settings.local.json")
"""What trusting a project lets widen rights, relative to its root: the project config (`yeetui.settings.config`), the
agent files (`definitions.profile_loader`), folders read at any depth, and Claude Code's settings files (their hooks
are commands: `yeetui.hooks`). Slash commands and workflows are not
here: trust changes nothing about them (a command is only a prompt)."""

MAX_LISTED = 10
"""Changed files named in a note; the rest are counted."""


@dataclass(frozen=True)
class TrustState:
    """Whether the project is trusted now, and what the user should be told about it."""

    trusted: bool
    files: Mapping[str, str]
    """The trusted files as they are now: relative path → digest (see `project_files`)."""
    changed: tuple[str, ...] = ()
    """`.yeetui/agents/x.md (added)`, … — how the files differ from what the user trusted."""
    note: str = ""
    """One sentence for the start-up notice and `yeetui trust`; empty when there is nothing to say."""


def project_files(project_dir: Path) -> dict[str, str]:
    """Every file of `TRUSTED_FILES` in the project: its path relative to the project (`/`-separated) → the
    SHA-256 of its first `MAX_FILE_BYTES + 1` bytes and its size (past that the loaders refuse a file unread).

    Read as the loaders read: hidden files and folders are skipped, symlinked folders are not entered, a
    symlinked file inside the project counts with its target's content. A symlink out of the project is not
    followed (the loaders refuse it): it counts as `link:<target>`, so adding or retargeting one still
    changes the digest."""
    root = Path(project_dir).resolve()
    found: dict[str, str] = {}
    for command in hook_commands(root):
        found.update(shell_command_pins(command, root, path=os.environ.get("PATH")))
    for name in TRUSTED_FILES:
        top = root / name
        if name.endswith((".yaml", ".json")):
            if top.is_symlink() or top.exists():
                _add(top, root, found)
            continue
        for folder, folders, files in os.walk(top):  # nothing when it is no folder
            folders[:] = [f for f in folders if not f.startswith(".")]
            for file in files:
                if not file.startswith("."):
                    _add(Path(folder) / file, root, found)
    return found


def hook_commands(project_dir: Path) -> list[str]:
    """The command lines of the hooks in the project's Claude Code settings files (`.claude/settings.json`,
    `.claude/settings.local.json`), in order; a file that does not read as JSON holds none."""
    commands: list[str] = []
    for name in ("settings.json", "settings.local.json"):
        path = Path(project_dir) / ".claude" / name
        try:
            data = json.loads(path.read_bytes()[:MAX_FILE_BYTES + 1]) if path.is_file() else None
        except (OSError, ValueError):
            continue
        hooks = data.get("hooks") if isinstance(data, dict) else None
        for groups in hooks.values() if isinstance(hooks, dict) else ():
            for group in groups if isinstance(groups, list) else ():
                entries = group.get("hooks") if isinstance(group, dict) else None
                for entry in entries if isinstance(entries, list) else ():
                    if isinstance(entry, dict) and isinstance(entry.get("command"), str):
                        commands.append(entry["command"])
    return commands


def _add(path: Path, root: Path, found: dict[str, str]) -> None:
    relative = path.relative_to(root).as_posix()
    try:
        real = path.resolve()
        if not real.is_relative_to(root):
            found[relative] = f"link:{os.readlink(path) if path.is_symlink() else real}"
            return
        if not real.is_file():
            return  # a dangling link, a socket: nothing any loader reads
        digest = hashlib.sha256()
        with real.open("rb") as handle:
            digest.update(handle.read(MAX_FILE_BYTES + 1))
        found[relative] = f"sha256:{digest.hexdigest()}:{real.stat().st_size}"
    except OSError as exc:  # unreadable now: that is a state of its own, and it differs from the trusted one
        found[relative] = f"unreadable:{exc.strerror or exc}"


def fingerprint(files: Mapping[str, str]) -> str:
    """One digest over the sorted relative paths and their digests."""
    digest = hashlib.sha256()
    for relative in sorted(files):
        digest.update(f"{relative}\0{files[relative]}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _trust_file(env: Mapping[str, str] | None = None) -> Path:
    return paths.data_dir(env) / "trusted-projects.json"


def _records(env: Mapping[str, str] | None) -> tuple[dict[str, Any], list[str]]:
    """The pinned records (project path → record) and the projects of the old format (paths only). A missing
    or unreadable file is no trust at all."""
    try:
        data = json.loads(_trust_file(env).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, []
    if not isinstance(data, dict):
        return {}, []
    pinned = data.get("pinned")
    legacy = data.get("projects")
    return (pinned if isinstance(pinned, dict) else {},
            [p for p in legacy if isinstance(p, str)] if isinstance(legacy, list) else [])


def trusted_projects(env: Mapping[str, str] | None = None) -> list[str]:
    """The projects the user has trusted (whether their files still match is `trust_state`'s question)."""
    return sorted(_records(env)[0])


def trust_state(project_dir: Path, env: Mapping[str, str] | None = None) -> TrustState:
    """Whether the user trusts the project at `project_dir` with its files as they are now."""
    project = str(Path(project_dir).resolve())
    pinned, legacy = _records(env)
    record = pinned.get(project)
    if record is None:
        if project in legacy:
            return TrustState(False, {}, note=(
                f"{project} was trusted before yeetui pinned trust to the content of the project's config and "
                "agent files; until you trust it again (`yeetui trust`), they may narrow rights but not widen them."))
        return TrustState(False, {})
    files = project_files(Path(project))
    trusted_files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(trusted_files, dict) or not isinstance(record.get("digest"), str):
        return TrustState(False, files, note=(
            f"The trust record of {project} in {_trust_file(env)} is not readable; until you trust the project "
            "again (`yeetui trust`), its config and agent files may narrow rights but not widen them."))
    if fingerprint(files) == record["digest"]:
        return TrustState(True, files)
    changed = _changes(trusted_files, files)
    listed = ", ".join(changed[:MAX_LISTED]) + (f" and {len(changed) - MAX_LISTED} more"
                                                if len(changed) > MAX_LISTED else "")
    return TrustState(False, files, tuple(changed), note=(
        f"The config, agent and hook files of {project} changed since you trusted it "
        f"({listed or 'the record differs'}); "
        "until you trust it again (`yeetui trust`), they may narrow rights but not widen them."))


def _changes(before: Mapping[str, Any], now: Mapping[str, str]) -> list[str]:
    return ([f"{p} (added)" for p in sorted(now.keys() - before.keys())]
            + [f"{p} (changed)" for p in sorted(now.keys() & before.keys()) if now[p] != before[p]]
            + [f"{p} (removed)" for p in sorted(before.keys() - now.keys())])


def is_trusted(project_dir: Path, env: Mapping[str, str] | None = None) -> bool:
    return trust_state(project_dir, env).trusted


def set_trusted(project_dir: Path, trusted: bool = True, env: Mapping[str, str] | None = None, *,
                files: Mapping[str, str] | None = None) -> None:
    """Remember that the user trusts the project at `project_dir` with its files as they are now — or as
    `files` (from `project_files`) says they were when the user was shown what trusting grants, so a change
    in between is not trusted unseen — or forget it (`trusted=False`)."""
    project = str(Path(project_dir).resolve())
    pinned, legacy = _records(env)
    pinned.pop(project, None)
    if trusted:
        pinned_files = dict(project_files(Path(project)) if files is None else files)
        pinned[project] = {"digest": fingerprint(pinned_files), "files": pinned_files,
                           "trusted_at": datetime.now(UTC).isoformat(timespec="seconds")}
    data: dict[str, Any] = {"version": 2, "pinned": dict(sorted(pinned.items()))}
    rest = sorted(p for p in legacy if p != project)
    if rest:
        data["projects"] = rest  # old records of other projects: still untrusted-with-a-note until re-trusted
    paths.replace_private(_trust_file(env), json.dumps(data, indent=1) + "\n")


def untrusted_hooks_note(project: Path) -> str | None:
    """The start-up notice for a project whose hooks are off because it is not trusted; None when it has none."""
    commands = hook_commands(project)
    if not commands:
        return None
    return (f"The project's .claude/settings.json files define {len(commands)} hook"
            f"{'s' if len(commands) != 1 else ''}; they do not run, as the project is not trusted (`yeetui trust` "
            "lists what trusting it grants).")
