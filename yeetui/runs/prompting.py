"""The system prompt of a run: the profile's prompt, the workspace, project instructions, the stop rule."""

from __future__ import annotations

import datetime as dt
import os
import platform
import stat
from collections.abc import Sequence
from pathlib import Path

from yeetui.errors import PathEscapeError, ToolError
from yeetui.redact import redact
from yeetui.system.safepath import open_for_read
from yeetui.text import cap
from yeetui.workspace import WorkspaceBinding

CONTEXT_FILE_CAP = 40_000
"""Characters read from each AGENTS.md / CLAUDE.md; the rest is cut with a note."""


def read_context_files(cwd: Path, names: Sequence[str], secrets: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(name, text) of each project instruction file present in `cwd`, in the configured order.

    The names come from config, which a cloned repository may ship, and the files from the repository: each
    is opened with the same confined reader as the file tools (no `..`, no absolute path, no symlink out
    of the project), must be a regular file, is capped, and has known key values redacted.
    """
    binding = WorkspaceBinding(cwd=cwd, allow_writes=False)
    found = []
    for name in names:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            continue
        try:
            fd, _ = open_for_read(binding, name)
        except (PathEscapeError, ToolError, OSError):
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read(CONTEXT_FILE_CAP * 4 + 1)
        except OSError:
            continue
        finally:
            os.close(fd)
        text = data.decode("utf-8", errors="replace")
        if len(text) > CONTEXT_FILE_CAP:
            text = cap(text, CONTEXT_FILE_CAP)
        found.append((name, redact(text, secrets)))
    return found


def context_notes(project_dir: Path, names: Sequence[str]) -> list[str]:
    """The start-up note naming the project instruction files every agent reads (none: no note)."""
    found = [name for name, _ in read_context_files(project_dir, names)]
    if not found:
        return []
    return [f"Project instructions from {' and '.join(found)} are in every agent's context "
            "(config: context_files)."]


def exit_rule(exit_tools: Sequence[str], interactive: bool) -> str:
    if not exit_tools:
        return ""
    names = ", ".join(f"`{t}`" for t in exit_tools)
    if interactive:
        return (f"When the task is finished, call {names}. You may also simply answer the user when the "
                "conversation needs their reply.")
    return (f"You end your work only by calling one of these tools: {names}. A reply without one of them "
            "does not end the run: you will be asked to continue. Call `complete` with a concise summary of "
            "what you did and found once the task is done (status `partial` or `blocked` when it is not).")


def build_system_prompt(
    *,
    profile_prompt: str,
    cwd: Path,
    read_only: bool,
    exit_tools: Sequence[str],
    interactive: bool = False,
    context_files: Sequence[tuple[str, str]] = (),
    workflow_instructions: str = "",
    today: dt.date | None = None,
) -> str:
    today = today or dt.date.today()
    sections = [profile_prompt.strip()]
    env_lines = [
        f"Working directory: {cwd}",
        f"Platform: {platform.system()} {platform.release()}",
        f"Today's date: {today.isoformat()}",
        "Workspace: read-only — you cannot write or edit files." if read_only else "Workspace: writable.",
    ]
    sections.append("# Environment\n" + "\n".join(env_lines))
    for name, text in context_files:
        sections.append(f"# Project instructions from {name}\n{text.strip()}")
    if workflow_instructions:
        sections.append("# Workflow\n" + workflow_instructions.strip())
    if rule := exit_rule(exit_tools, interactive):
        sections.append("# How to finish\n" + rule)
    return "\n\n".join(s for s in sections if s)


NUDGE = ("You stopped without calling {tools}. Your run only ends through one of those tools. Continue the "
         "task; if it is done, call `complete` with a summary; if you need the user, call `ask_user`.")
