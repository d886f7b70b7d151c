"""The inbox panel: completions, review verdicts, interjections, orchestrator progress, permission requests.

Attributes down: `set_items`, `add_item`, `set_status` with the store's `InboxItem`s. Messages up:
`InboxPanel.Action` (open / accept / dismiss / reply) for the highlighted item; persisting the new status
is the screen's job. The panel updates its own view at once: opening, accepting or replying marks the item
read (no longer bold, no dot), dismissing hides it. Dismissed items are hidden, not dimmed. Items are shown
newest first, two lines each: kind badge + title, then a one-line preview of the body.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Literal

from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist

from yeetui.store.payloads import Completion, Interjection
from yeetui.store.records import InboxItem
from yeetui.tui.widgets.render_text import inline_markdown

InboxAction = Literal["open", "accept", "dismiss", "reply", "merge", "worktree"]
EMPTY_TEXT = "nothing in the inbox"
PREVIEW_CHARS = 200
"""Characters of the body kept for the preview line (the panel's width cuts it further, with …)."""

_SEVERITY = {"aside": ("»", "$accent"), "concern": ("!", "$warning"), "blocker": ("‼", "bold $error")}


def kind_badge(item: InboxItem) -> tuple[str, str, str]:
    """(icon, tag, style) for an item: `✓ approve` in success colour, `! concern` in warning colour, …"""
    payload = item.payload
    kind = item.kind
    match payload:
        case Completion() if kind == "review":
            if payload.verdict == "approve":
                return "✓", "approve", "$success"
            if payload.verdict == "request_changes":
                return "✗", "request changes", "$warning"
            return "?", "review", "$primary"
        case Completion():
            status = payload.run_status
            return ("✓", status, "$success") if status == "completed" else ("✗", status, "$error")
        case Interjection():
            icon, style = _SEVERITY.get(payload.severity, ("»", "$accent"))
            return icon, payload.severity, style
    if kind == "permission":
        return "?", "permission", "bold $warning"
    if kind.startswith("orchestr") or kind == "progress":
        return "▸", "progress", "$primary"
    return "•", kind, "$foreground-muted"


def preview_line(body: str) -> str:
    """The first non-blank line of `body`, whitespace collapsed, capped."""
    for line in body.splitlines():
        text = " ".join(line.split())
        if text:
            return text[:PREVIEW_CHARS]
    return ""


def item_content(item: InboxItem) -> Content:
    """Two lines: `● ✓ oracle#4 — completed` (bold while unread) and a muted preview of the body."""
    icon, tag, style = kind_badge(item)
    unread = item.status == "unread"
    parts: list[Content] = [
        Content.styled("● ", "bold $accent") if unread else Content("  "),
        Content.styled(f"{icon} ", style),
    ]
    if tag and tag.lower() not in item.title.lower():
        parts.append(Content.styled(f"{tag} · ", style))
    parts.append(Content(" ".join(item.title.split()) or item.kind))
    head = Content.assemble(*parts)
    if unread:
        head = head.stylize("bold")
    preview = preview_line(item.body)
    if not preview:
        return head
    return Content("\n").join([head, Content.assemble("  ", inline_markdown(preview)).stylize("$foreground-muted")])


def _newest_first(item: InboxItem) -> tuple[Any, int]:
    return item.created_at, item.id


class InboxPanel(OptionList):
    """What the subagents sent back, with unread state and actions."""

    BINDINGS = [
        Binding("enter", "open", "Open", id="inbox.open"),
        Binding("alt+a", "accept", "Accept", id="inbox.accept"),
        Binding("alt+d", "dismiss", "Dismiss", id="inbox.dismiss"),
        Binding("alt+r", "reply", "Reply", id="inbox.reply"),
        Binding("alt+m", "merge", "Merge", id="inbox.merge"),
        Binding("alt+w", "worktree", "Worktree", id="inbox.worktree"),
    ]
    """
    No letter alone: a word typed while the inbox has the focus goes into the composer (the main screen sends
    it there), so typing "make" never merges anything.

    | Key(s) | Description |
    | :- | :- |
    | enter | Open the item (its session, or its details); marks it read. |
    | alt+a | Accept (an interjection's advice, a review's verdict). |
    | alt+d | Dismiss: the item is hidden. |
    | alt+r | Reply to the agent that sent it. |
    | alt+m | Merge the branch the item's agent worked on (its worktree) into the user's branch, once confirmed. |
    | alt+w | Open a shell in the item's agent's worktree (a split of the user's tmux, a terminal, or the `cd`). |
    """

    DEFAULT_CSS = """
    InboxPanel {
        width: 38;
        height: 1fr;
        max-height: 100%;
        padding: 0;
        border: round $border-blurred;
        border-title-color: $text-muted;
        background: $surface;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        &:focus { border: round $border; border-title-color: $text; }
        & > .option-list--option { padding: 0 1 0 0; }
        & > .option-list--option-highlighted { color: $foreground; background: transparent; text-style: none; }
    }
    """

    unread: reactive[int] = reactive(0)
    """How many items are unread (the screen shows it as a badge)."""

    class Action(Message):
        """The user asked for `action` on inbox item `item_id`."""

        def __init__(self, item_id: int, action: InboxAction) -> None:
            super().__init__()
            self.item_id = item_id
            self.action = action

    def __init__(self, *, limit: int = 200, name: str | None = None, id: str | None = None,
                 classes: str | None = None, disabled: bool = False) -> None:
        super().__init__(name=name, id=id, classes=classes, disabled=disabled, markup=False)
        self.limit = limit
        """At most this many items are listed (the newest)."""
        self._items: dict[int, InboxItem] = {}
        self.border_title = "inbox"

    # -- attributes down --------------------------------------------------------------------------

    @property
    def items(self) -> Mapping[int, InboxItem]:
        """Every item the panel knows, dismissed ones included, by id."""
        return self._items

    @property
    def selected_item_id(self) -> int | None:
        option = self.highlighted_option
        return int(option.id) if option is not None and option.id is not None else None

    def set_items(self, items: Iterable[InboxItem]) -> None:
        """Show exactly these items (any order; they are sorted newest first)."""
        self._items = {item.id: item for item in items}
        self._rebuild()

    def add_item(self, item: InboxItem) -> None:
        """Add an item, or replace the one with the same id. A new item is brought into view (the cursor goes
        to it, at the top) unless the user is moving through the list: then their cursor stays put."""
        new = item.id not in self._items
        self._items[item.id] = item
        self._rebuild()
        if new and not self.has_focus and item.status != "dismissed" and self.selected_item_id != item.id:
            self.highlighted = 0
            self.scroll_home(animate=False)

    def set_status(self, item_id: int, status: str) -> None:
        """`unread`, `read` or `dismissed`; an unknown id is ignored (the item belongs to another tree)."""
        item = self._items.get(item_id)
        if item is None or item.status == status:
            return
        self._items[item_id] = replace(item, status=status)  # type: ignore[arg-type]  # callers pass InboxStatus
        if "dismissed" in (status, item.status):
            self._rebuild()
        else:
            try:
                self.replace_option_prompt(str(item_id), item_content(self._items[item_id]))
            except OptionDoesNotExist:
                pass  # beyond `limit`: not on show
            self._count()

    def _rebuild(self) -> None:
        selected, index = self.selected_item_id, self.highlighted
        shown = sorted((i for i in self._items.values() if i.status != "dismissed"), key=_newest_first,
                       reverse=True)[: self.limit]
        if shown:
            self.set_options(Option(item_content(item), id=str(item.id)) for item in shown)
            ids = [item.id for item in shown]
            self.highlighted = ids.index(selected) if selected in ids else min(index or 0, len(ids) - 1)
        else:
            self.set_options([Option(Content.styled(EMPTY_TEXT, "$foreground-muted italic"), disabled=True)])
        self._count()

    def _count(self) -> None:
        self.unread = sum(1 for item in self._items.values() if item.status == "unread")

    def watch_unread(self, unread: int) -> None:
        self.border_title = f"inbox · {unread} unread" if unread else "inbox"

    def on_mount(self) -> None:
        if not self._items:
            self._rebuild()

    # -- messages up ------------------------------------------------------------------------------

    def _act(self, action: InboxAction) -> None:
        item_id = self.selected_item_id
        if item_id is None:
            self.notify(f"The inbox is empty: nothing to {action}.", severity="warning", timeout=3)
            return
        self.post_message(self.Action(item_id, action))
        self.set_status(item_id, "dismissed" if action == "dismiss" else "read")

    def action_open(self) -> None:
        self._act("open")

    def action_select(self) -> None:
        """A click on an item (OptionList's select) opens it."""
        self._act("open")

    def action_accept(self) -> None:
        self._act("accept")

    def action_dismiss(self) -> None:
        self._act("dismiss")

    def action_merge(self) -> None:
        self._act("merge")

    def action_worktree(self) -> None:
        self._act("worktree")

    def action_reply(self) -> None:
        self._act("reply")

    def _on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()  # the panel speaks only in `Action`s; the screen may hold other option lists
