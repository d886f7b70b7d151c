"""The help screen: every key and every slash command, from lists the main screen builds."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

NAME_CHARS = 28
"""A key or command usage longer than this is cut (with …) so the description keeps its column."""


def _cut(text: str) -> str:
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…"


class HelpScreen(ModalScreen[None]):
    """Two sections, Keys and Commands: a name column and a description column that wraps."""

    BINDINGS = [
        Binding("escape,q", "close", "Close", id="help.close"),
    ]
    """
    | Key(s) | Description |
    | :- | :- |
    | escape, q | Close the help. |
    """

    AUTO_FOCUS = "#help-scroll"

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
        #help-box {
            width: 90%;
            max-width: 100;
            height: 90%;
            border: round $primary;
            border-title-color: $primary;
            border-subtitle-color: $text-muted;
            background: $surface;
            padding: 0 1;
        }
        #help-scroll { height: 1fr; }
        .help-heading { text-style: bold; color: $primary; margin-top: 1; }
        .help-table {
            grid-size: 2;
            grid-columns: auto 1fr;
            grid-gutter: 0 2;
            height: auto;
        }
        .help-name { color: $accent; text-style: bold; width: auto; }
        .help-text { width: 1fr; }
        .help-empty { color: $text-muted; }
    }
    """

    def __init__(self, keys: list[tuple[str, str]], commands: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = list(keys)
        self.commands = list(commands)

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box") as box:
            box.border_title = "help"
            box.border_subtitle = "esc / q close"
            with VerticalScroll(id="help-scroll"):
                yield from self._section("Keys", self.keys, "help-keys")
                yield from self._section("Commands", self.commands, "help-commands")

    def _section(self, heading: str, rows: list[tuple[str, str]], section_id: str) -> ComposeResult:
        yield Static(heading, classes="help-heading")
        if not rows:
            yield Static("(none)", classes="help-empty")
            return
        with Grid(id=section_id, classes="help-table"):
            for name, text in rows:
                yield Static(Content(_cut(name)), classes="help-name")
                yield Static(Content(text), classes="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
