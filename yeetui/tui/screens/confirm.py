"""The confirmation asked before what changes the user's repository (merge, discard) or stops work (cancel, abort).

`Merge builder#1's branch into main?`, a line of detail, and two buttons: "No" has the focus, the action's
own word is beside it. Returns True only for that button. It is a `DeliberateScreen`: keys typed ahead (the
rest of a word typed into a panel, an enter meant for the composer) do nothing, no letter answers, and escape
says no once it listens.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, Static

from yeetui.tui.screens.deliberate import DeliberateScreen

YES, NO = "confirm-yes", "confirm-no"


class ConfirmScreen(DeliberateScreen[bool]):
    """A yes/no question whose yes takes a deliberate act."""

    BINDINGS = [
        Binding("escape", "no", "No"),
        Binding("left", "app.focus_previous", show=False),
        Binding("right", "app.focus_next", show=False),
    ]
    """
    | Key(s) | Description |
    | :- | :- |
    | escape | No. |
    | tab, ←, → | Move between the buttons; enter presses the focused one. |
    """

    AUTO_FOCUS = f"#{NO}"
    BOX = "#confirm-box"
    READY = "tab/→ move · enter choose · esc no"

    DEFAULT_CSS = """
    ConfirmScreen {
        align: center middle;
        #confirm-box {
            width: 72;
            max-width: 90%;
            height: auto;
            max-height: 100%;
            border: thick $warning;
            border-title-color: $warning;
            border-subtitle-color: $text-muted;
            background: $surface;
            padding: 0 1;
        }
        #confirm-question { text-style: bold; }
        #confirm-detail { color: $text-muted; margin-top: 1; }
        #confirm-buttons { height: auto; width: 100%; margin-top: 1; align-horizontal: center; }
        #confirm-buttons Button { margin: 0 1; min-width: 12; }
        &.-settling #confirm-buttons Button { text-opacity: 60%; }
    }
    """

    def __init__(self, question: str, detail: str = "", *, yes: str = "Yes", title: str = "confirm") -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.yes = yes
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box") as box:
            box.border_title = self.title_text
            yield Static(Content(self.question), id="confirm-question")
            if self.detail:
                yield Static(Content(self.detail), id="confirm-detail")
            with Horizontal(id="confirm-buttons"):
                yield Button("No (esc)", id=NO, variant="primary")
                yield Button(self.yes, id=YES, variant="error")

    def pressed(self, button: Button) -> None:
        self.dismiss(button.id == YES)

    def action_no(self) -> None:
        self.dismiss(False)
