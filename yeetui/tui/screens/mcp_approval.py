"""Asked at start for each MCP server a project's file defines that nobody approved yet (a cloned repository's
`.mcp.json`, `opencode.json`, …): it would run a program as the user, so it starts only once the user has seen
exactly what and said so.

The dialog shows where the server is defined, the command line it runs (or the URL it reaches), and every
variable and header it is given as the file writes them (`${GITHUB_TOKEN}`, never a value expanded), how it is
confined, and what changed since an earlier approval. Approving is remembered for exactly
that: an edit of the file asks again (see `yeetui.mcp.consent`). "Not now" starts nothing and asks again next
time; `yeetui mcp approve NAME` approves from a shell. Like the trust prompt it is a `DeliberateScreen`: keys
typed while yeetui starts never approve, "Not now" has the focus, and no letter answers.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Static

from yeetui.application.mcp import ServerRow, described
from yeetui.text import cap, terminal_safe
from yeetui.tui.screens.deliberate import DeliberateScreen

START, NOT_NOW = "mcp-start", "mcp-not-now"
SHOWN_CHARS = 2000
"""A longer command line is cut, saying so (`yeetui mcp list` prints it whole)."""


class McpApprovalScreen(DeliberateScreen[bool]):
    """`Start the MCP server "github" that .mcp.json defines?` — what it runs; start it, or not now."""

    SETTLE = 0.75
    BOX = "#mcp-box"
    READY = "tab/→ move · enter choose · esc not now"

    BINDINGS = [
        Binding("escape", "not_now", "Not now"),
        Binding("left", "app.focus_previous", show=False),
        Binding("right", "app.focus_next", show=False),
    ]

    AUTO_FOCUS = f"#{NOT_NOW}"

    DEFAULT_CSS = """
    McpApprovalScreen {
        align: center middle;
        #mcp-box {
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
        #mcp-title { text-style: bold; }
        #mcp-source { color: $text-muted; margin-bottom: 1; }
        #mcp-target {
            height: auto;
            max-height: 10;
            border: round $border-blurred;
            background: $background;
            padding: 0 1;
        }
        #mcp-explain { color: $text-muted; margin-top: 1; }
        #mcp-buttons { height: auto; margin-top: 1; align-horizontal: center; }
        #mcp-buttons Button { margin: 0 1; min-width: 16; }
        &.-settling #mcp-buttons Button { text-opacity: 60%; }
    }
    """

    def __init__(self, row: ServerRow) -> None:
        """`row`: the server as configured, and what changed since an earlier approval (from `McpServers`)."""
        super().__init__()
        self.row = row
        self.spec = row.spec

    def compose(self) -> ComposeResult:
        spec = self.spec
        again = "what it runs changed since you approved it" if self.row.reason else "nobody approved it yet"
        with Vertical(id="mcp-box") as box:
            box.border_title = "start this MCP server?"
            yield Static(Content(f"This project defines the MCP server {_safe(spec.name, 80)!r}; {again}."),
                         id="mcp-title")
            yield Static(Content(f"defined in {_safe(str(spec.path), 300)} ({spec.source})"), id="mcp-source")
            lines = [_safe(line, SHOWN_CHARS) for line in described(self.row)]
            with VerticalScroll(id="mcp-target"):
                yield Static(Content("\n".join(lines)), id="mcp-target-text")
            yield Static("It is a program the project brings; its tools are offered to the agents that may use MCP. "
                         "Start it only if you know what it is. The approval is for exactly this — the file's entry "
                         "and the files it runs: if one changes, you are asked again. Not now: it stays off and you "
                         "are asked next time. `yeetui mcp revoke NAME` takes an approval back.",
                         id="mcp-explain")
            with Horizontal(id="mcp-buttons"):
                yield Button("Not now (esc)", id=NOT_NOW, variant="primary")
                yield Button("Start it", id=START, variant="warning")

    def pressed(self, button: Button) -> None:
        self.dismiss(button.id == START)

    def action_not_now(self) -> None:
        self.dismiss(False)


def _safe(text: str, limit: int) -> str:
    """File text shown in the dialog: control characters made visible, long values cut."""
    return cap(terminal_safe(text), limit)
