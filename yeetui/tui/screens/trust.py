"""The trust prompt: asked at start in a project whose own files (`.yeetui/config.yaml`, `.yeetui/agents/`,
`.claude/agents/`, `.opencode/agent(s)/`) ask for more rights than an untrusted project gets.

It lists exactly what trusting would grant, each with its file and line. Returns True to trust the project
(remembered, as `yeetui trust` does), False to go on without (its files may then only narrow rights, and it is
asked again next time). Keys typed ahead into the composer while yeetui starts must not trust by accident: the
prompt takes no key and no click until it has been on screen, with the keyboard quiet, for `SETTLE` seconds
(see `DeliberateScreen`: a tab and an enter typed as the prompt appears do nothing); then the safe answer has
the focus, and trusting takes a move to its button (tab, →) and enter, or a click. No letter answers, and the
bindings have no ids, so no keymap can rebind them.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Static

from yeetui.tui.screens.deliberate import DeliberateScreen

TRUST, NOT_NOW = "trust", "not-now"
SHOWN_GRANTS = 50
"""More than this and the list says how many more (`yeetui trust` prints them all)."""


class TrustScreen(DeliberateScreen[bool]):
    """`Trust the files in ~/src/cloned?` — what its files would grant, trust or not now."""

    SETTLE = 0.75
    BOX = "#trust-box"
    READY = "tab/→ move · enter choose · esc not now"

    BINDINGS = [
        Binding("escape", "not_now", "Not now"),
        Binding("left", "app.focus_previous", show=False),
        Binding("right", "app.focus_next", show=False),
    ]

    AUTO_FOCUS = f"#{NOT_NOW}"

    DEFAULT_CSS = """
    TrustScreen {
        align: center middle;
        #trust-box {
            width: 90%;
            max-width: 110;
            height: auto;
            max-height: 100%;
            border: thick $warning;
            border-title-color: $warning;
            border-subtitle-color: $text-muted;
            background: $surface;
            padding: 0 1;
        }
        #trust-title { text-style: bold; }
        #trust-project { color: $accent; margin-bottom: 1; }
        #trust-grants {
            height: auto;
            max-height: 12;
            border: round $border-blurred;
            background: $background;
            padding: 0 1;
        }
        #trust-explain { color: $text-muted; margin-top: 1; }
        #trust-buttons { height: auto; margin-top: 1; align-horizontal: center; }
        #trust-buttons Button { margin: 0 1; min-width: 16; }
        &.-settling #trust-buttons Button { text-opacity: 60%; }
    }
    """

    def __init__(self, project: Path, grants: list[str]) -> None:
        super().__init__()
        self.project = project
        self.grants = grants

    def compose(self) -> ComposeResult:
        with Vertical(id="trust-box") as box:
            box.border_title = "trust this project?"
            yield Static("This project's own files ask for more rights than an untrusted project gets:",
                         id="trust-title")
            yield Static(Content(str(self.project)), id="trust-project")
            shown = self.grants[:SHOWN_GRANTS]
            lines = [f"• {grant}" for grant in shown]
            if len(self.grants) > len(shown):
                lines.append(f"… and {len(self.grants) - len(shown)} more (`yeetui trust` lists them all)")
            with VerticalScroll(id="trust-grants"):
                yield Static(Content("\n".join(lines)), id="trust-grants-text")
            yield Static("Trust it only if you trust whoever wrote these files: they come with the repository. "
                         "Not now: they may only narrow rights, and you are asked again next time. "
                         "`yeetui trust --revoke` takes trust back.", id="trust-explain")
            with Horizontal(id="trust-buttons"):
                yield Button("Not now (esc)", id=NOT_NOW, variant="primary")
                yield Button("Trust this project", id=TRUST, variant="warning")

    def pressed(self, button: Button) -> None:
        self.dismiss(button.id == TRUST)

    def action_not_now(self) -> None:
        self.dismiss(False)
