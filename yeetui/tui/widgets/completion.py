"""Completion for the composer: `/commands` at the start, `@profile` and `@path` anywhere.

The matching is plain functions (what to complete, what matches); `CompletionPopup` only shows the
candidates as an overlay above the composer and never takes focus — the composer drives it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

MAX_ROWS = 8

Location = tuple[int, int]
_MENTION_RE = re.compile(r"(?:^|\s)@(?P<prefix>[^\s@]*)$")


@dataclass(frozen=True, slots=True)
class CompletionContext:
    """The token under the cursor that can be completed, as a (row, column) range of the text."""

    kind: Literal["command", "mention"]
    prefix: str
    """What the user typed after the `/` or `@`."""
    start: Location
    end: Location


@dataclass(frozen=True, slots=True)
class Candidate:
    value: str
    """What replaces the token: `/oracle`, `@oracle`, `@src/app.py`."""
    help: str = ""
    kind: Literal["command", "agent", "file"] = "command"

    @property
    def insert_text(self) -> str:
        """Directories keep the cursor right after the `/` so completion can go one level deeper."""
        return self.value if self.value.endswith("/") else self.value + " "


def find_context(line: str, row: int, column: int) -> CompletionContext | None:
    """The completable token ending at the cursor on `line` (row `row`), if any."""
    before = line[:column]
    if row == 0 and before.startswith("/") and not any(ch.isspace() for ch in before):
        return CompletionContext("command", before[1:], (0, 0), (row, column))
    match = _MENTION_RE.search(before)
    if match is not None:
        start = match.start("prefix") - 1
        return CompletionContext("mention", match.group("prefix"), (row, start), (row, column))
    return None


def match_score(query: str, name: str) -> int | None:
    """Lower is better: prefix 0, substring 1, subsequence 2; None when `query` does not match `name`."""
    q, n = query.lower(), name.lower()
    if not q or n.startswith(q):
        return 0
    if q in n:
        return 1
    it = iter(n)
    if all(ch in it for ch in q):
        return 2
    return None


def rank(query: str, items: Iterable[Candidate], key: Callable[[Candidate], str]) -> list[Candidate]:
    """Matching items, best first; ties keep their given order."""
    scored = [(score, index, item) for index, item in enumerate(items)
              if (score := match_score(query, key(item))) is not None]
    scored.sort(key=lambda entry: (entry[0], entry[1]))
    return [item for _, _, item in scored]


def candidates(context: CompletionContext, *, commands: Sequence[tuple[str, str]], profiles: Sequence[str],
               file_source: Callable[[str], list[str]], limit: int = MAX_ROWS) -> list[Candidate]:
    """What to offer for `context`: commands for `/`, profiles then files for `@`."""
    if context.kind == "command":
        items = [Candidate(name if name.startswith("/") else "/" + name, help_, "command")
                 for name, help_ in commands]
        return rank(context.prefix, items, key=lambda c: c.value[1:])[:limit]
    # `@` shares its prefix between delegating to a profile and mentioning a file: both are ranked by how well
    # they match (a file whose name starts with what was typed beats a profile that only holds its letters in
    # order: `@ca` → `@calc.py` before `@orchestrator`); on a tie the profile comes first.
    agents = [Candidate("@" + p, "agent", "agent") for p in profiles]
    try:
        paths = file_source(context.prefix)
    except OSError:  # an unreadable directory means no file rows, not a broken composer
        paths = []
    files = [Candidate("@" + path, "directory" if path.endswith("/") else "file", "file") for path in paths]
    ranked = rank(context.prefix, [*agents, *files], key=lambda c: c.value[1:])
    if any(c.kind == "file" for c in ranked):  # profiles take at most half the rows when files match too
        extra = [c for c in ranked if c.kind == "agent"][limit // 2:]
        ranked = [c for c in ranked if c not in extra]
    return ranked[:limit]


class CompletionPopup(OptionList, can_focus=False):
    """The candidate list, drawn over the conversation just above the composer."""

    DEFAULT_CSS = """
    CompletionPopup {
        overlay: screen;
        constrain: inside inside;
        display: none;
        width: 100%;
        max-width: 72;
        height: auto;
        max-height: 10;
        border: round $accent 70%;
        background: $panel;
        padding: 0;
        & > .option-list--option-highlighted { background: $accent 30%; }
    }
    """

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]  # Widget's own keywords, passed through
        self.items: list[Candidate] = []
        self.context: CompletionContext | None = None

    @property
    def is_open(self) -> bool:
        return bool(self.display) and bool(self.items)

    def show(self, context: CompletionContext, items: list[Candidate]) -> None:
        self.context, self.items = context, items
        if not items:
            self.hide()
            return
        self.set_options(Option(self._prompt(item)) for item in items)
        self.highlighted = 0
        self.styles.offset = (0, -(len(items) + 2))  # above the composer's top edge
        self.display = True

    def hide(self) -> None:
        self.display = False
        self.items, self.context = [], None

    def move(self, delta: int) -> None:
        if self.items:
            current = self.highlighted or 0
            self.highlighted = (current + delta) % len(self.items)

    @property
    def selected(self) -> Candidate | None:
        if not self.is_open or self.highlighted is None:
            return None
        return self.items[self.highlighted]

    @staticmethod
    def _prompt(item: Candidate) -> Content:
        return Content.assemble((item.value, "bold"), ("  " + item.help, "dim") if item.help else "")
