"""Slash-command files of Claude Code and OpenCode, read as slash commands of yeetui's own.

`.claude/commands/**/*.md` and `.opencode/command(s)/**/*.md` in the project, and `commands/*.md` in the user's
yeetui config dir, each become `/NAME` (the file's stem; `folder:stem` when two files share a stem). The body
is a prompt template: `$ARGUMENTS` is what the user typed after the name, `$1`…`$9` its words. Front matter
`description` and `argument-hint` (Claude) show in /help and completion; OpenCode's `agent` sends the prompt to
that profile as a subagent.

A command is only a prompt, so it cannot widen an agent's rights, and it is always sent as a prompt: a body
starting with `!`, `/` or `@profile` is never run as a shell line, a command or a delegation. What yeetui does
not do is said once per file: Claude's `!`command`` lines (not run: they would run in your shell, unasked),
`allowed-tools` (the profile's rules apply) and `model` (the session's model is used).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from yeetui.definitions.foreign.frontmatter import read_front_matter
from yeetui.yamlfile import DocumentError

PROJECT_DIRS = (".claude/commands", ".opencode/command", ".opencode/commands")
MAX_FILES = 500
MAX_TEMPLATE_CHARS = 100_000
"""A prompt template longer than this is refused: it would be sent every time the command runs."""
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_POSITIONAL = re.compile(r"\$([1-9])")
_SHELL_LINE = re.compile(r"!`[^`]+`")


@dataclass(frozen=True)
class CommandFile:
    name: str
    description: str
    template: str
    source: Path
    argument_hint: str = ""
    agent: str | None = None
    """OpenCode's `agent`: the profile the prompt goes to (as a subagent), or None for the session's agent."""
    namespace: str = ""
    """Its folder below the commands folder, else the tool it is from (`claude`, `opencode`, `user`): the
    `namespace:name` it gets when its name is taken."""

    def expand(self, arguments: str) -> str:
        """The prompt: `$ARGUMENTS` → all of `arguments`, `$1`… → its words (missing ones empty). A template
        that uses neither gets the arguments appended, as Claude Code does."""
        words = arguments.split()
        text = self.template.replace("$ARGUMENTS", arguments)
        text = _POSITIONAL.sub(lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", text)
        if arguments and "$ARGUMENTS" not in self.template and not _POSITIONAL.search(self.template):
            text = f"{text.rstrip()}\n\n{arguments}"
        return text.strip()


def _slug(stem: str) -> str:
    return re.sub(r"[^a-z0-9_.-]+", "-", stem.lower()).strip("-.") or "command"


def _files(folder: Path, within: Path) -> list[Path]:
    """The `.md` files under `folder` that really are inside `within` (a symlink out of the project — to a key
    file, say — would send what it points to to the model as a prompt)."""
    if not folder.is_dir():
        return []
    root = within.resolve()
    return sorted(p for p in folder.rglob("*.md") if p.is_file() and p.resolve().is_relative_to(root))[:MAX_FILES]


def _read(path: Path, folder: Path, tool: str, warnings: list[str]) -> CommandFile | None:
    try:
        doc, lenient_at = read_front_matter(path)
    except DocumentError as exc:
        warnings.append(f"Command file {exc}; skipped.")
        return None
    except OSError as exc:
        warnings.append(f"Command file {path}: cannot be read ({exc.strerror}); skipped.")
        return None
    body = (doc.body or "").strip()
    if not body:
        warnings.append(f"Command file {path}: has no prompt; skipped.")
        return None
    if len(body) > MAX_TEMPLATE_CHARS:
        warnings.append(f"Command file {path}: its prompt is {len(body):,} characters (at most "
                        f"{MAX_TEMPLATE_CHARS:,}); skipped.")
        return None
    if lenient_at is not None:
        warnings.append(f"Command file {path}, line {lenient_at}: not valid YAML; read leniently as Claude Code "
                        "does.")
    ignored = [what for what, present in (
        ("its !`command` lines are not run (they would run in your shell, unasked)", _SHELL_LINE.search(body)),
        ("allowed-tools is not applied (the agent's own rules are)", "allowed-tools" in doc.data),
        ("model is not applied (the session's model is used)", "model" in doc.data),
    ) if present]
    if ignored:
        warnings.append(f"Command file {path}: " + "; ".join(ignored) + ".")
    stem = path.relative_to(folder).with_suffix("")
    name = _slug(stem.name)
    if not _SLUG.match(stem.name):
        warnings.append(f"Command file {path}: {stem.name!r} is not a command name; it is /{name}.")
    description = doc.data.get("description")
    hint = doc.data.get("argument-hint")
    agent = doc.data.get("agent")
    return CommandFile(name=name, description=description.strip() if isinstance(description, str) else "",
                       template=body, source=path, argument_hint=hint if isinstance(hint, str) else "",
                       agent=agent if isinstance(agent, str) and agent else None,
                       namespace=_slug(stem.parent.name) if stem.parent.name else tool)


def load_commands(project_dir: Path, user_dir: Path | None = None) -> tuple[list[CommandFile], list[str]]:
    """Every command file (the user's first, then the project's), and a warning per thing not honoured. Two
    files with one name: the later is reachable as `namespace:name` (see `place`)."""
    warnings: list[str] = []
    found: list[CommandFile] = []
    places = ([(user_dir, user_dir, "user")] if user_dir else []) + [
        (project_dir / d, project_dir, d.split("/")[0].lstrip(".")) for d in PROJECT_DIRS]
    for folder, within, tool in places:
        for path in _files(folder, within):
            command = _read(path, folder, tool, warnings)
            if command is not None:
                found.append(command)
    placed, more = place(found, taken=())
    return placed, warnings + more


def place(found: Sequence[CommandFile], taken: Sequence[str]) -> tuple[list[CommandFile], list[str]]:
    """Give each command a name no earlier one and nothing in `taken` (built-in commands, profiles' slash
    triggers) has: a taken name keeps its meaning and the file becomes `namespace:name`, said in a warning."""
    warnings: list[str] = []
    placed: dict[str, CommandFile] = {}
    for command in found:
        name = command.name
        if name in taken or name in placed:
            by = "a built-in command" if name in taken else str(placed[name].source)
            name = f"{command.namespace}:{name.split(':')[-1]}"
            if name in placed or name in taken:
                warnings.append(f"Command file {command.source}: /{command.name} is taken by {by}, and so is "
                                f"/{name}; skipped.")
                continue
            warnings.append(f"Command file {command.source}: /{command.name} is taken by {by}; it is /{name}.")
        placed[name] = replace(command, name=name)
    return list(placed.values()), warnings
