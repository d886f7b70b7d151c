"""Reading YAML, JSON and Markdown-with-front-matter files while remembering where each key was.

Profiles and workflows are hand-written files; when one is wrong the user needs the file *and the line*.
`load_document` returns the parsed data together with a map from key paths to 1-based line numbers, and
`validation_issues` turns a pydantic `ValidationError` into `(line, reason)` pairs using that map.

YAML is read with YAML 1.2 booleans: only `true`/`false` are booleans, so `thinking: off` stays the
string "off" instead of becoming `False` (the YAML 1.1 surprise). Duplicate keys are an error.

Parsing uses libyaml's C parser when PyYAML has it (several times faster: every start reads the agent
profiles and workflows); a document it rejects is parsed again by the pure-Python parser, whose error
messages (and verdict) are the ones reported.
"""

from __future__ import annotations

import difflib
import json
import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from yeetui.errors import YeetuiError

KeyPath = tuple[str | int, ...]

YAML_SUFFIXES = (".yaml", ".yml")
DATA_SUFFIXES = (*YAML_SUFFIXES, ".json", ".md")

MAX_FILE_BYTES = 1_048_576
"""Largest profile, workflow or config file read: anything bigger is refused unread past this size."""
MAX_YAML_CHARS = 262_144
"""Largest YAML document (or Markdown front matter) parsed."""
MAX_YAML_NODES = 100_000
"""Values a YAML document may hold once its aliases are expanded; more is refused (an alias bomb would
otherwise expand exponentially in every consumer that walks the data)."""


class DocumentError(YeetuiError):
    """A file could not be read or parsed. Carries the path and the 1-based line (when known)."""

    def __init__(self, path: Path, line: int | None, reason: str) -> None:
        where = f"{path}, line {line}" if line else str(path)
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


