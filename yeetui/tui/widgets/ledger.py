"""The status ledger strip: one compact line per live run.

Attributes down: the main screen calls `update_row(run_id, row)` for every `LedgerChanged` event. Messages
up: `LedgerPanel.Action` (open / steer / cancel / abort) for the highlighted row. The domain ledger decides
which rows exist and how long finished ones linger; this widget only draws them, and redraws running rows
once a second so their elapsed time ticks (one interval for the whole panel).

When no row is left the panel collapses (CSS class `-empty`, `display: none`) instead of showing a
placeholder: at 80×24 an empty strip is a wasted line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from yeetui.events import RunStatus
from yeetui.subagents.ledger import ANSWERED, WATCHING, LedgerRow, format_row, status_word, tree_order

LedgerAction = Literal["open", "steer", "cancel", "abort", "watch", "embed"]

STATUS_STYLES: dict[str, str] = {
    RunStatus.QUEUED: "$foreground-muted",
    RunStatus.RUNNING: "$primary",
    RunStatus.WAITING_PERMISSION: "bold $warning",
    RunStatus.WAITING_USER: "$warning",
    RunStatus.COMPLETED: "$success",
    RunStatus.FAILED: "bold $error",
    RunStatus.TIMEOUT: "$error",
    RunStatus.CANCELLED: "$foreground-muted",
    RunStatus.INTERRUPTED: "$warning",
    RunStatus.BUDGET_EXHAUSTED: "bold $error",
    RunStatus.QUOTA_EXHAUSTED: "bold $error",
    WATCHING: "$accent",
    ANSWERED: "$success",
}
"""How the status word of a row is coloured; theme variables, so every theme applies."""


def indent(depth: int) -> str:
    """What goes before a row `depth` levels below the top: `└ ` under its parent, two spaces a level."""
    return "  " * (depth - 1) + "└ " if depth > 0 else ""


def row_content(row: LedgerRow, depth: int = 0) -> Content:
    """`format_row`'s text with the label in bold and the status word coloured, indented under its parent."""
    line = format_row(row)
    content = Content(line)
    if line.startswith(f"{row.label} "):
        head = line.split(" · ", 1)[0]
        content = content.stylize("bold", 0, len(row.label))
        style = STATUS_STYLES.get(ANSWERED if status_word(row) == ANSWERED else str(row.status))
        if style:
            content = content.stylize(style, len(row.label) + 1, len(head))
    prefix = indent(depth)
    return Content.assemble(Content.styled(prefix, "$foreground-muted"), content) if prefix else content


