"""Cutting text down to size, one way everywhere: what is kept, and a note saying how much was left out.

`cap` is for text a model or a person reads in full (tool output, a diff, an announcement): it keeps the
head, or the head and the tail, and says how many characters are omitted. `clip` is for a short label on a
single line (a ledger activity, a title): it cuts and ends with `…`.
"""

from __future__ import annotations

import re
from typing import Literal

Keep = Literal["head", "middle", "tail"]


def cap(text: str, limit: int, *, keep: Keep = "head", what: str = "characters", note: str | None = None) -> str:
    """`text` if it fits in `limit` characters; else its head (`keep="head"`), its head and tail
    (`keep="middle"`, for output whose end matters, like a command's error) or its tail (`keep="tail"`, for a
    history whose latest part matters), with a note of what is omitted. `note` replaces the note's wording for
    a head cut; `{omitted}` in it becomes the count."""
    if len(text) <= limit:
        return text
    omitted = len(text) - limit
    if note is not None and keep == "head":
        return f"{text[:limit]}\n{note.format(omitted=omitted)}"
    if keep == "tail":
        return f"[… {omitted} earlier {what} omitted]\n{text[omitted:]}"
    if keep == "middle":
        head = limit * 2 // 3
        return f"{text[:head]}\n[… {omitted} {what} omitted …]\n{text[len(text) - (limit - head):]}"
    return f"{text[:limit]}\n[… {omitted} more {what} omitted]"


def clip(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: when longer, cut (trailing space dropped) and ended with `…`."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def clip_words(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, cut after a whole word and ended with `…` when longer (a word
    longer than the room is cut with `clip`)."""
    if len(text) <= limit:
        return text
    head = text[: max(limit - 1, 0)]
    if " " in head and text[len(head)] != " ":
        head = head[: head.rindex(" ")]
    return clip(head.rstrip(" ,;:-–—"), limit - 1) + "…" if head.strip() else clip(text, limit)


def one_line(value: object) -> str:
    """`value` as text on one line: runs of whitespace, newlines included, become one space."""
    return " ".join(str(value).split())


def seconds_text(seconds: float) -> str:
    """`3 s`, `0.5 s`, `120 s`: a duration as people write it (a deadline's remainder is 2.99919 s)."""
    return f"{seconds:.0f} s" if seconds >= 10 or abs(seconds - round(seconds)) < 0.05 else f"{seconds:.1f} s"


_TERMINAL_CONTROLS = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]"  # CSI: cursor moves, screen clears, colours
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: window title, clipboard (52), hyperlinks
    r"|[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|[ -/]*[0-~]?)"  # any other escape
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # other C0 controls (\r included; \n and \t kept) and C1 controls
)


def terminal_safe(text: str) -> str:
    """`text` without escape sequences and control characters (newlines and tabs kept): what a model wrote
    may not write the clipboard, retitle the window, clear the screen or overwrite a line on the user's
    terminal."""
    return _TERMINAL_CONTROLS.sub("", text)


def dollars(amount: float | None) -> str:
    """`$0.42`, `$0.0012` (small amounts keep two significant digits instead of showing `$0.00`), `$?`
    when the price is unknown."""
    if amount is None:
        return "$?"
    if amount == 0 or abs(amount) >= 0.01:
        return f"${amount:.2f}"
    return f"${amount:.2g}" if abs(amount) >= 0.0001 else "<$0.0001"


TITLE_CHARS = 60
"""How long a session title made from a prompt may be."""


def title_from(prompt: str, limit: int = TITLE_CHARS) -> str:
    """A session's title from the prompt that began it: its first non-blank line on one line, cut at a word
    boundary with `…` when too long (`fix the flaky login test in …`). Empty for a blank prompt."""
    line = next((one_line(part) for part in prompt.splitlines() if part.strip()), "")
    if len(line) <= limit:
        return line
    head = line[: limit - 1]
    if " " in head[limit // 2:]:  # cut at the last space when it keeps at least half the room
        head = head[: head.rindex(" ")]
    return head.rstrip(" ,;:.-") + "…"


def tokens_text(count: int) -> str:
    """`850 tok`, `12k tok`, `1.2M tok`: a token count short enough for a status line."""
    if count < 1000:
        return f"{count} tok"
    if count < 1_000_000:
        return f"{count / 1000:.1f}k tok" if count < 10_000 else f"{count // 1000}k tok"
    return f"{count / 1_000_000:.1f}M tok"
