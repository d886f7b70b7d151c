"""Finding, parsing and layering profile files.

Native layers, lowest precedence first: built-in `agents/` → the user's profiles (`<config dir>/agents/`) →
the project's `.yeetui/agents/`; their raw fields are merged field by field (`profiles.merge_fields`),
so a native file may change a built-in on purpose (a project file doing so is reported). Claude Code
(`.claude/agents/`) and OpenCode (`.opencode/agent(s)/`) files are translated by `yeetui.definitions.foreign.agents`
and never merge into a built-in or user profile: each loads on its own, renamed `<name>-claude` /
`<name>-opencode` when its name is taken, and the rename is reported. A project `.yeetui/agents/` file of
the same name merges over it. Folders are read recursively, as Claude Code and OpenCode do.

Each file is validated on its own, so an error names its file and line and skips only that file.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import shutil
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from yeetui.definitions.foreign.agents import from_claude, from_opencode
from yeetui.definitions.foreign.frontmatter import read_front_matter
from yeetui.definitions.profiles import NAME_PATTERN, Profile, ProfileFileError, ProfileSet, merge_fields
from yeetui.errors import ProfileError, YeetuiError
from yeetui.resources import agents_dir
from yeetui.yamlfile import DATA_SUFFIXES, Document, DocumentError, load_document, validation_issues

Notes = list[tuple[int, str]]
Mapper = Callable[[Document, Path], tuple[Document | None, Notes]]

MAX_PROMPT_CHARS = 200_000
"""A longer prompt is refused: it would be sent with every model call."""
MAX_FILES_PER_LAYER = 2_000
FOREIGN_SUFFIX = {".claude": "claude", ".opencode": "opencode"}


def _layer_files(layer: str, dirs: list[Path], suffixes: tuple[str, ...], project_dir: Path,
                 errors: list[ProfileError]) -> list[Path]:
    """A layer's profile files to read: at most `MAX_FILES_PER_LAYER`, and of a project's layers only those in
    the project (a symlink out of it is skipped); each skip is a warning in `errors`."""
    files, too_many = _files(dirs, suffixes)
    if too_many:
        errors.append(ProfileFileError(
            f"{dirs[0]} holds more than {MAX_FILES_PER_LAYER} profile files; only the first "
            f"{MAX_FILES_PER_LAYER} were read.", path=dirs[0], warning=True))
    if layer in _PROJECT_LAYERS:
        files, outside = _inside(files, project_dir)
        errors += [ProfileFileError(
            f"Profile file {path} leads out of the project (to {path.resolve()}); it was skipped: what the "
            "project's agent files say must be in the project, where trusting it pins their content.",
            path=path, warning=True) for path in outside]
    return files


def load_profiles(*, project_dir: Path, user_dir: Path, builtin_dir: Path | None = None,
                  trusted: bool = False) -> ProfileSet:
    """Load every profile. `project_dir` is the project root; `user_dir` is the directory of the user's
    profile files (`<config dir>/agents`); `builtin_dir` is the directory of built-in profile files
    (default: the shipped `agents/`). Never raises for a bad file: problems are collected in
    `ProfileSet.errors` and the other profiles still load.

    Unless the project is `trusted` (see `yeetui.settings.trust`), the files that come with it (`.claude`,
    `.opencode`, `.yeetui/agents`) may only narrow rights: their allow rules are dropped, and they cannot
    make writable a profile that the built-in and user files keep read-only. Each drop is a warning. A project
    file that a symlink leads out of the project is skipped (a warning): trust pins the files in the project."""
    result = ProfileSet()
    if builtin_dir is None:
        try:
            builtin_dir = agents_dir()
        except YeetuiError as exc:
            result.errors.append(ProfileFileError(str(exc)))
    layers: list[tuple[str, list[Path], Mapper | None, tuple[str, ...]]] = [
        ("built-in", [builtin_dir] if builtin_dir else [], None, DATA_SUFFIXES),
        ("user", [user_dir], None, DATA_SUFFIXES),
        (".claude", [project_dir / ".claude" / "agents"], from_claude, (".md",)),
        (".opencode", [project_dir / ".opencode" / "agents", project_dir / ".opencode" / "agent"],
         from_opencode, (".md",)),
        ("project", [project_dir / ".yeetui" / "agents"], None, DATA_SUFFIXES),
    ]
    contributions: dict[str, list[Document]] = {}
    """Per profile name, its files in precedence order, fields already translated into yeetui's."""
    origin: dict[str, str] = {}
    """Per profile name, the layer that introduced it."""
    notes: dict[str, str] = {}
    """Per profile name, what the user should know about where it came from (`profiles list` shows it)."""
    for layer, dirs, mapper, suffixes in layers:
        seen: dict[str, Path] = {}
        files = _layer_files(layer, dirs, suffixes, project_dir, result.errors)
        for path in files:
            try:
                doc, file_notes = _read(path, mapper, project_dir)
            except ProfileFileError as exc:
                result.errors.append(exc)
                continue
            result.errors.extend(_warnings(path, file_notes))
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
            if mapper is not None and name in contributions:
                name = _free_name(name, FOREIGN_SUFFIX[layer], contributions)
                owner = origin[doc.data["name"]]
                what = f"the {owner} profile" if owner in ("built-in", "user") else f"a profile from {owner}"
                result.errors.append(ProfileFileError(
                    f"Profile file {path} defines '{doc.data['name']}', the name of {what}; a "
                    f"{layer} file never changes another profile, so it loads as '{name}'.", path=path,
                    line=doc.line_of(("name",)), warning=True))
                notes[name] = f"renamed from {doc.data['name']} ({what} has that name)"
                doc.data["name"] = name
            elif layer == "project" and origin.get(name) in ("built-in", "user", ".claude", ".opencode"):
                result.errors.append(ProfileFileError(
                    f"Profile file {path} changes the {origin[name]} profile '{name}': the project's own "
                    "profile files merge over it field by field.", path=path, line=doc.line_of(("name",)),
                    warning=True))
                notes[name] = f"{origin[name]} profile changed by the project's {path.name}"
            if layer in _PROJECT_LAYERS and not trusted:
                result.errors.extend(_narrowed(doc, contributions.get(name, [])))
            origin.setdefault(name, layer)
            contributions.setdefault(name, []).append(doc)
    for name, parts in contributions.items():
        profile = _merge(name, parts, result)
        if profile is None:
            continue
        profile = profile.with_note(notes.get(name, ""))
        if origin.get(name) == "built-in" and profile.acp is not None and shutil.which(profile.acp.command) is None:
            result.not_installed[name] = profile  # an agent the user does not have: offered once it is installed
            continue
        result.profiles[name] = profile
    _check_triggers(contributions, result)
    _check_children(result)
    return result


