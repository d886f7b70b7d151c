"""Session context injection for subagent spawns.

A spawn's `session_context` names what the child sees before its task:

- `none`: the task only.
- `summary_markdown`: the parent's title, latest breadcrumb summaries and last assistant reply.
- `compact_markdown`: the parent's transcript, text only, one line per tool call, results elided.
- `session_id:<id>`: the compact transcript of a session of the caller's own conversation tree (id or unique
  prefix); with no parent (the user's `agents start`), of this project.
- `transcript:<n>`: the parent's last n messages (1..100), tool calls and results shown briefly.
- `file:<path>`: a UTF-8 text file inside the project, opened race-free through `yeetui.system.safepath`.

Every resolved context is capped at `CONTEXT_CAP_BYTES` of UTF-8 (the head is kept, cut on a character
boundary, followed by `[truncated: N bytes remaining]`) and rendered into a template holding `{task}` and
optionally `{context}`. An empty context yields the task alone.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from yeetui.errors import ContextResolutionError, PathEscapeError, ToolError
from yeetui.messages import Message, TextPart, ToolCallPart, ToolResultPart
from yeetui.system.safepath import open_for_read
from yeetui.text import clip, one_line
from yeetui.workspace import WorkspaceBinding

if TYPE_CHECKING:
    from yeetui.store import Store, StoredMessage

CONTEXT_CAP_BYTES = 51_200
"""The most context (UTF-8 bytes) injected into a child's prompt, before the truncation note."""

DEFAULT_TEMPLATE = "## Context from parent session\n\n{context}\n\n## Task\n\n{task}\n"

TRANSCRIPT_MAX = 100
VALID_FORMS = (
    "none, summary_markdown, compact_markdown, session_id:<id>, "
    f"transcript:<n> (n from 1 to {TRANSCRIPT_MAX}), file:<path>"
)

_BREADCRUMBS_SHOWN = 10
_LAST_REPLY_CHARS = 1_500
_ARG_CHARS = 60
_RESULT_CHARS = 200
_READ_CHUNK = 1 << 20
_PLACEHOLDER = re.compile(r"\{(context|task)\}")
_INTEGER = re.compile(r"[+-]?\d+")


def _fail(spec: str, problem: str) -> ContextResolutionError:
    return ContextResolutionError(f"Cannot resolve session_context {spec!r}: {problem}")


async def resolve_context(spec: str, *, store: Store, parent_session_id: str | None, project_root: Path,
                          template: str | None = None, task: str) -> str:
    """The child's full prompt: the context `spec` names, rendered with `task` into `template`.

    Raises `ContextResolutionError` naming the spec when the source is malformed or cannot be read.
    """
    template = DEFAULT_TEMPLATE if template is None else template
    if "{task}" not in template:
        raise _fail(spec, f"the context template {template!r} has no {{task}} placeholder; a template must "
                          "contain {task} and may contain {context}.")
    context = await _resolve(spec, store=store, parent_session_id=parent_session_id,
                             project_root=Path(project_root))
    if not context.strip():
        return task
    values = {"context": context, "task": task}
    # One pass, so a `{task}` inside the context is never substituted and other braces stay literal.
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


async def _resolve(spec: str, *, store: Store, parent_session_id: str | None, project_root: Path) -> str:
    source, sep, arg = spec.strip().partition(":")
    arg = arg.strip()
    if not sep and source == "none":
        return ""
    if not sep and source == "summary_markdown":
        parent = await _parent(spec, store, parent_session_id)
        return cap_text(await _summary(store, parent))
    if not sep and source == "compact_markdown":
        parent = await _parent(spec, store, parent_session_id)
        return cap_text(render_compact([m.message for m in await store.messages(parent)]))
    if sep and arg and source == "session_id":
        session_id = await _session_in_reach(spec, arg, store, parent_session_id, project_root)
        return cap_text(render_compact([m.message for m in await store.messages(session_id)]))
    if sep and arg and source == "transcript":
        count = _transcript_count(spec, arg)
        parent = await _parent(spec, store, parent_session_id)
        return cap_text(render_transcript(await store.messages(parent, limit=count)))
    if sep and arg and source == "file":
        return await asyncio.to_thread(_read_project_file, spec, arg, project_root)
    raise _fail(spec, f"it is not a valid context source. Valid forms are: {VALID_FORMS}.")


