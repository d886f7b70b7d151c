"""Finding, parsing and layering profile files.

Layers, lowest precedence first: built-in `agents/` → the project's `.claude/agents/` → the project's
`.opencode/agents/` (and `.opencode/agent/`) → the user's profiles (`<config dir>/agents/`) → the
project's `.yeetui/agents/`. Each file is validated on its own (so an error names its file and line and
skips only that file); then the raw fields of all layers defining a name are merged field by field
(`yeetui.profiles.merge_fields`) and validated once more.

Claude Code and OpenCode agent files are translated into yeetui fields; what cannot be translated is
dropped with a warning, and keys with no yeetui meaning (colour, temperature, …) are ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from yeetui.errors import YeetuiError
from yeetui.profiles import Profile, ProfileFileError, ProfileSet, merge_fields
from yeetui.resources import agents_dir
from yeetui.yamlfile import DATA_SUFFIXES, Document, DocumentError, KeyPath, load_document, validation_issues

CLAUDE_TOOLS = {"Read": "read_file", "Write": "write_file", "Edit": "edit_file", "MultiEdit": "edit_file",
                "Bash": "bash", "Glob": "glob", "Grep": "grep", "LS": "list_dir"}
CLAUDE_MODELS: dict[str, str | None] = {"sonnet": "anthropic/claude-sonnet-4-6",
                                        "opus": "anthropic/claude-opus-4-5",
                                        "haiku": "anthropic/claude-haiku-4-5", "inherit": None}
OPENCODE_TOOLS = {"write": ["write_file"], "edit": ["edit_file"], "bash": ["bash"], "read": ["read_file"],
                  "glob": ["glob"], "grep": ["grep"], "list": ["list_dir"]}
OPENCODE_PERMISSIONS = {"edit": ["write_file", "edit_file"], "bash": ["bash"]}
OPENCODE_MODES = {"primary": ["primary"], "subagent": ["subtask"], "all": ["primary", "subtask"]}

Notes = list[tuple[int, str]]
Mapper = Callable[[Document], tuple[Document | None, Notes]]


def load_profiles(*, project_dir: Path, user_dir: Path, builtin_dir: Path | None = None,
                  trusted: bool = False) -> ProfileSet:
    """Load every profile. `project_dir` is the project root; `user_dir` is the directory of the user's
    profile files (`<config dir>/agents`); `builtin_dir` is the directory of built-in profile files
    (default: the shipped `agents/`). Never raises for a bad file: problems are collected in
    `ProfileSet.errors` and the other profiles still load.

    Unless the project is `trusted` (see `yeetui.trust`), the files that come with it (`.claude`,
    `.opencode`, `.yeetui/agents`) may only narrow rights: their allow rules are dropped, and they cannot
    make writable a profile that the built-in and user files keep read-only. Each drop is a warning."""
    result = ProfileSet()
    if builtin_dir is None:
        try:
            builtin_dir = agents_dir()
        except YeetuiError as exc:
            result.errors.append(ProfileFileError(str(exc)))
    layers: list[tuple[str, list[Path], Mapper | None, tuple[str, ...]]] = [
        ("built-in", [builtin_dir] if builtin_dir else [], None, DATA_SUFFIXES),
        (".claude", [project_dir / ".claude" / "agents"], _from_claude, (".md",)),
        (".opencode", [project_dir / ".opencode" / "agents", project_dir / ".opencode" / "agent"],
         _from_opencode, (".md",)),
        ("user", [user_dir], None, DATA_SUFFIXES),
        ("project", [project_dir / ".yeetui" / "agents"], None, DATA_SUFFIXES),
    ]
    contributions: dict[str, list[Document]] = {}
    """Per profile name, its files in precedence order, fields already translated into yeetui's."""
    for layer, dirs, mapper, suffixes in layers:
        seen: dict[str, Path] = {}
        for path in _files(dirs, suffixes):
            try:
                doc, notes = _read(path, mapper)
            except ProfileFileError as exc:
                result.errors.append(exc)
                continue
            result.errors.extend(_warnings(path, notes))
            if doc is None:
                continue
            name = doc.data["name"]
            if name in seen:
                result.errors.append(ProfileFileError(
                    f"Profile file {path} defines '{name}', which {seen[name]} in the same {layer} layer "
                    "already defines; the file was skipped.", path=path, line=doc.line_of(("name",)),
                    warning=True))
                continue
            seen[name] = path
            if layer in _PROJECT_LAYERS and not trusted:
                result.errors.extend(_narrowed(doc, contributions.get(name, [])))
            contributions.setdefault(name, []).append(doc)
    for name, parts in contributions.items():
        profile = _merge(name, parts, result)
        if profile is not None:
            result.profiles[name] = profile
    _check_triggers(contributions, result)
    _check_children(result)
    return result


