"""Permission rules (in `config.yaml` and profiles): per tool (name or glob) an action, or a map of subject
globs to actions.

```yaml
permissions:
  "*": allow
  bash: {"*": ask, "git status*": allow, "rm -rf *": deny}
  write_file: {"*.md": allow, "*": ask}
```

Tool keys: the exact name beats globs, globs beat `"*"` (among globs, the one with more literal
characters, then the later one). A key whose subject map matches nothing defers to the next key. Inside a
subject map the *last* matching pattern wins. With no rule at all: `ask` for writing tools and bash,
`allow` for the rest.

Bash commands are read with a bash grammar into the argv of each simple command (`yeetui.system.shell_syntax`)
and every one must be allowed, so `git status*: allow` does not allow `git status && curl … | sh`. Patterns
match each command's argv joined back with shell quoting, so `r''m -rf x` is `rm -rf x` to a rule. A line that
is not fully understood (comments, newlines, variables, substitutions, globs, heredocs, redirection to a
file …) is never allowed by a pattern — only by `"*": allow` when no deny rule exists — and becomes `ask`.
Deny rules also look through wrappers and paths (`command rm`, `/bin/rm`, `env X=1 rm`), and with a deny rule
in place a command that runs code from an argument (`bash -c`, `eval`, `xargs`) is asked about. A command a
specific pattern allows must also pass `yeetui.runs.command_guard` (no `git diff --output=…`).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal, TypeAlias, get_args

from yeetui.bus import Bus
from yeetui.errors import ConfigError
from yeetui.events import PermissionRequested
from yeetui.runs.command_guard import auto_allow_refusal
from yeetui.system.shell_syntax import simple_commands

Action = Literal["allow", "ask", "deny"]
Rule: TypeAlias = "Action | dict[str, Action]"
ACTIONS: tuple[str, ...] = get_args(Action)
_ACTION_NAMES: dict[str, Action] = {"allow": "allow", "ask": "ask", "deny": "deny"}
ASK_BY_DEFAULT = frozenset({"bash"})
"""Tools treated like writing tools when no rule matches."""
_GLOB_CHARS = frozenset("*?[")


def _is_glob(text: str) -> bool:
    return any(c in _GLOB_CHARS for c in text)


def literal_pattern(text: str) -> str:
    """A glob that matches exactly `text` (wildcard characters wrapped in brackets)."""
    return "".join(f"[{c}]" if c in _GLOB_CHARS else c for c in text)


@dataclass
class Permissions:
    rules: dict[str, Rule] = field(default_factory=dict)

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any] | None, *, source: str = "permissions") -> Permissions:
        """Validate a config mapping; raise ConfigError naming the key for anything invalid."""
        if mapping is None:
            return cls()
        if not isinstance(mapping, Mapping):
            raise ConfigError(f"{source}: expected a mapping of tool names to actions, got "
                              f"{type(mapping).__name__}.")
        rules: dict[str, Rule] = {}
        for tool, value in mapping.items():
            if not isinstance(tool, str) or not tool:
                raise ConfigError(f"{source}: tool keys must be non-empty strings, got {tool!r}.")
            if isinstance(value, Mapping):
                subjects: dict[str, Action] = {}
                for pattern, action in value.items():
                    if not isinstance(pattern, str):
                        raise ConfigError(f"{source}: {tool!r} has a non-string pattern {pattern!r}.")
                    subjects[pattern] = _action(action, f"{source}: {tool!r} → {pattern!r}")
                rules[tool] = subjects
            else:
                rules[tool] = _action(value, f"{source}: {tool!r}")
        return cls(rules)

    @staticmethod
    def merge(base: Permissions, override: Permissions) -> Permissions:
        """Layer `override` on `base`: each tool key present in override replaces base's rule for it."""
        merged: dict[str, Rule] = {k: v if isinstance(v, str) else dict(v) for k, v in base.rules.items()}
        for key, value in override.rules.items():
            merged[key] = value if isinstance(value, str) else dict(value)
        return Permissions(merged)

    def decide(self, tool_name: str, subject: str, writes: bool = False, *, cwd: Path | None = None,
               roots: Sequence[Path] = ()) -> Action:
        """The action for one call. For bash, `cwd` and `roots` say where a command runs: a pattern allows
        nothing whose path arguments lie outside `roots` (`yeetui.runs.command_guard`)."""
        return self._decision(tool_name, subject, writes, cwd=cwd, roots=roots)[0]

    def reason(self, tool_name: str, subject: str, writes: bool = False, *, cwd: Path | None = None,
               roots: Sequence[Path] = ()) -> str:
        """Which rule decides this call, in words: `the permission rule for "bash"`, or the default."""
        action, key = self._decision(tool_name, subject, writes, cwd=cwd, roots=roots)
        if key is not None:
            return f"the permission rule for {key!r} says {action}"
        return f"no permission rule covers it, and {tool_name} asks by default" if action == "ask" else \
            f"no permission rule covers it ({action} by default)"

    def _decision(self, tool_name: str, subject: str, writes: bool, *, cwd: Path | None,
                  roots: Sequence[Path]) -> tuple[Action, str | None]:
        """The action and the tool key whose rule gave it (None: the default)."""
        for key in self._keys_for(tool_name):
            rule = self.rules[key]
            if isinstance(rule, str):
                return rule, key
            action = (_decide_bash(rule, subject, (cwd, tuple(roots))) if tool_name == "bash"
                      else _last_match(rule, subject)[0])
            if action is not None:
                return action, key
        return ("ask" if writes or tool_name in ASK_BY_DEFAULT else "allow"), None

    def remember_always(self, tool_name: str, subject: str) -> None:
        """Record an "allow always" answer in these rules: this exact subject is allowed from now on. (The
        session keeps it too — `Store.remember_permission` — and its later runs start with `remember_all`.)"""
        rule = self.rules.get(tool_name)
        pattern = literal_pattern(subject)
        if rule is None:
            self.rules[tool_name] = {pattern: "allow"}
        elif isinstance(rule, str):
            self.rules[tool_name] = {"*": rule, pattern: "allow"}
        else:
            rule.pop(pattern, None)
            rule[pattern] = "allow"  # last, so it wins

    def remember_all(self, remembered: Iterable[tuple[str, str]]) -> None:
        """Apply a session's earlier "Always" answers, (tool, subject) pairs. A subject the rules now deny
        (a deny rule added since) stays denied: a remembered answer never outranks a deny rule."""
        for tool_name, subject in remembered:
            if self.decide(tool_name, subject) != "deny":
                self.remember_always(tool_name, subject)

    def _keys_for(self, tool_name: str) -> Iterator[str]:
        if tool_name in self.rules:
            yield tool_name
        globs = [(i, k) for i, k in enumerate(self.rules)
                 if k != "*" and k != tool_name and _is_glob(k) and fnmatchcase(tool_name, k)]
        globs.sort(key=lambda ik: (sum(c not in _GLOB_CHARS for c in ik[1]), ik[0]), reverse=True)
        yield from (k for _, k in globs)
        if "*" in self.rules and tool_name != "*":
            yield "*"