async def _session_in_reach(spec: str, ref: str, store: Store, parent_session_id: str | None,
                            project_root: Path) -> str:
    """The session `ref` (an id or a unique prefix) names among those the caller may read: a spawn reads only
    its own conversation's tree (the parent's root and every session below it); a run with no parent (the
    user's `agents start --context`) reads this project's sessions. Other sessions are never named."""
    if parent_session_id is not None:
        root = await store.root_session_id(parent_session_id)
        reachable = await store.session_tree_ids(root)
        where = "this conversation's sessions"
    else:
        project = await asyncio.to_thread(lambda: str(project_root.resolve()))
        reachable = [s.id for s in await store.list_sessions(parent_id=..., limit=100_000)
                     if s.cwd is not None and str(s.cwd) == project]
        where = "this project's sessions"
    matches = [session_id for session_id in reachable if session_id.startswith(ref)]
    if ref in reachable:
        return ref
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise _fail(spec, f"no session among {where} has an id starting with {ref!r}.")
    raise _fail(spec, f"{len(matches)} of {where} have ids starting with {ref!r}; give more of the id.")


def _transcript_count(spec: str, arg: str) -> int:
    allowed = f"n must be a whole number from 1 to {TRANSCRIPT_MAX}"
    if not _INTEGER.fullmatch(arg):
        raise _fail(spec, f"{arg!r} is not a whole number; {allowed}.")
    count = int(arg)
    if not 1 <= count <= TRANSCRIPT_MAX:
        raise _fail(spec, f"{count} is out of range; {allowed}.")
    return count


async def _parent(spec: str, store: Store, parent_session_id: str | None) -> str:
    if parent_session_id is None:
        raise _fail(spec, "this source reads the parent session, but the spawn has no parent session.")
    if await store.get_session(parent_session_id) is None:
        raise _fail(spec, f"the parent session {parent_session_id} does not exist in the store at {store.path}.")
    return parent_session_id


# ---------------------------------------------------------------------------------------------- capping


def _truncated(data: bytes, total: int) -> str:
    """The first `CONTEXT_CAP_BYTES` of valid UTF-8 `data` (of `total` bytes), cut on a character boundary."""
    if total <= CONTEXT_CAP_BYTES:
        return data.decode("utf-8")
    # `data` is valid UTF-8, so "ignore" can only drop the one character the cut split.
    kept = data[:CONTEXT_CAP_BYTES].decode("utf-8", errors="ignore")
    remaining = total - len(kept.encode("utf-8"))
    return f"{kept}\n[truncated: {remaining} bytes remaining]"


def cap_text(text: str) -> str:
    """`text`, or its first `CONTEXT_CAP_BYTES` bytes plus the truncation note when longer."""
    data = text.encode("utf-8")
    return _truncated(data, len(data))


# ---------------------------------------------------------------------------------------------- files


def _read_project_file(spec: str, path: str, project_root: Path) -> str:
    """The capped text of `path`, confined to `project_root` (blocking; run it in a thread)."""
    if ".." in PurePosixPath(path).parts:
        raise _fail(spec, f"the path {path!r} contains a '..' segment; file: paths may not use '..' at all.")
    binding = WorkspaceBinding(cwd=project_root, allow_writes=False)
    try:
        fd, real = open_for_read(binding, path)
    except PathEscapeError as err:
        raise _fail(spec, f"the path {path!r} leads outside the project {binding.cwd}, and file: sources "
                          f"must stay inside it. {err}") from err
    except ToolError as err:
        raise _fail(spec, f"the file {path!r} cannot be read: {err}") from err
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise _fail(spec, f"{real} is a directory; file: needs a text file.")
        if not stat.S_ISREG(mode):
            raise _fail(spec, f"{real} is not a regular file; file: needs a text file.")
        head, total = _read_utf8(spec, fd, real)
    except OSError as err:
        raise _fail(spec, f"reading {real} failed: {err.strerror or err}.") from err
    finally:
        os.close(fd)
    return _truncated(head, total)


