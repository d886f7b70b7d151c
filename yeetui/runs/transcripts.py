"""A session's transcript as Claude Code writes its own — JSON lines of `{type, message: {role, content}}` with
`text`, `tool_use` and `tool_result` blocks — for hook scripts that read `transcript_path` (see yeetui.hooks).

Written under the data dir (`transcripts/<session>.jsonl`, readable by the user alone), whole, each time a hook
is about to run: yeetui's own record stays the store."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from yeetui import paths
from yeetui.hooks.shapes import claude_tool_input, claude_tool_name
from yeetui.messages import Message, TextPart, ToolCallPart, ToolResultPart
from yeetui.store import Store


async def write_transcript(store: Store, session_id: str, env: Mapping[str, str], project_dir: Path) -> Path:
    session = await store.get_session(session_id)
    cwd = session.cwd if session is not None and session.cwd is not None else project_dir
    folder = paths.data_dir(env) / "transcripts"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{session_id}.jsonl"
    lines = [json.dumps({"type": "assistant" if m.message.role == "assistant" else "user", "sessionId": session_id,
                         "uuid": str(m.id), "timestamp": m.created_at.isoformat(), "yeetui_run_id": m.run_id,
                         "message": {"role": "assistant" if m.message.role == "assistant" else "user",
                                     "content": _blocks(m.message, cwd)}}, default=str)
             for m in await store.messages(session_id, include_partial=False)]
    temporary = path.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + ("\n" if lines else ""))
    temporary.replace(path)
    return path


def _blocks(message: Message, cwd: Path) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCallPart):  # named and shaped as the hooks' payloads name them
            blocks.append({"type": "tool_use", "id": part.id, "name": claude_tool_name(part.name),
                           "input": claude_tool_input(part.name, part.arguments, cwd)})
        elif isinstance(part, ToolResultPart):
            blocks.append({"type": "tool_result", "tool_use_id": part.call_id, "content": part.content,
                           "is_error": part.is_error})
    return blocks