def _action(value: Any, where: str) -> Action:
    action = _ACTION_NAMES.get(value) if isinstance(value, str) else None
    if action is None:
        raise ConfigError(f"{where} has invalid action {value!r}; use one of allow, ask or deny.")
    return action


def _last_match(rule: Mapping[str, Action], subject: str) -> tuple[Action | None, str | None]:
    found: tuple[Action | None, str | None] = (None, None)
    for pattern, action in rule.items():
        if fnmatchcase(subject, pattern):
            found = (action, pattern)
    return found


Where: TypeAlias = "tuple[Path | None, tuple[Path, ...]]"


def _decide_bash(rule: Mapping[str, Action], command: str, where: Where = (None, ())) -> Action | None:
    """A bash command against a subject map: every simple command in it is decided on its argv."""
    whole, pattern = _last_match(rule, command)
    if whole is not None and pattern != "*" and pattern in (command, literal_pattern(command)) \
            and not _hides_lines(command):
        return whole  # a rule for exactly this command (e.g. remembered "allow always")
    commands = simple_commands(command)
    denies = [p for p, action in rule.items() if action == "deny"]
    if commands is None:  # not fully understood: never allowed by a pattern, and no deny rule is dodged
        if whole == "deny" or any(_denied(p, _words(command)) for p in denies):
            return "deny"
        if whole == "allow" and pattern == "*" and not denies:
            return "allow"  # the user allows every command
        return "ask"
    decisions = [_decide_argv(rule, argv, denies, where) for argv in commands]
    if "deny" in decisions:
        return "deny"
    if None in decisions:
        return None
    return "ask" if "ask" in decisions else "allow"


