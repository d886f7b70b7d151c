"""A live terminal inside the TUI: a subagent's tmux window, shown through `tmux attach` on a pty of ours and
the pyte VT emulator.

Output is read on the event loop without blocking (yeetui.tui.pty_client), fed to pyte at once, and drawn
at most 30 times a second — a pane streaming fast costs the rest of the UI one repaint per frame, not one per
chunk. While the pane has focus, keys go to the program (tmux, and through it the agent's window);
`ctrl+]` gives the focus back (the `Released` message), as in telnet. Closing the widget kills the client and
closes the pty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from yeetui.tui.pty_client import PtyClient

if TYPE_CHECKING:
    import pyte

FRAME = 1 / 30
RELEASE_KEY = "ctrl+right_square_bracket"
_KEYS = {
    "enter": b"\r", "tab": b"\t", "backspace": b"\x7f", "escape": b"\x1b", "up": b"\x1b[A", "down": b"\x1b[B",
    "right": b"\x1b[C", "left": b"\x1b[D", "home": b"\x1b[H", "end": b"\x1b[F", "pageup": b"\x1b[5~",
    "pagedown": b"\x1b[6~", "delete": b"\x1b[3~", "insert": b"\x1b[2~", "shift+tab": b"\x1b[Z",
}
_NAMES = {"brown": "yellow", "default": None}


def key_bytes(key: str, character: str | None) -> bytes | None:
    """What a terminal sends for a Textual key: named keys, ctrl+letter, else the character typed."""
    if key in _KEYS:
        return _KEYS[key]
    if key.startswith("ctrl+") and len(key) == 6 and key[5].isalpha():
        return bytes([ord(key[5].lower()) - ord("a") + 1])
    if character and character.isprintable():
        return character.encode("utf-8")
    return None


def _color(value: str) -> str | None:
    if value in _NAMES:
        return _NAMES[value]
    if len(value) == 6 and all(c in "0123456789abcdefABCDEF" for c in value):
        return f"#{value}"
    if value.startswith("bright"):
        return "bright_" + (_NAMES.get(value[6:]) or value[6:])
    return value


def _style(char: pyte.screens.Char, *, cursor: bool = False) -> Style:
    return Style(color=_color(char.fg), bgcolor=_color(char.bg), bold=char.bold, italic=char.italics,
                 underline=char.underscore, strike=char.strikethrough, reverse=char.reverse != cursor)


class EmbeddedPane(Widget, can_focus=True):
    """Runs `argv` (e.g. `tmux -L … attach -t …`) on a pty and shows its screen."""

    DEFAULT_CSS = """
    EmbeddedPane { height: 1fr; background: $surface; border: round $border-blurred; }
    EmbeddedPane:focus { border: round $border; }
    """

    class Released(Message):
        """The user gave the focus back (ctrl+]); the pane stays open."""

    class Exited(Message):
        """The program in the pane ended (the window closed, or tmux detached)."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, title: str = "",
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.argv = list(argv)
        self.env = env
        self.border_title = title
        self.border_subtitle = "ctrl+]: back to yeetui"
        import pyte  # on use: with wcwidth ~15 ms of every start-up (the main screen imports this module)

        self.screen_model = pyte.Screen(80, 24)
        self.stream = pyte.ByteStream(self.screen_model)
        self.client: PtyClient | None = None
        self._dirty = False
        self.bytes_seen = 0

    def _exited(self) -> None:
        self.post_message(self.Exited())

    def on_mount(self) -> None:
        cols, rows = self._cells()
        self.screen_model.resize(lines=rows, columns=cols)
        self.client = PtyClient(self.argv, cols=cols, rows=rows, env=self.env, on_output=self._output,
                                on_exit=self._exited)
        self.client.start()
        self.set_interval(FRAME, self._paint, name="embedded-pane-frame")

    def on_unmount(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    def _cells(self) -> tuple[int, int]:
        return max(self.content_size.width, 10), max(self.content_size.height, 3)

    def on_resize(self, event: events.Resize) -> None:
        cols, rows = self._cells()
        self.screen_model.resize(lines=rows, columns=cols)
        if self.client is not None:
            self.client.resize(cols, rows)
        self._dirty = True

    def _output(self, data: bytes) -> None:
        self.bytes_seen += len(data)
        self.stream.feed(data)
        self._dirty = True

    def _paint(self) -> None:
        if self._dirty:
            self._dirty = False
            self.refresh()

    def text(self) -> str:
        """The screen as plain text (for tests and the user's copy)."""
        return "\n".join(self.screen_model.display)

    def render_line(self, y: int) -> Strip:
        model = self.screen_model
        if y >= model.lines:
            return Strip.blank(self.size.width)
        row = model.buffer[y]
        cursor = self.has_focus and y == model.cursor.y and not model.cursor.hidden
        segments = []
        for x in range(min(model.columns, self.content_size.width)):
            char = row[x]
            segments.append(Segment(char.data or " ", _style(char, cursor=cursor and x == model.cursor.x)))
        return Strip(Segment.simplify(segments))

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        if event.key == RELEASE_KEY:
            self.post_message(self.Released())
            return
        data = key_bytes(event.key, event.character)
        if data is not None and self.client is not None:
            self.client.write(data)

    def on_paste(self, event: events.Paste) -> None:
        event.stop()
        if self.client is not None:
            self.client.write(event.text.encode("utf-8"))
