"""Cutting text down to size, one way everywhere: what is kept, and a note saying how much was left out.

`cap` is for text a model or a person reads in full (tool output, a diff, an announcement): it keeps the
head, or the head and the tail, and says how many characters are omitted. `clip` is for a short label on a
single line (a ledger activity, a title): it cuts and ends with `…`.
"""

from __future__ import annotations

from typing import Literal

Keep = Literal["head", "middle"]


def cap(text: str, limit: int, *, keep: Keep = "head", what: str = "characters") -> str:
    """`text` if it fits in `limit` characters; else its head (`keep="head"`) or its head and tail
    (`keep="middle"`, for output whose end matters, like a command's error) with a note of what is omitted."""
    if len(text) <= limit:
        return text
    omitted = len(text) - limit
    if keep == "middle":
        head = limit * 2 // 3
        return f"{text[:head]}\n[… {omitted} {what} omitted …]\n{text[len(text) - (limit - head):]}"
    return f"{text[:limit]}\n[… {omitted} more {what} omitted]"


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, ending in `…` when cut."""
    return text if len(text) <= limit else text[:limit] + "…"


def one_line(value: object) -> str:
    """`value` as text on one line: runs of whitespace, newlines included, become one space."""
    return " ".join(str(value).split())
