"""A tool call as a collapsible block: `▸ bash  pytest -q  ✓`, arguments and a result preview inside."""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.widgets import Collapsible, Static

from yeetui.messages import tool_outcome
from yeetui.tui.widgets.render_text import Item, preview, tool_arguments_text, tool_summary


class Entry:
    """Mixin for everything mounted directly in a ConversationView.

    `message_id` is the stored message the view renders (None for notices and other UI-only lines); the
    conversation unmounts and pages whole messages by it. `items` rebuild the entry once unmounted: the
    first view of a message carries the message and its tool results, the message's other views none.
    """

    message_id: int | None = None
    items: tuple[Item, ...] = ()


class ToolCallView(Entry, Collapsible):
    """One tool call. Arguments are known when the call is made; the result arrives later via `set_result`."""

    DEFAULT_CSS = """
    ToolCallView {
        height: auto;
        margin: 0 0 0 2;
        padding: 0;
        border-top: none;
        border-left: tall $secondary 50%;
        background: $surface;
        &.-first { margin: 1 0 0 2; }
        &.-error { border-left: tall $error; }
        &.-running { border-left: tall $warning 70%; }
        & > Contents { padding: 0 1 0 2; }
        & > CollapsibleTitle { padding: 0 1; }
        &.-error > CollapsibleTitle { color: $text-error; }
        & .tool-args { color: $text-muted; }
        & .tool-result { margin-top: 1; }
        &.-error .tool-result { color: $text-error; }
        & .tool-pending { color: $text-muted; text-style: italic; }
    }
    """

    def __init__(self, call_id: str, name: str, arguments: dict[str, Any] | None, *,
                 message_id: int | None = None) -> None:
        self.call_id = call_id
        self.tool_name = name
        self.arguments: dict[str, Any] | None = arguments
        self.message_id = message_id
        self.result: str | None = None
        self.is_error = False
        self._args = Static(self._args_content(), classes="tool-args")
        self._result = Static(Content("running…"), classes="tool-result tool-pending")
        # Classed as Collapsible's mount would class it: restyling a block once mounted costs more than
        # everything else about mounting it.
        super().__init__(self._args, self._result, title=self._make_title(), collapsed=True,  # type: ignore[arg-type]  # Content works; Textual types str
                         collapsed_symbol="▸", expanded_symbol="▾", classes="-collapsed -running")

    @property
    def has_call(self) -> bool:
        """False for a block made from a result alone (its call is older than what is loaded)."""
        return self.arguments is not None

    def set_arguments(self, arguments: dict[str, Any]) -> None:
        self.arguments = arguments
        self._args.update(self._args_content())
        self.title = self._make_title()  # type: ignore[assignment]  # a Content title, drawn as such

    def set_result(self, content: str, is_error: bool) -> None:
        self.result, self.is_error = content, is_error
        self._result.update(Content(preview(content)))
        update = self.is_attached  # a block not mounted yet is styled once, when it is
        self._result.remove_class("tool-pending", update=update)
        self.remove_class("-running", update=update)
        self.set_class(is_error, "-error", update=update)
        self.title = self._make_title()  # type: ignore[assignment]  # a Content title, drawn as such

    def mark_first(self, first: bool = True) -> None:
        """The first block of a run of them (a margin above it)."""
        self.set_class(first, "-first", update=self.is_attached)

    def _args_content(self) -> Content:
        if self.arguments is None:
            return Content("(call not loaded)")
        return Content(tool_arguments_text(self.tool_name, self.arguments))

    def _make_title(self) -> Content:
        """Title as Content, never markup: commands are full of `[` and `]`."""
        summary = tool_summary(self.tool_name, self.arguments or {})
        outcome = None if self.result is None else tool_outcome(self.result, self.is_error)
        status = {None: ("  ⋯", "dim"), "done": ("  ✓", "dim"), "error": ("  ✗ error", "bold"),
                  "denied": ("  ⊘ denied", "bold"), "interrupted": ("  ◌ interrupted", "bold")}[outcome]
        return Content.assemble((self.tool_name, "bold"), ("  " + summary, "") if summary else "", status)
