"""The header line: which session is on screen.

`primary “fix the flaky login test” › orchestrator#2 › builder#3 · completed · type to follow up · claude-sonnet-4-5`

Attributes down: the screen calls `show(heading)` with a `SessionHeading` whenever the session on screen
or its status changes. The session on screen is bold, the sessions above it muted, the status coloured as in
the ledger.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from yeetui.subagents.heading import FOLLOW_UP, SessionHeading
from yeetui.subagents.ledger import ANSWERED
from yeetui.tui.widgets.ledger import STATUS_STYLES

_WORD_STATUS = {"needs permission": "waiting_permission", "needs input": "waiting_user", "timed out": "timeout"}


def heading_content(heading: SessionHeading) -> Content:
    """The heading styled: muted ancestors, the session on screen in bold, a coloured status word."""
    sep = Content.styled(" › ", "$foreground-muted")
    dot = Content.styled(" · ", "$foreground-muted")
    crumbs: list[Content] = []
    for index, label in enumerate(heading.trail):
        text = f"{label} “{heading.title}”" if index == 0 and heading.title else label
        last = index == len(heading.trail) - 1
        crumbs.append(Content.styled(text, "bold" if last else "$foreground-muted"))
    parts = [sep.join(crumbs)]
    style = STATUS_STYLES.get(_WORD_STATUS.get(heading.status, heading.status), "$foreground-muted")
    parts.append(Content.styled(heading.status, STATUS_STYLES[ANSWERED] if heading.status == ANSWERED else style))
    if heading.follow_up:
        parts.append(Content.styled(FOLLOW_UP, "$foreground-muted"))
    if heading.model:
        parts.append(Content.styled(heading.model, "$foreground-muted"))
    return dot.join(parts)


class SessionHeader(Static):
    """One line naming the session on screen, its place in the tree, its status and model."""

    DEFAULT_CSS = """
    SessionHeader {
        height: 1;
        padding: 0 1;
        background: $panel;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", id=id, classes=classes, markup=False)
        self.heading: SessionHeading | None = None

    def show(self, heading: SessionHeading | None) -> None:
        """Name `heading`'s session (None: nothing on screen yet)."""
        if heading == self.heading:
            return
        self.heading = heading
        self.update(heading_content(heading) if heading is not None else "")
