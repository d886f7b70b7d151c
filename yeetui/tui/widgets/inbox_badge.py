"""The inbox's unread count, at the right of the header line, while the inbox itself is hidden.

`● 2 unread · ctrl+b`. Attributes down: the screen sets `unread` to the hidden inbox's count (0 while the inbox
shows, so the badge hides itself then).
"""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static


class InboxBadge(Static):
    """How many inbox items are unread while the inbox is hidden (toggled off, or a narrow terminal)."""

    DEFAULT_CSS = """
    InboxBadge {
        width: auto;
        height: 1;
        padding: 0 1;
        background: $panel;
        text-wrap: nowrap;
        display: none;
        &.-unread { display: block; }
    }
    """

    unread: reactive[int] = reactive(0)
    """Unread items of the hidden inbox; 0 hides the badge."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", id=id, classes=classes, markup=False)

    def watch_unread(self, unread: int) -> None:
        self.set_class(unread > 0, "-unread")
        self.update(Content.assemble(("● ", "bold $accent"), (f"inbox {unread} unread", "bold"),
                                     (" · ctrl+b", "$foreground-muted")) if unread else "")