@dataclass(frozen=True)
class Document:
    path: Path
    data: dict[str, Any]
    body: str | None = None
    """The Markdown body after the front matter (`.md` files only)."""
    lines: Mapping[KeyPath, int] = field(default_factory=dict)
    """1-based line of each key (mapping keys) or item (sequence indexes); `()` is the data's first line."""

    def line_of(self, loc: Sequence[str | int]) -> int:
        """The line of the deepest part of `loc` that exists in the file (pydantic locs may name keys
        that are missing, or type tags of unions, which are skipped)."""
        best = self.lines.get((), 1)
        found: KeyPath = ()
        for part in loc:
            candidate = (*found, part)
            if candidate in self.lines:
                found = candidate
                best = self.lines[candidate]
        return best


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans (see module docstring)."""


_BOOL_TAG = "tag:yaml.org,2002:bool"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_FastLoader: type | None = None
if getattr(yaml, "__with_libyaml__", False):  # libyaml's parser, the same resolvers (YAML 1.2 booleans)
    _FastLoader = type("_FastLoader", (yaml.CSafeLoader,),
                       {"yaml_implicit_resolvers": _Loader.yaml_implicit_resolvers})


def parse_yaml(text: str, path: Path, *, line_offset: int = 0) -> tuple[Any, dict[KeyPath, int]]:
    """Parse one YAML document; returns the data and the key-line map. `line_offset` is added to every
    line (front matter starts below the `---`). A document over `MAX_YAML_CHARS`, or whose aliases expand
    to more than `MAX_YAML_NODES` values, is refused."""
    if len(text) > MAX_YAML_CHARS:
        raise DocumentError(path, line_offset + 1 if line_offset else None,
                            f"the YAML is {len(text):,} characters long, more than the {MAX_YAML_CHARS:,} "
                            "yeetui reads")
    if _FastLoader is not None:
        fast = _FastLoader(text)
        try:
            return _parse(fast, path, line_offset)
        except yaml.YAMLError:
            pass  # the pure-Python parser below gives the verdict and the message
        finally:
            fast.dispose()
    loader = _Loader(text)
    try:
        return _parse(loader, path, line_offset)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 + line_offset if mark else None
        reason = exc.problem or exc.context or "unreadable"
        if exc.context and exc.problem:
            started = exc.context_mark.line + 1 + line_offset if exc.context_mark else None
            origin = f" that starts on line {started}" if started != line else ""
            reason += f" ({exc.context}{origin})"
        raise DocumentError(path, line, f"invalid YAML: {reason}") from None
    except yaml.YAMLError as exc:
        raise DocumentError(path, None, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()


def _parse(loader: Any, path: Path, line_offset: int) -> tuple[Any, dict[KeyPath, int]]:
    node = loader.get_single_node()
    if node is None:
        return None, {(): line_offset + 1}
    lines: dict[KeyPath, int] = {}
    _walk(node, (), lines, path, line_offset, {})
    return loader.construct_document(node), lines


def _walk(node: yaml.Node, prefix: KeyPath, lines: dict[KeyPath, int], path: Path, offset: int,
          sizes: dict[int, int]) -> int:
    """Record the line of every key below `node`; returns how many values `node` holds with its aliases
    expanded. Each node is walked once: an alias (a node met again) only adds its known size, so a
    document of a few lines that would expand to billions of values is refused in time linear in its size."""
    known = sizes.get(id(node))
    if known is not None:
        if known < 0:
            raise DocumentError(path, node.start_mark.line + 1 + offset, "a YAML alias refers to itself")
        return known
    sizes[id(node)] = -1  # being walked: met again below means a recursive alias
    total = 1 + _walk_children(node, prefix, lines, path, offset, sizes)
    sizes[id(node)] = total
    if total > MAX_YAML_NODES:
        raise DocumentError(path, node.start_mark.line + 1 + offset,
                            f"the YAML aliases (&anchor / *alias) expand to more than {MAX_YAML_NODES:,} "
                            "values; the document is refused (an alias bomb?)")
    return total


def _walk_children(node: yaml.Node, prefix: KeyPath, lines: dict[KeyPath, int], path: Path, offset: int,
                   sizes: dict[int, int]) -> int:
    lines.setdefault(prefix, node.start_mark.line + 1 + offset)
    total = 0
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            line = key_node.start_mark.line + 1 + offset
            if key in seen and key != "<<":
                raise DocumentError(path, line, f"the key '{key}' appears twice in the same mapping")
            seen.add(key)
            lines[(*prefix, key)] = line
            total += _walk(value_node, (*prefix, key), lines, path, offset, sizes)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            total += _walk(item, (*prefix, index), lines, path, offset, sizes)
    return total


def parse_json(text: str, path: Path) -> tuple[Any, dict[KeyPath, int]]:
    duplicates: list[str] = []

    def note_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        duplicates.extend(key for index, key in enumerate(keys) if key in keys[:index])
        return dict(pairs)

    try:
        data = json.loads(text, object_pairs_hook=note_duplicates)
    except json.JSONDecodeError as exc:
        raise DocumentError(path, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    try:  # JSON is (nearly) YAML: the YAML walker gives exact lines, and finds duplicate keys.
        _, lines = parse_yaml(text, path)
    except DocumentError as exc:
        if duplicates and "appears twice" in exc.reason:
            raise
        lines = {(): 1}
        if isinstance(data, dict):
            lines.update({(key,): _json_key_line(text, key) for key in data})
    if duplicates:
        raise DocumentError(path, _json_key_line(text, duplicates[0], nth=2),
                            f"the key '{duplicates[0]}' appears twice")
    return data, lines


def _json_key_line(text: str, key: str, nth: int = 1) -> int:
    matches = list(re.finditer(re.escape(json.dumps(key)) + r"\s*:", text))
    match = matches[nth - 1] if len(matches) >= nth else (matches[0] if matches else None)
    return text.count("\n", 0, match.start()) + 1 if match else 1


def split_front_matter(text: str, path: Path) -> tuple[str | None, str, int]:
    """Split `---`-delimited front matter from a Markdown body.

    Returns (front matter text or None, body, number of lines before the front matter content)."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None, text, 0
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            return "".join(lines[1:index]), "".join(lines[index + 1:]), 1
    raise DocumentError(path, 1, "the front matter opened by '---' on line 1 is never closed by a '---' line")


