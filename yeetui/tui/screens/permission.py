"""The permission modal: an agent wants to run a tool under an `ask` rule; the user answers.

Shows who asks (`builder#7 wants to run bash`), what about (the command or path, prominent), the other
arguments summarised on one line, and an optional preview (a diff or file content, capped, scrollable).
Returns "allow_once", "allow_always" or "deny"; the line above the buttons says what "Always" covers (the
literal subject, for the rest of the session). Nothing is focused that enter could confirm: answering
takes a deliberate key (y / a / n / escape) or a click. Several requests queue on the main screen.

A question can be settled without this dialog: answered in another window (`yeetui fleet`, another yeetui on
the same data dir), or withdrawn because its run stopped waiting. Whoever shows the dialog then calls `settle`:
it closes with None, answering nothing — at once, or, with another screen over it, as soon as it is on top
again — and the one who showed it says how the question was settled.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

ALLOW_ONCE, ALLOW_ALWAYS, DENY = "allow_once", "allow_always", "deny"
PREVIEW_LINES = 400
PREVIEW_CHARS = 40_000
SUBJECT_CHARS = 400
PREVIEW_MAX_ROWS = 14
PREVIEW_MIN_ROWS = 4
"""The preview's height with its border: at most this, however small the screen."""
ARGUMENT_CHARS = 60


def summarise_arguments(arguments: dict[str, Any], subject: str) -> str:
    """`timeout: 60 · content: 1,204 chars`; the argument that is the subject is left out."""
    parts: list[str] = []
    for key, value in arguments.items():
        text = value if isinstance(value, str) else repr(value)
        if text == subject:
            continue
        if isinstance(value, str) and ("\n" in value or len(value) > ARGUMENT_CHARS):
            parts.append(f"{key}: {len(value):,} chars")
        else:
            text = " ".join(text.split())
            parts.append(f"{key}: {text[:ARGUMENT_CHARS]}{'…' if len(text) > ARGUMENT_CHARS else ''}")
    return " · ".join(parts)


def always_covers(tool: str, subject: str, arguments: dict[str, Any]) -> str:
    """What answering "Always" allows: the remembered rule is the literal subject, for the rest of the session."""
    if not subject:
        what = f"every {tool} call"
    elif tool == "bash" or arguments.get("command") == subject:
        what = "this exact command"
    elif arguments.get("path") == subject:
        what = f"{tool} on this exact path"
    else:
        what = f"{tool} on exactly this"
    return f"Always: {what}, for the rest of this session"


def cap_preview(preview: str) -> str:
    """At most PREVIEW_LINES lines and about PREVIEW_CHARS characters, saying how many lines were left out."""
    lines = preview.splitlines()
    kept: list[str] = []
    room = PREVIEW_CHARS
    for line in lines[:PREVIEW_LINES]:
        if len(line) > room:
            kept.append(line[:room] + "…")
            break
        kept.append(line)
        room -= len(line) + 1
    omitted = len(lines) - len(kept)
    if omitted:
        kept.append(f"[… {omitted} more lines not shown]")
    return "\n".join(kept)


def _is_diff(lines: list[str]) -> bool:
    return any(line.startswith(("@@", "--- ", "+++ ", "diff --git")) for line in lines[:50])


def preview_content(preview: str) -> Content:
    """The capped preview; a unified diff gets its added, removed and hunk lines coloured."""
    lines = cap_preview(preview).splitlines()
    if not _is_diff(lines):
        return Content("\n".join(lines))
    styled: list[Content] = []
    for line in lines:
        if line.startswith(("+++ ", "--- ", "diff --git")):
            styled.append(Content.styled(line, "bold"))
        elif line.startswith("@@"):
            styled.append(Content.styled(line, "$primary"))
        elif line.startswith("+"):
            styled.append(Content.styled(line, "$success"))
        elif line.startswith("-"):
            styled.append(Content.styled(line, "$error"))
        else:
            styled.append(Content(line))
    return Content("\n").join(styled)


