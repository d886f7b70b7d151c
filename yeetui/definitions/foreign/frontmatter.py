"""Front matter of Claude Code and OpenCode files, read strictly first and leniently when that fails.

Claude Code's own agent generator writes front matter that is not YAML: a one-line `description: Use
this agent when… Examples: <example>Context: … user: "…"</example>` (a value holding `: `), literal `\n`
escapes in an unquoted value, and `<example>` blocks continuing a value on unindented lines. Claude Code
and OpenCode accept these files, so yeetui does too: each top-level `key:` line starts a field, a block
that parses as YAML on its own is read as YAML, anything else is the field's text (its continuation lines
included, `\n` escapes made line breaks). A line inside an open `<example>`-style tag never starts a
field, nor does a dialogue label (`user:`, `assistant:`, `Context:`). The caller reports that the lenient
reading was used.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from yeetui.yamlfile import MAX_YAML_CHARS, Document, DocumentError, KeyPath, parse_yaml, read_text, split_front_matter

KNOWN_KEYS = frozenset({
    "name", "description", "tools", "disallowedTools", "model", "color", "permissionMode", "maxTurns", "skills",
    "hooks", "mcpServers", "mode", "temperature", "top_p", "steps", "maxSteps", "permission", "prompt",
    "disable", "hidden", "argument-hint", "allowed-tools", "agent", "subtask", "disable-model-invocation",
})
"""Front-matter keys of the two formats (agents and commands): always a field, even inside a tag."""
_DIALOGUE = frozenset({"user", "assistant", "context", "commentary", "example", "examples", "note", "human"})
_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]+(.*))?$")
_OPEN_TAG = re.compile(r"<([A-Za-z_][\w-]*)(?:\s[^<>]*)?>")
_CLOSE_TAG = re.compile(r"</([A-Za-z_][\w-]*)\s*>")


def read_front_matter(path: Path) -> tuple[Document, int | None]:
    """The file's front matter and body. Returns the document and, when the strict YAML reading failed and
    the lenient one was used, the line strict YAML stopped at (else None). Raises DocumentError when even
    the lenient reading finds no field."""
    text = read_text(path)
    front, body, offset = split_front_matter(text, path)
    if front is None:
        return Document(path, {}, body, {(): 1}), None
    try:
        data, lines = parse_yaml(front, path, line_offset=offset)
    except DocumentError as exc:
        if not exc.reason.startswith("invalid YAML") or len(front) > MAX_YAML_CHARS:
            raise
        data, lines = lenient_fields(front, path, offset)
        return Document(path, data, body, lines), exc.line or offset + 1
    if data is None:
        data = {}
    if not isinstance(data, dict) or any(not isinstance(k, str) for k in data):
        raise DocumentError(path, lines.get((), 1), "the front matter must be a mapping of fields")
    return Document(path, data, body, lines), None


def lenient_fields(front: str, path: Path, offset: int) -> tuple[dict[str, Any], dict[KeyPath, int]]:
    """Read front matter that is not YAML the way Claude Code and OpenCode do (see the module docstring)."""
    entries: list[tuple[str, int, list[str]]] = []
    depth = 0
    for index, line in enumerate(front.split("\n")):
        match = _KEY_LINE.match(line)
        if match and _starts_field(match[1], depth, [e[0] for e in entries]):
            entries.append((match[1], offset + index + 1, [line]))
        elif entries:
            entries[-1][2].append(line)
        elif line.strip() and not line.lstrip().startswith("#"):
            raise DocumentError(path, offset + index + 1, "the front matter is neither YAML nor 'key: value' lines")
        depth = max(0, depth + len(_OPEN_TAG.findall(line)) - len(_CLOSE_TAG.findall(line)))
    if not entries:
        raise DocumentError(path, offset + 1, "the front matter holds no 'key: value' field")
    data: dict[str, Any] = {}
    lines: dict[KeyPath, int] = {(): offset + 1}
    for key, line_no, block in entries:
        if key in data:
            raise DocumentError(path, line_no, f"the key '{key}' appears twice in the front matter")
        data[key] = _value(key, block, path, line_no)
        lines[(key,)] = line_no
    return data, lines


def _starts_field(key: str, depth: int, seen: list[str]) -> bool:
    if key in KNOWN_KEYS:
        return key not in seen or depth == 0
    return depth == 0 and key.lower() not in _DIALOGUE and key[0].islower()


def _value(key: str, block: list[str], path: Path, line: int) -> Any:
    text = "\n".join(block).rstrip()
    try:
        parsed, _ = parse_yaml(text, path, line_offset=line - 1)
    except DocumentError:
        parsed = None
    if isinstance(parsed, dict) and list(parsed) == [key]:
        return parsed[key]
    first = block[0].split(":", 1)[1].strip()
    rest = "\n".join(block[1:]).strip()
    value = f"{first}\n{rest}" if first and rest else first or rest
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'" and "\n" not in value:
        value = value[1:-1]
    return value.replace("\\n", "\n").strip()