class LedgerPanel(OptionList):
    """Every live session at a glance: `oracle#4 running · claude-sonnet-4-6 · 0:42 · $0.03 · reading …`,
    subagents indented under their parent's row."""

    BINDINGS = [
        Binding("enter", "open", "Open", show=False, id="ledger.open"),
        Binding("alt+s", "steer", "Steer", id="ledger.steer"),
        Binding("alt+c", "cancel", "Cancel", id="ledger.cancel"),
        Binding("alt+x", "abort", "Abort", id="ledger.abort"),
        Binding("alt+t", "watch", "Watch pane", id="ledger.watch"),
        Binding("alt+e", "embed", "Embed pane", id="ledger.embed"),
    ]
    """
    No letter alone: a word typed while the ledger has the focus goes into the composer (the main screen sends
    it there).

    | Key(s) | Description |
    | :- | :- |
    | enter | Open the selected run's session. |
    | alt+s | Steer the selected run (inject guidance). |
    | alt+c | Cancel the selected run gracefully, once confirmed. |
    | alt+x | Abort the selected run (hard kill), once confirmed. |
    | alt+t | Watch the run's tmux pane (a split of your tmux, a terminal window, or the command to type). |
    | alt+e | Show the run's tmux pane inside yeetui, under the conversation (ctrl+] gives the focus back). |
    """

    DEFAULT_CSS = """
    LedgerPanel {
        height: auto;
        max-height: 6;
        border: none;
        padding: 0 1;
        background: $surface;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        &:focus { border: none; }
        & > .option-list--option { padding: 0; }
        & > .option-list--option-highlighted { color: $foreground; background: transparent; text-style: none; }
        &.-empty { display: none; }
    }
    """

    class Action(Message):
        """The user asked for `action` on the run `run_id` (a watcher's row has id `watch:<session>`)."""

        def __init__(self, run_id: str, action: LedgerAction) -> None:
            super().__init__()
            self.run_id = run_id
            self.action = action

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None,
                 disabled: bool = False) -> None:
        super().__init__(name=name, id=id, classes=classes, disabled=disabled, markup=False)
        self._rows: dict[str, LedgerRow] = {}
        self._texts: dict[str, str] = {}
        """The text last drawn per run, so the tick only redraws rows whose text changed."""
        self._depths: dict[str, int] = {}
        """How deep each row sits in the tree on show (0: no parent row)."""
        self.add_class("-empty")

    # -- attributes down --------------------------------------------------------------------------

    @property
    def rows(self) -> Mapping[str, LedgerRow]:
        """The rows on show, by run id, in display order."""
        return self._rows

    @property
    def selected_run_id(self) -> str | None:
        option = self.highlighted_option
        return option.id if option is not None else None

    def update_row(self, run_id: str, row: LedgerRow | None) -> None:
        """Add, replace or (with `None`) remove the row of `run_id`. Rows show as the switcher's tree does:
        subagents under their parent's row, indented."""
        if row is None:
            if self._rows.pop(run_id, None) is not None:
                self._texts.pop(run_id, None)
                self._arrange()
        elif run_id in self._rows and self._rows[run_id].parent_session_id == row.parent_session_id:
            self._rows[run_id] = row
            self._draw(run_id)
        else:
            self._rows[run_id] = row
            self._arrange()
        self.set_class(not self._rows, "-empty")

    def _draw(self, run_id: str) -> None:
        """Redraw one row in place when its text changed."""
        content = row_content(self._rows[run_id], self._depths.get(run_id, 0))
        if self._texts.get(run_id) != content.plain:
            self._texts[run_id] = content.plain
            self.replace_option_prompt(run_id, content)

    def _arrange(self) -> None:
        """Lay the rows out as a tree (a row came or went); the cursor stays on its run."""
        selected = self.selected_run_id
        ordered = tree_order(self._rows.values())
        self._depths = {row.run_id: depth for row, depth in ordered}
        options = []
        for row, depth in ordered:
            content = row_content(row, depth)
            self._texts[row.run_id] = content.plain
            options.append(Option(content, id=row.run_id))
        self.set_options(options)
        if options:
            ids = [row.run_id for row, _ in ordered]
            self.highlighted = ids.index(selected) if selected in ids else 0

    def tick(self) -> None:
        """Redraw rows whose text changed since last drawn (elapsed time, mostly)."""
        for run_id, row in self._rows.items():
            if not (row.is_final or row.status in (WATCHING, RunStatus.QUEUED)):
                self._draw(run_id)

    def on_mount(self) -> None:
        self.set_interval(1.0, self.tick, name="ledger-tick")

    # -- messages up ------------------------------------------------------------------------------

    def _post(self, action: LedgerAction) -> None:
        run_id = self.selected_run_id
        if run_id is not None:
            self.post_message(self.Action(run_id, action))

    def action_open(self) -> None:
        self._post("open")

    def action_watch(self) -> None:
        self._post("watch")

    def action_embed(self) -> None:
        self._post("embed")

    def action_select(self) -> None:
        """A click on a row (OptionList's select) opens it."""
        self._post("open")

    def action_steer(self) -> None:
        self._post("steer")

    def action_cancel(self) -> None:
        self._post("cancel")

    def action_abort(self) -> None:
        self._post("abort")

    def _on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()  # the panel speaks only in `Action`s; the screen may hold other option lists