_PROJECT_LAYERS = frozenset({".claude", ".opencode", "project"})
_UNTRUSTED = ("this project is not trusted, and files that come with it may narrow an agent's rights but not "
              "widen them; `yeetui trust` in the project allows it")


def _narrowed(doc: Document, below: list[Document]) -> list[ProfileFileError]:
    """Drop from a project file's (translated) fields what would widen rights; the warnings saying so."""
    dropped: list[tuple[tuple[str, ...], str]] = []
    rules = doc.data.get("permissions")
    if isinstance(rules, dict):
        for tool, rule in list(rules.items()):
            if rule == "allow":
                del rules[tool]
                dropped.append((("permissions", tool), f"permissions.{tool}: allow"))
            elif isinstance(rule, dict):
                for pattern, action in list(rule.items()):
                    if action == "allow":
                        del rule[pattern]
                        dropped.append((("permissions", tool), f"permissions.{tool}.{pattern!r}: allow"))
    workspace = doc.data.get("workspace")
    kept_read_only = any((d.data.get("workspace") or {}).get("allow_writes") is False for d in below)
    if isinstance(workspace, dict) and workspace.get("allow_writes") is True and kept_read_only:
        del workspace["allow_writes"]
        dropped.append((("workspace", "allow_writes"), "workspace.allow_writes: true"))
    read_only = isinstance(workspace, dict) and (workspace.get("allow_writes") is False or (
        "allow_writes" not in workspace and kept_read_only))
    mode = workspace.get("bash_sandbox") if isinstance(workspace, dict) else None
    if mode == "auto" or (mode == "off" and not read_only):
        # `off` runs a writable agent's bash unconfined (a read-only one's gets no bash: narrower); `auto` would
        # undo a `required` below
        dropped.append((("workspace", "bash_sandbox"), f"workspace.bash_sandbox: {workspace.pop('bash_sandbox')}"))
    if isinstance(workspace, dict) and workspace.get("network", False) is not False:
        dropped.append((("workspace", "network"), f"workspace.network: {workspace.pop('network')}"))
    return [ProfileFileError(f"Profile file {doc.path}, line {doc.line_of(key)}: ignored {what} — {_UNTRUSTED}.",
                             path=doc.path, line=doc.line_of(key), warning=True) for key, what in dropped]


def validate_profile_file(path: Path) -> list[ProfileFileError]:
    """Check one profile file on its own (`yeetui profiles validate PATH`): errors and warnings. Files
    under `.claude/agents` or `.opencode/agent(s)` are read in that tool's format."""
    parent = path.resolve().parts[-3:-1]
    mapper = (_from_claude if parent == (".claude", "agents")
              else _from_opencode if parent in ((".opencode", "agents"), (".opencode", "agent")) else None)
    try:
        _, notes = _read(path, mapper)
    except ProfileFileError as exc:
        return [exc]
    return _warnings(path, notes)


def _warnings(path: Path, notes: Notes) -> list[ProfileFileError]:
    return [ProfileFileError(f"Profile file {path}, line {line}: {text}.", path=path, line=line, warning=True)
            for line, text in notes]


def _files(dirs: list[Path], suffixes: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    for directory in dirs:
        if directory.is_dir():
            found.extend(sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")
                                and p.suffix.lower() in suffixes and p.stem.lower() != "readme"))
    return found


