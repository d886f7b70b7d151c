"""OpenCode's totals of one of its sessions, from the database OpenCode keeps.

OpenCode stores every session in `<data>/opencode/opencode.db` (`<data>` being `$XDG_DATA_HOME`, else
`~/.local/share`, of the environment it ran in), with the session's cost and token totals on its row. A
`task` child's row names its parent session; yeetui reads the row of a child it saw its agent start, and
only when the row says that agent's session is its parent.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from yeetui.external import spend
from yeetui.messages import Usage

SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclass(frozen=True)
class Spend:
    usage: Usage
    cost: float | None


def opencode_database(env: Mapping[str, str]) -> Path | None:
    """Where OpenCode, run with `env`, keeps its database."""
    if env.get("XDG_DATA_HOME"):
        return Path(env["XDG_DATA_HOME"]) / "opencode" / "opencode.db"
    return Path(env["HOME"]) / ".local" / "share" / "opencode" / "opencode.db" if env.get("HOME") else None


def session_spend(env: Mapping[str, str], session_id: str, *, parent_id: str | None) -> Spend | None:
    """What OpenCode recorded as spent by `session_id` — a child of `parent_id`, or a top-level session when
    it is None — or None when there is no such record."""
    database = opencode_database(env)
    if database is None or not database.is_file() or not SAFE_ID.fullmatch(session_id) \
            or (parent_id is not None and not SAFE_ID.fullmatch(parent_id)):
        return None
    try:
        connection = sqlite3.connect(f"file:{quote(str(database))}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error:
        return None
    try:
        row = connection.execute(
            "SELECT parent_id, cost, tokens_input, tokens_output, tokens_cache_read, tokens_cache_write"
            " FROM session WHERE id = ?", (session_id,)).fetchone()
    except sqlite3.Error:  # another version's schema, a locked or damaged file
        return None
    finally:
        connection.close()
    if row is None or row[0] != parent_id:
        return None
    _, cost, *tokens = row
    counts = [spend.tokens(t) or 0 for t in tokens]  # another program's record: bounded like what agents say
    usage = Usage(input_tokens=counts[0], output_tokens=counts[1], cache_read_tokens=counts[2],
                  cache_write_tokens=counts[3])
    return Spend(usage, spend.dollars(cost))