def _free_name(name: str, suffix: str, taken: dict[str, Any]) -> str:
    """`reviewer` → `reviewer-claude` (or `reviewer-claude-2`, … when that is taken too)."""
    candidate = f"{name[:56]}-{suffix}"
    number = 2
    while candidate in taken:
        candidate = f"{name[:54]}-{suffix}-{number}"
        number += 1
    return candidate


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
    if isinstance(workspace, dict) and (mode == "auto" or (mode == "off" and not read_only)):
        # `off` runs a writable agent's bash unconfined (a read-only one's gets no bash: narrower); `auto` would
        # undo a `required` below
        dropped.append((("workspace", "bash_sandbox"), f"workspace.bash_sandbox: {workspace.pop('bash_sandbox')}"))
    if isinstance(workspace, dict) and "branch_prefix" in workspace:  # which branches its builders' bash may move
        dropped.append((("workspace", "branch_prefix"), f"workspace.branch_prefix: {workspace.pop('branch_prefix')}"))
    if doc.data.get("runner") == "acp" or "acp" in doc.data:  # it would run a program that came with the clone
        for key in ("runner", "acp"):
            if key in doc.data:
                dropped.append(((key,), f"{key}: {doc.data.pop(key)!r}"))
    if isinstance(workspace, dict) and workspace.get("network", False) is not False:
        dropped.append((("workspace", "network"), f"workspace.network: {workspace.pop('network')}"))
    return [ProfileFileError(f"Profile file {doc.path}, line {doc.line_of(key)}: ignored {what} — {_UNTRUSTED}.",
                             path=doc.path, line=doc.line_of(key), warning=True) for key, what in dropped]