def read_text(path: Path) -> str:
    """The UTF-8 text of a definition file, without a BOM, line ends made `\n`; refused past
    `MAX_FILE_BYTES` (read no further than that)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise DocumentError(path, None, f"cannot read the file ({exc.strerror or exc})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise DocumentError(path, None, f"the file is larger than {MAX_FILE_BYTES // 1024} KB, more than yeetui "
                            "reads for a definition file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DocumentError(path, None, "the file is not UTF-8 text") from None
    return text.removeprefix("\ufeff").replace("\r\n", "\n")


def load_document(path: Path) -> Document:
    """Read a `.yaml`/`.yml`, `.json` or `.md` file whose top level must be a mapping."""
    text = read_text(path)
    suffix = path.suffix.lower()
    body: str | None = None
    if suffix == ".json":
        data, lines = parse_json(text, path)
    elif suffix == ".md":
        front, body, offset = split_front_matter(text, path)
        no_lines: dict[KeyPath, int] = {(): 1}
        data, lines = parse_yaml(front, path, line_offset=offset) if front is not None else (None, no_lines)
    else:
        data, lines = parse_yaml(text, path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        what = "front matter" if suffix == ".md" else "file"
        raise DocumentError(path, lines.get((), 1),
                            f"the {what} must be a mapping of fields, not {_kind(data)}")
    bad = [key for key in data if not isinstance(key, str)]
    if bad:
        raise DocumentError(path, lines.get((str(bad[0]),), lines.get((), 1)),
                            f"field names must be text, not {bad[0]!r}")
    return Document(path=path, data=data, body=body, lines=lines)


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(
        type(value), type(value).__name__)


def validation_issues(exc: ValidationError, doc: Document, model: type[BaseModel]) -> list[tuple[int, str]]:
    """One `(line, reason)` per offending key, in file order, with a did-you-mean for unknown fields."""
    grouped: dict[tuple[int, str], tuple[list[str], str]] = {}
    for err in exc.errors():
        loc = _present_loc(err["loc"], doc.data)
        dotted = ".".join(str(p) for p in loc) or "(top level)"
        shown = ""
        if err["type"] == "extra_forbidden":
            text = f"unknown field '{dotted}'{_suggest(model, loc)}"
            dotted = f"extra:{dotted}"
        elif err["type"] == "missing":
            dotted = ".".join(str(p) for p in err["loc"] if isinstance(p, str | int))
            text = "this field is required"
        else:
            text = err["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
            value = err.get("input")
            shown = f" (got {value!r})" if isinstance(value, str | int | float | bool) else ""
        texts, _ = grouped.setdefault((doc.line_of(err["loc"]), dotted), ([], shown))
        if text not in texts:
            texts.append(text)
    issues = []
    for (line, dotted), (texts, shown) in sorted(grouped.items()):
        if dotted.startswith("extra:"):
            issues.append((line, texts[0]))
            continue
        # Union members fail separately: "Input should be A" + "Input should be B" → "... A, or B".
        joined = texts[0] + "".join(", or " + t.removeprefix("Input should be ") for t in texts[1:])
        issues.append((line, f"'{dotted}': {joined}{shown}"))
    return issues


def _present_loc(loc: Sequence[str | int], data: Any) -> KeyPath:
    """The parts of a pydantic loc that exist in the data (drops union tags like `literal[...]`)."""
    out: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            continue
        out.append(part)
    return tuple(out)


def _suggest(model: type[BaseModel], loc: KeyPath) -> str:
    known = _fields_at(model, loc[:-1])
    if known is None or not loc:
        return ""
    word = str(loc[-1])
    close = difflib.get_close_matches(word, known, n=3, cutoff=0.6)
    if close:  # keep near-ties: 'modle' is as close to 'mode' as to 'model'
        best = difflib.SequenceMatcher(None, word, close[0]).ratio()
        close = [c for c in close if difflib.SequenceMatcher(None, word, c).ratio() >= best - 0.1]
        return f" (did you mean {' or '.join(repr(c) for c in close)}?)"
    return f" (known fields: {', '.join(known)})"


def _fields_at(model: type[BaseModel], loc: KeyPath) -> list[str] | None:
    current: type[BaseModel] = model
    for part in loc:
        if isinstance(part, int):
            continue
        info = next((f for n, f in current.model_fields.items() if (f.alias or n) == part), None)
        nested = _model_in(info.annotation) if info else None
        if nested is None:
            return None
        current = nested
    return [info.alias or name for name, info in current.model_fields.items()]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, list, types.UnionType):
        for arg in get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None