def _read(path: Path, mapper: Mapper | None) -> tuple[Document | None, Notes]:
    """Parse, translate and validate one file on its own. Raises ProfileFileError naming file and line."""
    try:
        doc = load_document(path)
    except DocumentError as exc:
        raise ProfileFileError(f"Profile file {exc}. The file was skipped.", path=path,
                               line=exc.line) from None
    notes: Notes = []
    if mapper is not None:
        mapped, notes = mapper(doc)
        if mapped is None:
            return None, notes
        doc = mapped
    else:
        data = {k: v for k, v in doc.data.items() if k != "$schema"}
        if doc.body is not None and doc.body.strip():
            if "prompt" in data:
                raise _file_error(path, [(doc.line_of(("prompt",)), "the prompt is given both as a 'prompt' "
                                          "field and as the Markdown body; keep one")])
            data["prompt"] = doc.body.strip()
        doc = Document(path, data, doc.body, doc.lines)
    doc.data.setdefault("name", path.stem)
    try:
        Profile.model_validate(doc.data)
    except ValidationError as exc:
        raise _file_error(path, validation_issues(exc, doc, Profile)) from None
    return doc, notes


def _file_error(path: Path, issues: list[tuple[int, str]]) -> ProfileFileError:
    if len(issues) == 1:
        line, reason = issues[0]
        return ProfileFileError(f"Profile file {path}, line {line}: {reason}. The file was skipped.",
                                path=path, line=line)
    listed = "; ".join(f"line {line}: {reason}" for line, reason in issues)
    return ProfileFileError(f"Profile file {path} has {len(issues)} problems and was skipped: {listed}.",
                            path=path, line=issues[0][0])


def _merge(name: str, docs: list[Document], result: ProfileSet) -> Profile | None:
    raw: dict[str, Any] = {}
    for doc in docs:
        raw = merge_fields(raw, doc.data)
    sources = tuple(doc.path for doc in docs)
    try:
        return Profile.model_validate(raw).with_sources(sources)
    except ValidationError as exc:
        found = validation_issues(exc, Document(sources[-1], raw), Profile)
        issues = "; ".join(reason for _, reason in found)
        files = ", ".join(str(s) for s in sources)
        result.errors.append(ProfileFileError(
            f"Profile '{name}' is invalid once its files ({files}) are merged: {issues}. It was skipped.",
            path=sources[-1]))
        return None


def _check_triggers(contributions: dict[str, list[Document]], result: ProfileSet) -> None:
    """A slash command or hotkey used by two profiles stays with the first (built-ins come first)."""
    for field in ("slash", "hotkey"):
        owners: dict[str, str] = {}
        for name, profile in list(result.profiles.items()):
            value = getattr(profile.triggers, field)
            if value is None:
                continue
            owner = owners.setdefault(value.lower(), name)
            if owner == name:
                continue
            setter = next(doc for doc in reversed(contributions[name])
                          if field in (doc.data.get("triggers") or {}))
            path, line = setter.path, setter.line_of(("triggers", field))
            result.errors.append(ProfileFileError(
                f"Profile file {path}, line {line}: the {field} trigger '{value}' of profile '{name}' is "
                f"already used by profile '{owner}'; '{owner}' keeps it and '{name}' gets none.",
                path=path, line=line, warning=True))
            triggers = profile.triggers.model_copy(update={field: None})
            result.profiles[name] = profile.model_copy(update={"triggers": triggers})  # keeps sources


def _check_children(result: ProfileSet) -> None:
    for profile in result:
        unknown = [c for c in profile.allowed_children or [] if c not in result.profiles]
        if unknown:
            result.errors.append(ProfileFileError(
                f"Profile '{profile.name}' ({profile.sources[-1] if profile.sources else 'built in'}) allows "
                f"children that do not exist: {', '.join(unknown)}.",
                path=profile.sources[-1] if profile.sources else None, warning=True))


