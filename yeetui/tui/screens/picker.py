"""A small modal list to pick one value from: the themes for `/theme`, the models of the configured providers
for `/model`. Returns the chosen value, or None (escape)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option


@dataclass(frozen=True, slots=True)
class Choice:
    value: str
    """What the picker returns (a theme name, `provider/model`)."""
    note: str = ""
    """Shown dimmed after the value (`strong`, `current`)."""


class PickerScreen(ModalScreen[str | None]):
    """A titled list of choices, the current one under the cursor; enter or a click picks."""

    BINDINGS = [
        Binding("escape", "close", "Close", id="picker.close"),
    ]
    """
    | Key(s) | Description |
    | :- | :- |
    | escape | Close without picking. |
    | enter | Pick the choice under the cursor. |
    """

    AUTO_FOCUS = "#picker-list"

    DEFAULT_CSS = """
    PickerScreen {
        align: center middle;
        #picker-box {
            width: auto;
            min-width: 40;
            max-width: 90%;
            height: auto;
            max-height: 80%;
            border: round $primary;
            border-title-color: $primary;
            border-subtitle-color: $text-muted;
            background: $surface;
            padding: 0 1;
        }
        #picker-list { height: auto; max-height: 24; width: auto; border: none; background: $surface; }
    }
    """

    def __init__(self, title: str, choices: Sequence[Choice], current: str | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.choices = list(choices)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-box") as box:
            box.border_title = self.title_text
            box.border_subtitle = "enter pick · esc close"
            yield OptionList(*(Option(self._prompt(c), id=c.value) for c in self.choices), id="picker-list")

    def _prompt(self, choice: Choice) -> Content:
        mark = "» " if choice.value == self.current else "  "
        return Content.assemble(mark, (choice.value, "bold"), (f"  {choice.note}", "dim") if choice.note else "")

    def on_mount(self) -> None:
        values = [c.value for c in self.choices]
        if self.current in values:
            self.query_one(OptionList).highlighted = values.index(self.current)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        self.dismiss(None)
