"""Class 1 and 2: permission rules for `bash` read what bash will run, not the text the model wrote.

Every attack is a `bash` call a model makes in a headless run without `--yes` (so `ask` means refused):
hidden lines, substitutions, quoting and path tricks against deny rules, and options that turn an allowed
read-only command into a write, an exec or a read of host files. None may run; what the rules allow still
runs unasked.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.events import PermissionRequested
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runtime import Runtime

MARK = "PWNED"
"""Every attack tries to create this file in the project; it must never appear."""

ALLOWED_BY_DEFAULT_BUT_HOSTILE = [
    f"git diff #'\ntouch {MARK}\n#'",  # a comment with a quote hides the middle line from a naive splitter
    f"git status\ntouch {MARK}",
    f"git log $(touch {MARK})",
    f"git diff `touch {MARK}`",
    f"git status; touch {MARK}",
    f"git status & touch {MARK}",
    f"ls && touch {MARK}",
    f"git status > {MARK}",
    f"git diff --output={MARK}",
    f"git log -p --output={MARK}",
    f"git show --output={MARK} HEAD",
    f"git difftool -y -x 'touch {MARK}' HEAD~1 HEAD",
    f"git -c core.pager='touch {MARK}' log",
    f"git -c diff.external='touch {MARK}' diff HEAD~1",
    f"GIT_EXTERNAL_DIFF='touch {MARK}' git diff HEAD~1",
    "./git status",  # a script in the project named like an allowed command
    f"git status -- $(touch {MARK})",
    f"ls; bash -c 'touch {MARK}'",
    "git diff HEAD~1 --ext-diff",
    f"git log --format=%H ; touch {MARK}",
]


DENIER = """\
---
description: Runs anything except rm.
capabilities: [primary, subtask]
permissions:
  bash: {"*": allow, "rm *": deny}
exit_tools: [complete]
---
You do what you are told.
"""


@pytest.fixture
def project_dir(project_dir: Path) -> Path:
    """A git repository with two commits, a diff driver that would touch the mark, and a `./git` script."""
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=project_dir, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@e.st")
    git("config", "user.name", "T")
    (project_dir / "a.txt").write_text("one\n")
    git("add", ".")
    git("commit", "-qm", "one")
    (project_dir / "a.txt").write_text("two\n")
    git("commit", "-qam", "two")
    script = project_dir / "git"
    script.write_text(f"#!/bin/sh\ntouch {MARK}\n")
    script.chmod(0o755)
    # The user's own profile that allows every command but rm (written before the runtime loads profiles).
    agents = Path(os.environ["YEETUI_CONFIG_DIR"]) / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "denier.md").write_text(DENIER, encoding="utf-8")
    return project_dir


async def _attack(runtime: Runtime, scripted, command: str, profile: str | None = None) -> list[str]:
    """Run one headless turn in which the model calls bash with `command`; the permission questions asked."""
    asked: list[str] = []
    answer_permissions_headless(runtime.bus, approve=False)
    runtime.bus.add_listener(lambda e: asked.append(e.subject) if isinstance(e, PermissionRequested) else None)
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": command})], when_contains="ATTACK"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    result = await runtime.launcher.run_prompt("ATTACK", profile_name=profile)
    assert result.status.value == "completed", result
    return asked


@pytest.mark.parametrize("command", ALLOWED_BY_DEFAULT_BUT_HOSTILE)
async def test_default_rules_never_run_a_hostile_command_unasked(runtime: Runtime, scripted, project_dir: Path,
                                                                 command: str) -> None:
    asked = await _attack(runtime, scripted, command)
    assert not (project_dir / MARK).exists(), f"ran without asking: {command!r}"
    assert asked == [command], "refused headless only after asking (an `ask`), never allowed by a rule"


@pytest.mark.parametrize("command", ["git status", "git diff --stat HEAD~1", "git log --oneline -2",
                                     "git status -sb && git log -n 1 --format=%s", "ls -la >/dev/null 2>&1",
                                     "git show --stat HEAD", "git diff HEAD~1 -- a.txt"])
async def test_what_the_default_rules_allow_still_runs_unasked(runtime: Runtime, scripted, command: str) -> None:
    assert await _attack(runtime, scripted, command) == []




@pytest.mark.parametrize("command", ["r''m -f victim", "\\rm -f victim", "command rm -f victim",
                                     "/bin/rm -f victim", "env X=1 rm -f victim", "nice -n 5 rm -f victim",
                                     "timeout 5 rm -f victim", "bash -c 'rm -f victim'", "eval rm -f victim",
                                     "echo hi && r\"m\" -f victim", "ls\nrm -f victim",
                                     "cat <<EOF\nhi\nEOF\nrm -f victim"])
async def test_a_deny_rule_is_not_dodged_by_quoting_paths_or_wrappers(runtime: Runtime, scripted,
                                                                     project_dir: Path, command: str) -> None:
    victim = project_dir / "victim"
    victim.write_text("keep me")
    await _attack(runtime, scripted, command, profile="denier")
    assert victim.exists(), f"deny rule dodged by {command!r}"
