"""`yeetui sessions list|show`: the stored conversations, read from the store as `agents` reads it (the whole
file checked, runs of dead processes ended first)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from yeetui.cli.common import open_store, table
from yeetui.cli.exit_codes import EXIT_OK


async def cmd_sessions(args: argparse.Namespace) -> int:
    async with await open_store() as store:  # runs whose process died end interrupted, told to their parent
        if args.action == "list":
            rows = []
            for session in await store.list_sessions(limit=args.limit):
                runs = await store.list_runs(session_id=session.id, limit=1000)
                rows.append({**session.to_json(), "runs": [r.to_json() for r in runs],
                             "status": runs[0].status.value if runs else None})
            if args.json:
                print(json.dumps(rows, default=str, indent=None))
            else:
                print(table(("SESSION", "STATUS", "PROFILE", "TITLE"),
                            [(r["id"][:12], r["status"] or "-", r["profile"], r["title"] or "") for r in rows]))
            return EXIT_OK
        session = await store.resolve_session(args.id)
        runs = await store.list_runs(session_id=session.id, limit=1000)
        messages = await store.messages(session.id)
        data: dict[str, Any] = {**session.to_json(), "runs": [r.to_json() for r in runs],
                                "messages": [{"id": m.id, "run_id": m.run_id, "partial": m.partial,
                                              **m.message.model_dump(mode="json")} for m in messages]}
        if args.json:
            print(json.dumps(data, default=str))
        else:
            print(f"session {session.id}  profile {session.profile}  {session.title}")
            for run in runs:
                print(f"  run {run.id[:12]} {run.status.value} {run.model or ''} {run.error or ''}".rstrip())
            for m in messages:
                print(f"--- {m.message.role}{' (partial)' if m.partial else ''}")
                for part in m.message.parts:
                    print(_describe_part(part))
        return EXIT_OK


def _describe_part(part: Any) -> str:
    if part.kind == "text":
        return str(part.text)
    if part.kind == "thinking":
        return f"[thinking] {part.text[:200]}"
    if part.kind == "tool_call":
        return f"[tool call {part.name}] {json.dumps(part.arguments)[:300]}"
    return f"[tool result{' error' if part.is_error else ''}] {part.content[:300]}"
