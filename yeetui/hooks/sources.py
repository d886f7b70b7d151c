"""Where hooks come from: yeetui's own config (`hooks:` in config.yaml, Claude Code's shape) and — only for a
project the user trusted — the project's `.claude/settings.json` and `.claude/settings.local.json`.

The shape, as Claude Code has it::

    hooks:
      PreToolUse:
        - matcher: Bash            # names (`Edit|Write`) match exactly, else a regex searched for; "*": every tool
          hooks:
            - {type: command, command: "~/bin/guard.sh", timeout: 30}

Anything else is reported, naming the file and the key, and left out; the rest still loads.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from yeetui.hooks.shapes import CLAUDE_TOOL_NAMES, FORMER_CLAUDE_TOOL_NAMES
from yeetui.settings.pins import shell_command_pins

EVENTS = ("SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PermissionRequest",
          "Notification", "PreCompact", "SubagentStart", "SubagentStop", "Stop")
MATCHED = {"PreToolUse": "the tool's name", "PostToolUse": "the tool's name", "PermissionRequest": "the tool's name",
           "SessionStart": "how the session started (startup, resume, clear, compact)",
           "SessionEnd": "why the session ended (clear, prompt_input_exit, other)",
           "PreCompact": "what started the compaction (manual, auto)",
           "Notification": "the kind of notification (permission_prompt)",
           "SubagentStart": "the subagent's profile", "SubagentStop": "the subagent's profile"}
"""Events with a `matcher`, and what it is tested against (Claude Code's rule); the others run every group."""
_PLAIN_NAMES = re.compile(r"[A-Za-z0-9_\-]+(?:\|[A-Za-z0-9_\-]+)*")
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0


@dataclass(frozen=True)
class HookCommand:
    command: str
    timeout: float
    source: str
    """Where it was configured (for the reports of its failures)."""
    scope: Literal["user", "project"] = "user"
    """`user`: yeetui's own config, run as configured; `project`: a trusted project's settings file, run inside
    the writable agents' sandbox, and only while the files it names are those trusted (`pins`)."""
    pins: Mapping[str, str] = field(default_factory=dict)
    """A project's hook: the project files its command names and the executables it runs, as trusted."""
    env: tuple[str, ...] = ()
    """Provider key variables its config names (`env: [ANTHROPIC_API_KEY]`): passed to it; others never are."""
    cwd: str | None = None
    """The working directory its config names; None: outside the project (`yeetui.settings.pins.neutral_dir`)."""


@dataclass(frozen=True)
class HookGroup:
    matcher: re.Pattern[str] | None
    commands: tuple[HookCommand, ...]

    def matches(self, target: str | None) -> bool:
        """Claude Code's rule: a matcher of plain names (`Bash`, `Edit|Write`) compares each exactly; anything
        else is a regular expression searched for in the name (`^mcp__github`, `Edit$`, `Notebook.*`)."""
        if self.matcher is None:
            return True
        if target is None:
            return False
        if _PLAIN_NAMES.fullmatch(self.matcher.pattern):
            return target in self.matcher.pattern.split("|")
        return self.matcher.search(target) is not None


@dataclass
class HookSet:
    groups: dict[str, list[HookGroup]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def commands(self, event: str, target: str | None = None) -> list[HookCommand]:
        """The commands for `event` whose matcher takes `target` — a tool's yeetui name or Claude Code's
        (`bash` or `Bash`: matchers written for Claude Code match)."""
        names = ((target, CLAUDE_TOOL_NAMES.get(target, target), FORMER_CLAUDE_TOOL_NAMES.get(target, target))
                 if target is not None else (None,))
        return [c for g in self.groups.get(event, []) if any(g.matches(n) for n in names) for c in g.commands]

    def __bool__(self) -> bool:
        return any(self.groups.values())


def load_hooks(config_hooks: Mapping[str, Any] | None, *, project_dir: Path | None, trusted: bool,
               config_file: str = "config.yaml") -> HookSet:
    """The hooks of yeetui's config, then — if `trusted` — the project's Claude Code settings files."""
    hooks = HookSet()
    if config_hooks:
        _add(hooks, config_hooks, config_file)
    if project_dir is not None and trusted:
        project = HookSet()
        for name in ("settings.json", "settings.local.json"):
            path = project_dir / ".claude" / name
            if not path.is_file():
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                hooks.problems.append(f"{path}: not read ({exc}); its hooks are left out.")
                continue
            if isinstance(data, dict) and data.get("hooks") is not None:
                _add(project, data["hooks"], str(path))
        search = os.environ.get("PATH")
        for event, groups in project.groups.items():
            hooks.groups.setdefault(event, []).extend(
                HookGroup(group.matcher, tuple(
                    replace(c, scope="project", env=(), cwd=None,
                            pins=shell_command_pins(c.command, project_dir, path=search)) for c in group.commands))
                for group in groups)
        hooks.problems += project.problems
    return hooks


def _add(hooks: HookSet, config: object, where: str) -> None:
    if not isinstance(config, Mapping):
        hooks.problems.append(f"{where}: `hooks` must map event names to lists of hook groups.")
        return
    for event, groups in config.items():
        if event not in EVENTS:
            hooks.problems.append(f"{where}: hooks.{event}: not an event yeetui runs hooks on "
                                  f"({', '.join(EVENTS)}); left out.")
            continue
        if not isinstance(groups, list):
            hooks.problems.append(f"{where}: hooks.{event} must be a list of groups ({{matcher, hooks}}).")
            continue
        for n, group in enumerate(groups):
            if (parsed := _group(group, f"{where}: hooks.{event}[{n}]", event, hooks.problems)) is not None:
                hooks.groups.setdefault(event, []).append(parsed)


def _group(group: object, where: str, event: str, problems: list[str]) -> HookGroup | None:
    if not isinstance(group, Mapping) or not isinstance(group.get("hooks"), list):
        problems.append(f"{where}: a group is {{matcher: …, hooks: [{{type: command, command: …}}]}}; left out.")
        return None
    matcher = group.get("matcher")
    pattern: re.Pattern[str] | None = None
    if matcher not in (None, "", "*"):
        if not isinstance(matcher, str):
            problems.append(f"{where}.matcher must be text (a regular expression on {MATCHED.get(event, 'a name')});"
                            " left out.")
            return None
        try:
            pattern = re.compile(matcher)
        except re.error as exc:
            problems.append(f"{where}.matcher {matcher!r} is not a regular expression ({exc}); left out.")
            return None
        if event not in MATCHED:
            problems.append(f"{where}.matcher: {event} hooks have nothing to match; the matcher is ignored.")
            pattern = None
    commands = []
    for n, hook in enumerate(group["hooks"]):
        here = f"{where}.hooks[{n}]"
        if not isinstance(hook, Mapping) or hook.get("type", "command") != "command":
            problems.append(f"{here}: only `type: command` hooks run in yeetui; left out.")
            continue
        command = hook.get("command")
        if not isinstance(command, str) or not command.strip():
            problems.append(f"{here}: `command` must be a non-empty command line; left out.")
            continue
        timeout = hook.get("timeout", DEFAULT_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT:
            problems.append(f"{here}.timeout must be seconds between 0 and {MAX_TIMEOUT:g}; {DEFAULT_TIMEOUT:g} "
                            "is used.")
            timeout = DEFAULT_TIMEOUT
        passed = hook.get("env", [])
        if not isinstance(passed, list) or not all(isinstance(name, str) for name in passed):
            problems.append(f"{here}.env must be a list of variable names; none is passed.")
            passed = []
        cwd = hook.get("cwd")
        if cwd is not None and not (isinstance(cwd, str) and cwd.strip()):
            problems.append(f"{here}.cwd must be a folder; the hook starts outside the project.")
            cwd = None
        commands.append(HookCommand(command, float(timeout), here, env=tuple(passed),
                                    cwd=str(Path(cwd).expanduser()) if cwd else None))
    return HookGroup(pattern, tuple(commands)) if commands else None