def validate_profile_file(path: Path) -> list[ProfileFileError]:
    """Check one profile file on its own (`yeetui profiles validate PATH`): errors and warnings. Files
    under `.claude/agents` or `.opencode/agent(s)` (at any depth) are read in that tool's format."""
    parts = path.resolve().parts
    pairs = set(itertools.pairwise(parts))
    mapper = (from_claude if (".claude", "agents") in pairs
              else from_opencode if pairs & {(".opencode", "agents"), (".opencode", "agent")} else None)
    project = next((Path(*parts[:i]) for i, part in enumerate(parts) if part in (".claude", ".opencode")),
                   path.parent)
    try:
        _, notes = _read(path, mapper, project)
    except ProfileFileError as exc:
        return [exc]
    return _warnings(path, notes)


def _warnings(path: Path, notes: Notes) -> list[ProfileFileError]:
    return [ProfileFileError(f"Profile file {path}, line {line}: {text}.", path=path, line=line, warning=True)
            for line, text in notes]


def _files(dirs: list[Path], suffixes: tuple[str, ...]) -> tuple[list[Path], bool]:
    """Profile files under `dirs` at any depth (hidden files and folders, READMEs and symlinked folders
    skipped), sorted per folder; and whether there were more than `MAX_FILES_PER_LAYER`."""
    found: list[Path] = []
    for directory in dirs:
        if not directory.is_dir():
            continue
        for root, folders, names in os.walk(directory):
            folders[:] = sorted(f for f in folders if not f.startswith("."))
            for name in sorted(names):
                path = Path(root) / name
                if (not name.startswith(".") and path.suffix.lower() in suffixes and path.stem.lower() != "readme"
                        and path.is_file()):
                    found.append(path)
                    if len(found) > MAX_FILES_PER_LAYER:
                        return found[:MAX_FILES_PER_LAYER], True
    return found, False


def _inside(files: list[Path], project_dir: Path) -> tuple[list[Path], list[Path]]:
    """`files` split into those really inside the project and those a symlink (of the file or of a folder
    above it) leads out of it."""
    root = project_dir.resolve()
    inside: list[Path] = []
    outside: list[Path] = []
    for path in files:
        (inside if path.resolve().is_relative_to(root) else outside).append(path)
    return inside, outside


def _read(path: Path, mapper: Mapper | None, project_dir: Path) -> tuple[Document | None, Notes]:
    """Parse, translate and validate one file on its own. Raises ProfileFileError naming file and line."""
    notes: Notes = []
    try:
        if mapper is not None:
            doc, lenient_at = read_front_matter(path)
            if lenient_at is not None:
                notes.append((lenient_at, "the front matter is not strict YAML; it was read leniently, the way "
                              "Claude Code and OpenCode read it (`yeetui profiles show` shows the result)"))
        else:
            doc = load_document(path)
    except DocumentError as exc:
        raise ProfileFileError(f"Profile file {exc}. The file was skipped.", path=path,
                               line=exc.line) from None
    if mapper is not None:
        mapped, mapped_notes = mapper(doc, project_dir)
        notes += mapped_notes
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
    notes += _slug_name(doc)
    prompt = doc.data.get("prompt")
    if isinstance(prompt, str) and len(prompt) > MAX_PROMPT_CHARS:
        raise _file_error(path, [(doc.line_of(("prompt",)), f"the prompt is {len(prompt):,} characters long; "
                                  f"yeetui refuses prompts over {MAX_PROMPT_CHARS:,} characters, which would be "
                                  "sent with every model call")])
    try:
        Profile.model_validate(doc.data)
    except ValidationError as exc:
        raise _file_error(path, validation_issues(exc, doc, Profile)) from None
    return doc, notes


def _slug_name(doc: Document) -> Notes:
    """A name that is no slug (`Frontend Developer`) becomes one (`frontend-developer`), or the file stem's."""
    name = doc.data.get("name")
    if name is None or name == "":
        doc.data["name"] = name = doc.path.stem
    if isinstance(name, str) and re.fullmatch(NAME_PATTERN, name) and len(name) <= 64:
        return []
    slug = (slugify(str(name)) or slugify(doc.path.stem)
            or "agent-" + hashlib.sha256(doc.path.stem.encode()).hexdigest()[:8])
    doc.data["name"] = slug
    return [(doc.line_of(("name",)), f"the name {name!r} is not a profile name (letters, digits, '.', '-', '_'); "
             f"the profile is called '{slug}'")]


def slugify(text: str) -> str:
    """`Frontend Developer` → `frontend-developer`, `Révision` → `revision`; '' when no letter or digit is
    left (a name in another script: the file stem is tried, then a name made from it)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return "-".join(re.findall(r"[a-z0-9]+", ascii_text))[:64].strip("-")


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