class PermissionScreen(ModalScreen[str | None]):
    """`builder#7 wants to run bash` — allow once, always, or deny."""

    BINDINGS = [
        Binding("y", "answer('allow_once')", "Allow once", id="permission.allow_once"),
        Binding("a", "answer('allow_always')", "Always", id="permission.allow_always"),
        Binding("n,escape", "answer('deny')", "Deny", id="permission.deny"),
    ]
    """
    | Key(s) | Description |
    | :- | :- |
    | y | Allow this call once. |
    | a | Always: allow this tool on this exact subject (the literal command or path) for the rest of the session. |
    | n, escape | Deny. |
    """

    AUTO_FOCUS = "#permission-preview"

    DEFAULT_CSS = """
    PermissionScreen {
        align: center middle;
        #permission-box {
            width: 90%;
            max-width: 110;
            height: auto;
            max-height: 100%;
            border: thick $warning;
            border-title-color: $warning;
            background: $surface;
            padding: 0 1;
        }
        #permission-title { text-style: bold; margin-bottom: 1; }
        #permission-subject {
            color: $warning;
            text-style: bold;
            background: $boost;
            padding: 0 1;
            max-height: 6;
        }
        #permission-arguments {
            color: $text-muted;
            text-wrap: nowrap;
            text-overflow: ellipsis;
        }
        #permission-preview {
            height: auto;
            max-height: 14;
            margin-top: 1;
            border: round $border-blurred;
            background: $background;
            &:focus { border: round $border; }
        }
        #permission-always { color: $text-muted; margin-top: 1; text-align: center; }
        #permission-buttons { height: auto; align-horizontal: center; }
        #permission-buttons Button { margin: 0 1; min-width: 14; }
    }
    """

    def __init__(self, agent_label: str, tool: str, subject: str, arguments: dict[str, Any],
                 preview: str | None) -> None:
        super().__init__()
        self.agent_label = agent_label
        self.tool = tool
        self.subject = subject
        self.arguments = arguments
        self.preview = preview
        self._settled = False
        self._dismissed = False

    def compose(self) -> ComposeResult:
        with Vertical(id="permission-box") as box:
            box.border_title = "permission"
            yield Static(Content.assemble((self.agent_label, "$accent"), f" wants to run {self.tool}"),
                         id="permission-title")
            subject = self.subject if len(self.subject) <= SUBJECT_CHARS else self.subject[:SUBJECT_CHARS] + "…"
            yield Static(Content(subject or "(no subject)"), id="permission-subject")
            summary = summarise_arguments(self.arguments, self.subject)
            if summary:
                yield Static(Content(summary), id="permission-arguments")
            if self.preview:
                with VerticalScroll(id="permission-preview"):
                    yield Static(preview_content(self.preview), id="permission-preview-text")
            yield Static(Content(always_covers(self.tool, self.subject, self.arguments)), id="permission-always")
            with Horizontal(id="permission-buttons"):
                yield Button("Allow once (y)", id=ALLOW_ONCE, variant="primary")
                yield Button("Always (a)", id=ALLOW_ALWAYS, variant="warning")
                yield Button("Deny (n)", id=DENY, variant="error")

    def on_mount(self) -> None:
        self.call_after_refresh(self._fit_preview)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_preview)

    def _fit_preview(self) -> None:
        """Give the preview only the rows the rest leaves, so the buttons are never pushed off a small screen."""
        previews = self.query("#permission-preview")
        if not previews:
            return
        preview = previews.first()
        box = self.query_one("#permission-box")
        rest = box.styles.gutter.height + sum(
            child.outer_size.height + child.styles.margin.height for child in box.children if child is not preview)
        room = self.size.height - rest - preview.styles.margin.height
        height = max(PREVIEW_MIN_ROWS, min(PREVIEW_MAX_ROWS, room))
        if preview.styles.max_height is None or preview.styles.max_height.value != height:
            preview.styles.max_height = height

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id in (ALLOW_ONCE, ALLOW_ALWAYS, DENY):
            self._close(event.button.id)

    def action_answer(self, answer: str) -> None:
        self._close(answer)

    def settle(self) -> None:
        """The question was settled elsewhere: close, answering nothing (None) — now if this dialog is on
        top, else once the screen over it has gone. Harmless after the dialog closed."""
        self._settled = True
        if self.is_active:
            self._close(None)

    def on_screen_resume(self) -> None:
        if self._settled:
            self._close(None)

    def _close(self, answer: str | None) -> None:
        """Dismiss once: a second close (an answer and a settlement crossing) would pop the screen below."""
        if self._dismissed or not self.is_active:
            return
        self._dismissed = True
        self.dismiss(answer)
