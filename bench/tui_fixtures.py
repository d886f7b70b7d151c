"""Content for the TUI benchmark: long Markdown answers and bulk-filled sessions of a realistic shape."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def long_markdown(target: int) -> str:
    """A long, mixed answer: headings, paragraphs, lists, code and a table, as models write them."""
    parts: list[str] = []
    n = 0
    while sum(map(len, parts)) < target:
        n += 1
        parts.append(f"## Step {n}: the tokenizer\n\nThe tokenizer reads the input **once** and keeps a small "
                     f"stack of open scopes; each scope records where it started so that errors can point at "
                     f"the opening bracket. See `parse_scope()` and the notes below.\n\n"
                     f"- keep `offset` monotonic\n- never re-read a token\n- report the *first* error\n\n"
                     f"```python\ndef parse_scope(tokens, start={n}):\n    stack = [start]\n"
                     f"    for token in tokens:\n        if token.opens:\n            stack.append(token.offset)\n"
                     f"    return stack\n```\n\n| case | before | after |\n|---|---|---|\n"
                     f"| {n} | 12 ms | 3 ms |\n\n")
    return "".join(parts)[:target]


def conversation(count: int) -> list[tuple[str, str]]:
    """`count` messages of a realistic shape: question, reply with a tool call, tool result, answer."""
    from yeetui.messages import Message, TextPart, ToolCallPart, ToolResultPart

    code = "\n".join(f"    line_{i} = parse(tokens[{i}])  # keep offsets monotonic" for i in range(20))
    messages: list[Message] = []
    turn = 0
    while len(messages) < count:
        turn += 1
        call = f"toolu_{turn:06d}"
        messages += [
            Message.user(f"Question {turn}: why does the tokenizer lose the offset after a nested scope?"),
            Message(role="assistant", parts=(TextPart(text=f"Let me read the parser (turn {turn})."),
                                             ToolCallPart(id=call, name="read_file",
                                                          arguments={"path": "src/parser.py"}))),
            Message(role="tool", parts=(ToolResultPart(call_id=call, name="read_file",
                                                       content=f"def parse():\n{code}\n"),)),
            Message.assistant(long_markdown(700)),
        ]
    return [(m.role, m.model_dump_json()) for m in messages[:count]]


def fill_session(db: Path, session_id: str, count: int) -> None:
    """Bulk-insert `count` messages (direct SQL: a benchmark fixture, 10,000 inserts through the API
    would only measure the API)."""
    from yeetui.store.records import utcnow

    now = utcnow()
    rows = [(session_id, seq, role, body, now, now) for seq, (role, body) in enumerate(conversation(count), 1)]
    with sqlite3.connect(db, timeout=30) as conn:
        conn.executemany("INSERT INTO messages (session_id, run_id, seq, role, body, partial, created_at, "
                         "updated_at) VALUES (?, NULL, ?, ?, ?, 0, ?, ?)", rows)