def _read_utf8(spec: str, fd: int, real: Path) -> tuple[bytes, int]:
    """Stream the whole file, checking it is UTF-8 text; return its head and its size in bytes."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    head = bytearray()
    total = 0
    while chunk := os.read(fd, _READ_CHUNK):
        nul = chunk.find(b"\0")
        if nul >= 0:
            raise _fail(spec, f"{real} is binary, not text (a NUL byte at offset {total + nul}).")
        pending = len(decoder.getstate()[0])  # bytes of a character split by the previous chunk
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError as err:
            offset = total - pending + err.start
            raise _fail(spec, f"{real} is not valid UTF-8 text (bad byte at offset {offset}).") from err
        if len(head) <= CONTEXT_CAP_BYTES:
            head += chunk[: CONTEXT_CAP_BYTES + 1 - len(head)]
        total += len(chunk)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as err:
        raise _fail(spec, f"{real} is not valid UTF-8 text (it ends inside a multi-byte character).") from err
    return bytes(head), total


# ---------------------------------------------------------------------------------------------- rendering


def _shorten(text: str, limit: int) -> str:
    """`text` on one line (whitespace collapsed), at most `limit` characters."""
    return clip(one_line(text), limit)


def _arg_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _shorten(text, _ARG_CHARS)


def _call_text(call: ToolCallPart) -> str:
    if call.raw_arguments is not None and not call.arguments:
        return f"{call.name}(<unparsed arguments>)"
    args = ", ".join(f"{key}={_arg_value(value)}" for key, value in call.arguments.items())
    return f"{call.name}({args})"


def _outcome(result: ToolResultPart | None) -> str:
    if result is None:
        return "no result"
    return "error" if result.is_error else "ok"


def _results_by_call(messages: Sequence[Message]) -> dict[str, ToolResultPart]:
    return {r.call_id: r for m in messages for r in m.tool_results}


def render_compact(messages: Sequence[Message]) -> str:
    """User and assistant text, one `- tool name(args) → ok` line per call; tool results elided."""
    results = _results_by_call(messages)
    blocks: list[str] = []
    for message in messages:
        if message.role == "tool" or message.meta.get("nudge"):
            continue
        lines: list[str] = []
        text = message.text.strip()
        if text:
            lines.append(f"**{message.role.capitalize()}:** {text}")
        lines += [f"- tool {_call_text(c)} → {_outcome(results.get(c.id))}" for c in message.tool_calls]
        if lines:
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render_transcript(stored: Sequence[StoredMessage]) -> str:
    """Messages under role headings: text in full, tool calls and results one short line each."""
    messages = [s.message for s in stored]
    results = _results_by_call(messages)
    blocks: list[str] = []
    for message in messages:
        body: list[str] = []
        for part in message.parts:
            if isinstance(part, TextPart) and part.text.strip():
                body.append(part.text.strip())
            elif isinstance(part, ToolCallPart):
                body.append(f"- call {_call_text(part)} → {_outcome(results.get(part.id))}")
            elif isinstance(part, ToolResultPart):
                name = part.name or part.call_id
                brief = _shorten(part.content, _RESULT_CHARS) or "(empty)"
                body.append(f"- result {name} → {_outcome(part)}: {brief}")
        if body:
            heading = "Tool results" if message.role == "tool" else message.role.capitalize()
            blocks.append(f"### {heading}\n\n" + "\n\n".join(body))
    return "\n\n".join(blocks)


async def _summary(store: Store, session_id: str) -> str:
    """Title, latest breadcrumbs and last assistant reply; empty when there are neither of the latter."""
    session = await store.get_session(session_id)
    crumbs = (await store.breadcrumbs.list(session_id))[-_BREADCRUMBS_SHOWN:]
    last_reply = ""
    for stored in reversed(await store.messages(session_id, limit=TRANSCRIPT_MAX)):
        if stored.message.role == "assistant" and stored.message.text.strip():
            last_reply = stored.message.text.strip()
            break
    if not crumbs and not last_reply:
        return ""
    title = session.title.strip() if session is not None and session.title.strip() else session_id[:8]
    sections = [f"### Session: {title}"]
    if crumbs:
        sections.append("### Progress so far\n\n" + "\n".join(f"- {_shorten(c.summary, 500)}" for c in crumbs))
    if last_reply:
        sections.append(f"### Last assistant reply\n\n{clip(last_reply, _LAST_REPLY_CHARS)}")
    return "\n\n".join(sections)
