"""No control character reaches the terminal from what a widget shows.

Model answers, tool output, a child's report and a session's title are shown as they were written, and any of
them may hold escape sequences: to retitle the window, write the clipboard (OSC 52), clear the screen or move
the cursor and overwrite a line. Textual writes a widget's text to the terminal as it is, so the app filters
every line it draws (`YeetuiApp.get_line_filters`): control characters go, the printable rest of a sequence
stays as plain text. They take no cells, so a line keeps its width."""

from __future__ import annotations

import re

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls (escape, bell, carriage return …; tab and newline kept), delete, and C1 controls (CSI `\\x9b`…)."""


class TerminalControls(LineFilter):
    """Removes control characters from the text of every segment drawn."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        search = _CONTROLS.search
        if not any(search(segment.text) for segment in segments):
            return segments
        return [Segment(_CONTROLS.sub("", text), style, control) if control is None else Segment(text, style, control)
                for text, style, control in segments]