class _Translation:
    """Collects yeetui fields from a foreign file, keeping each one's source line for error messages."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.data: dict[str, Any] = {}
        self.lines: dict[KeyPath, int] = {(): doc.lines.get((), 1)}
        self.notes: Notes = []

    def put(self, path: KeyPath, value: Any, source: KeyPath) -> None:
        node = self.data
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
        for depth in range(1, len(path) + 1):
            self.lines.setdefault(path[:depth], self.doc.line_of(source))

    def note(self, source: KeyPath, text: str) -> None:
        self.notes.append((self.doc.line_of(source), text))

    def result(self) -> tuple[Document, Notes]:
        self.data.setdefault("name", self.doc.data.get("name") or self.doc.path.stem)
        if self.doc.body and self.doc.body.strip():
            self.data["prompt"] = self.doc.body.strip()
        return Document(self.doc.path, self.data, self.doc.body, self.lines), self.notes


def _from_claude(doc: Document) -> tuple[Document | None, Notes]:
    """Claude Code `.claude/agents/*.md`: name, description, tools (comma-separated), model."""
    fm, out = doc.data, _Translation(doc)
    out.put(("capabilities",), ["subtask"], ())
    for key in ("name", "description"):
        if key in fm:
            out.put((key,), fm[key], (key,))
    if "tools" in fm:
        raw = fm["tools"]
        names = [t.strip() for t in raw.split(",")] if isinstance(raw, str) else raw
        if not isinstance(names, list):
            out.note(("tools",), f"'tools' should be a comma-separated list of names; {raw!r} was ignored")
        else:
            tools: list[str] = []
            for tool in (str(n) for n in names if str(n).strip()):
                mapped = CLAUDE_TOOLS.get(tool)
                if mapped is None:
                    out.note(("tools",), f"the Claude Code tool '{tool}' has no yeetui equivalent; dropped")
                elif mapped not in tools:
                    tools.append(mapped)
            out.put(("tools",), tools, ("tools",))
    if "model" in fm:
        model = str(fm["model"]).strip()
        if model.lower() in CLAUDE_MODELS:
            out.put(("model",), CLAUDE_MODELS[model.lower()], ("model",))
        elif model.startswith("claude-"):
            out.put(("model",), f"anthropic/{model}", ("model",))
        elif "/" in model:
            out.put(("model",), model, ("model",))
        else:
            out.note(("model",), f"the model '{model}' is not understood; the default model is used")
    return out.result()


def _from_opencode(doc: Document) -> tuple[Document | None, Notes]:
    """OpenCode `.opencode/agents/*.md`: description, mode, model, tools, permission, steps."""
    fm, out = doc.data, _Translation(doc)
    if fm.get("disable") is True:
        return None, []
    for key in ("name", "description", "model"):
        if key in fm:
            out.put((key,), fm[key], (key,))
    mode = fm.get("mode", "all")
    if mode in OPENCODE_MODES:
        out.put(("capabilities",), OPENCODE_MODES[mode], ("mode",))
    else:
        out.note(("mode",), f"the mode '{mode}' is not one of primary, subagent, all; 'all' is assumed")
        out.put(("capabilities",), OPENCODE_MODES["all"], ("mode",))
    for key in ("steps", "maxSteps"):
        if key in fm:
            out.put(("limits", "max_turns"), fm[key], (key,))
    tools = fm.get("tools")
    if isinstance(tools, dict):
        disallowed: list[str] = []
        for tool, enabled in tools.items():
            if tool not in OPENCODE_TOOLS:
                out.note(("tools", tool), f"the OpenCode tool '{tool}' has no yeetui equivalent; ignored")
            elif enabled is False:
                disallowed.extend(t for t in OPENCODE_TOOLS[tool] if t not in disallowed)
        out.put(("disallowed_tools",), disallowed, ("tools",))
    elif tools is not None:
        out.note(("tools",), "'tools' should map tool names to true/false; ignored")
    permission = fm.get("permission")
    if isinstance(permission, dict):
        for key, action in permission.items():
            if key not in OPENCODE_PERMISSIONS:
                out.note(("permission", key), f"the OpenCode permission '{key}' has no yeetui equivalent and "
                         "was ignored")
                continue
            for tool in OPENCODE_PERMISSIONS[key]:
                out.put(("permissions", tool), action, ("permission", key))
    elif permission is not None:
        out.note(("permission",), "'permission' should map edit/bash to allow, ask or deny; ignored")
    return out.result()
