"""The baseline for yeetui's time to first frame: a bare Textual app with a Header, a Markdown and an Input.

`bench/bench_tui.py` launches it in a pseudo-terminal exactly like yeetui and times until its marker
texts are on screen. Run alone: `python bench/tui_probe.py` (ctrl+q quits).
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Header, Input, Markdown

TITLE_MARKER = "PROBE-TITLE"
MARKDOWN_MARKER = "PROBE-MARKDOWN"
INPUT_MARKER = "PROBE-INPUT"

DOCUMENT = f"""\
# {MARKDOWN_MARKER}

A bare Textual app: a header, this **Markdown** document and an input below it.

- one
- two
"""


class ProbeApp(App):
    TITLE = TITLE_MARKER

    def compose(self) -> ComposeResult:
        yield Header()
        yield Markdown(DOCUMENT)
        yield Input(placeholder=INPUT_MARKER)


if __name__ == "__main__":
    ProbeApp().run()
