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

Bash commands are split at `;`, `&&`, `||`, `|`, `&` and newlines and every part must be allowed, so
`git status*: allow` does not allow `git status && curl … | sh`. A command that cannot be split safely
(command substitution, process substitution, redirection to a file) is never allowed by a specific
pattern, only by `"*"` or by a pattern that is exactly that command; such cases become `ask`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Literal, TypeAlias, get_args

from yeetui.bus import Bus
from yeetui.errors import ConfigError
from yeetui.events import PermissionRequested

Action = Literal["allow", "ask", "deny"]
Rule: TypeAlias = "Action | dict[str, Action]"
ACTIONS: tuple[str, ...] = get_args(Action)
ASK_BY_DEFAULT = frozenset({"bash"})
"""Tools treated like writing tools when no rule matches."""
_GLOB_CHARS = frozenset("*?[")
_OPERATORS = frozenset(";|&\n")


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

    def decide(self, tool_name: str, subject: str, writes: bool = False) -> Action:
        for key in self._keys_for(tool_name):
            rule = self.rules[key]
            if isinstance(rule, str):
                return rule
            action = _decide_bash(rule, subject) if tool_name == "bash" else _last_match(rule, subject)[0]
            if action is not None:
                return action
        return "ask" if writes or tool_name in ASK_BY_DEFAULT else "allow"

    def remember_always(self, tool_name: str, subject: str) -> None:
        """Record an "allow always" answer (in memory): this exact subject is allowed from now on."""
        rule = self.rules.get(tool_name)
        pattern = literal_pattern(subject)
        if rule is None:
            self.rules[tool_name] = {pattern: "allow"}
        elif isinstance(rule, str):
            self.rules[tool_name] = {"*": rule, pattern: "allow"}
        else:
            rule.pop(pattern, None)
            rule[pattern] = "allow"  # last, so it wins

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
    if value not in ACTIONS:
        raise ConfigError(f"{where} has invalid action {value!r}; use one of allow, ask or deny.")
    return value  # type: ignore[no-any-return]


def _last_match(rule: Mapping[str, Action], subject: str) -> tuple[Action | None, str | None]:
    found: tuple[Action | None, str | None] = (None, None)
    for pattern, action in rule.items():
        if fnmatchcase(subject, pattern):
            found = (action, pattern)
    return found


def _decide_bash(rule: Mapping[str, Action], command: str) -> Action | None:
    whole, pattern = _last_match(rule, command)
    if whole is not None and pattern in (command, literal_pattern(command)):
        return whole  # a rule for exactly this command (e.g. remembered "allow always")
    parts = split_commands(command)
    if parts is None:
        if whole == "allow" and pattern != "*":
            return "ask"
        return whole
    decisions = [_last_match(rule, part)[0] for part in parts] or [whole]
    if "deny" in decisions or whole == "deny":
        return "deny"
    if None in decisions:
        return None
    return "ask" if "ask" in decisions else "allow"


def split_commands(command: str) -> list[str] | None:
    """Split a bash command line into simple commands, or None when that cannot be done safely."""
    parts: list[str] = []
    buf: list[str] = []
    quote = ""
    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            buf.append(command[i:i + 2])
            i += 2
            continue
        elif c == "`" or command.startswith("$(", i) or (not quote and command.startswith(("<(", ">("), i)):
            return None
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c == ">" or command.startswith("&>", i):
            end = _redirect_end(command, i)
            if end is None:
                return None
            buf.append(command[i:end])
            i = end
            continue
        elif c in _OPERATORS:
            parts.append("".join(buf))
            buf = []
            while i < n and command[i] in _OPERATORS:
                i += 1
            continue
        buf.append(c)
        i += 1
    if quote:
        return None
    parts.append("".join(buf))
    return [p.strip() for p in parts if p.strip()]


def _redirect_end(command: str, i: int) -> int | None:
    """End of a harmless redirection at `i` (`>&2`, `2>&1`, `>/dev/null`), else None."""
    j = i + 2 if command.startswith("&>", i) else i + 1
    if command.startswith(">", j):
        j += 1
    if command.startswith("&", j) and not command.startswith("&>", i):
        j += 1
        while j < len(command) and (command[j].isdigit() or command[j] == "-"):
            j += 1
        return j
    while j < len(command) and command[j] in " \t":
        j += 1
    if command.startswith("/dev/null", j):
        end = j + len("/dev/null")
        if end == len(command) or command[end] in " \t;|&\n)":
            return end
    return None


def answer_permissions_headless(bus: Bus, *, approve: bool) -> None:
    """Headless runs have nobody to ask: answer every `ask` on `bus` with deny (or allow, with --yes)."""

    def answer(event: object) -> None:
        if isinstance(event, PermissionRequested) and not event.reply.done():
            event.reply.set_result("allow_once" if approve else "deny")

    bus.add_listener(answer)