def _decide_argv(rule: Mapping[str, Action], argv: list[str], denies: list[str], where: Where) -> Action | None:
    text = shlex.join(argv)
    if any(_denied(p, form) for p in denies for form in _deny_forms(argv)):
        return "deny"
    if denies and _opaque(argv):
        return "ask"  # `bash -c '…'`, `eval …`, `xargs rm`: what runs is inside an argument
    action, pattern = _last_match(rule, text)
    if action == "allow" and pattern != "*" and auto_allow_refusal(argv, *where) is not None:
        return "ask"
    return action


_WRAPPERS = frozenset({"command", "builtin", "exec", "nohup", "time", "nice", "env", "sudo", "doas", "stdbuf",
                       "timeout", "setsid", "ionice", "chrt", "taskset", "unbuffer", "busybox", "noglob"})
"""Commands that run their arguments as another command: a deny rule looks through them."""
_OPAQUE = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish", "eval", "source", ".", "xargs", "find",
                     "parallel", "watch", "script", "su", "python", "python3", "perl", "ruby", "node"})
"""Commands that run a command written inside an argument, out of a deny rule's sight."""


def _deny_forms(argv: list[str]) -> list[str]:
    """The command as written, then with its program's bare name, then likewise for what each wrapper in
    front runs: `command /bin/rm -rf x` is also `rm -rf x` to a deny rule."""
    forms = [shlex.join(argv)]
    rest = list(argv)
    while rest:
        bare = [rest[0].rsplit("/", 1)[-1], *rest[1:]]
        forms.append(shlex.join(bare))
        if bare[0] not in _WRAPPERS:
            break
        rest = bare[1:]
        while rest and _wrapper_argument(rest[0]):
            rest = rest[1:]
    return forms


def _wrapper_argument(word: str) -> bool:
    """An option, an assignment (`env X=1`) or a number/duration (`nice -n 5`, `timeout 10s`) of a wrapper."""
    return word.startswith("-") or "=" in word or word.rstrip("smhd").replace(".", "", 1).isdigit()


def _opaque(argv: list[str]) -> bool:
    program = shlex.split(_deny_forms(argv)[-1])[0]
    return program in _OPAQUE


def _denied(pattern: str, form: str) -> bool:
    return fnmatchcase(form, pattern)


def _words(command: str) -> str:
    """A rough reading of a line the parser could not: quotes and backslashes dropped, blanks squeezed —
    enough for a deny rule to recognise `r''m -rf /` in a line that also holds a heredoc."""
    return " ".join(command.replace("'", "").replace('"', "").replace("\\", "").split())


def _hides_lines(command: str) -> bool:
    return any(c in command for c in "\n\r\0")


def answer_permissions_headless(bus: Bus, *, approve: bool) -> list[PermissionRequested]:
    """Headless runs have nobody to ask: answer every `ask` on `bus` as refused unattended (or allow, with
    --yes). Returns the list the refused requests are added to, so the command can say what was refused."""
    refused: list[PermissionRequested] = []

    def answer(event: object) -> None:
        if isinstance(event, PermissionRequested) and not event.reply.done():
            event.reply.set_result("allow_once" if approve else "unattended")
            if not approve:
                refused.append(event)

    bus.add_listener(answer)
    return refused
