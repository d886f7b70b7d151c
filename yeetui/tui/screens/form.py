"""What an MCP server asks the user (elicitation), as a form: one row per field — a line to type in, a box to
tick, a choice or several — with its title, description and default, checked against its type and bounds
before it goes back (a wrong field says why beside it). Send, Decline, or esc to cancel: the server hears which.
A server asking to open a page shows the address; Open opens it in the browser.

Everything shown comes from the server, which is hostile input: it was capped and made terminal-safe
(`yeetui.mcp.forms`) and is shown as text, never markup."""

from __future__ import annotations

import asyncio
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Select, SelectionList, Static

from yeetui.mcp.forms import FormAnswer, FormAnswerer, FormField, FormRequest, checked

SEND, DECLINE, CANCEL = "form-send", "form-decline", "form-cancel"


class FormScreen(ModalScreen[FormAnswer]):
    """`The MCP server "everything" asks:` — its message, its fields, and Send · Decline · Cancel."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    FormScreen {
        align: center middle;
        #form-box {
            width: 90%;
            max-width: 100;
            height: auto;
            max-height: 100%;
            border: thick $accent;
            border-title-color: $accent;
            background: $surface;
            padding: 0 1;
        }
        #form-message { margin-bottom: 1; }
        #form-fields { height: auto; max-height: 30; }
        .form-title { text-style: bold; margin-top: 1; }
        .form-about { color: $text-muted; }
        .form-wrong { color: $error; }
        SelectionList { height: auto; max-height: 8; }
        #form-buttons { height: auto; margin-top: 1; align-horizontal: center; }
        #form-buttons Button { margin: 0 1; min-width: 12; }
    }
    """

    def __init__(self, request: FormRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="form-box") as box:
            box.border_title = f"the MCP server {request.server!r} asks"
            yield Static(Content(request.message or "(no message)"), id="form-message")
            if request.url is not None:
                yield Static(Content(f"It asks you to open this page:\n{request.url}"), id="form-url")
            else:
                with VerticalScroll(id="form-fields"):
                    for each in request.fields:
                        yield from _row(each)
            with Horizontal(id="form-buttons"):
                yield Button("Open it" if request.url is not None else "Send", id=SEND, variant="primary")
                yield Button("Decline", id=DECLINE)
                yield Button("Cancel (esc)", id=CANCEL)

    def on_mount(self) -> None:
        """The first field has the focus (typing goes there at once); a page to open: Open it."""
        fields = self.query(".form-field")
        (fields.first() if fields else self.query_one(f"#{SEND}", Button)).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == SEND:
            self.send()
        else:
            self.dismiss(FormAnswer("decline" if event.button.id == DECLINE else "cancel"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.send()

    def action_cancel(self) -> None:
        self.dismiss(FormAnswer("cancel"))

    def send(self) -> None:
        """Check what was filled in; send it, or say beside each wrong field what it needs."""
        if self.request.url is not None:
            import webbrowser

            webbrowser.open(self.request.url)
            self.dismiss(FormAnswer("accept"))
            return
        content, wrong = checked(self.request, self.values())
        for each in self.request.fields:
            said = self.query_one(f"#form-wrong-{_id(each)}", Static)
            said.update(Content(f"needs {wrong[each.name]}" if each.name in wrong else ""))
        if not wrong:
            self.dismiss(FormAnswer("accept", content))

    def values(self) -> dict[str, Any]:
        """What each field holds now, as its widget gives it."""
        given: dict[str, Any] = {}
        for each in self.request.fields:
            widget = self.query_one(f"#form-field-{_id(each)}")
            if isinstance(widget, Checkbox):
                given[each.name] = widget.value
            elif isinstance(widget, SelectionList):
                given[each.name] = list(widget.selected)
            elif isinstance(widget, Select):
                given[each.name] = None if widget.value is Select.BLANK else widget.value
            elif isinstance(widget, Input):
                given[each.name] = widget.value
        return given


def _id(each: FormField) -> str:
    """A widget id for a field (names are the server's: only letters, digits, - and _ kept)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in each.name)[:60] or "field"


def _row(each: FormField) -> ComposeResult:
    title = each.title + (" *" if each.required else "")
    yield Static(Content(title), classes="form-title")
    if each.description:
        yield Static(Content(each.description), classes="form-about")
    ident = f"form-field-{_id(each)}"
    if each.kind == "boolean":
        yield Checkbox("yes", value=bool(each.default), id=ident, classes="form-field")
    elif each.kind == "choice":
        options = [(Content(label), value) for value, label in each.options]
        yield Select(options, value=each.default if each.default in dict(each.options) else Select.BLANK,
                     allow_blank=not each.required, id=ident, classes="form-field")
    elif each.kind == "choices":
        chosen = set(each.default or [])
        yield SelectionList[str](*[(Content(label), value, value in chosen) for value, label in each.options],
                                 id=ident, classes="form-field")
    else:
        hint = {"number": "a number", "integer": "a whole number"}.get(each.kind, each.format or "")
        bounds = " ".join(part for part in (f"≥ {each.minimum:g}" if each.minimum is not None else "",
                                             f"≤ {each.maximum:g}" if each.maximum is not None else "") if part)
        yield Input(value="" if each.default is None else str(each.default), placeholder=f"{hint} {bounds}".strip(),
                    id=ident, classes="form-field")
    yield Static("", id=f"form-wrong-{_id(each)}", classes="form-wrong")


def answer_in(app: App[Any]) -> FormAnswerer:
    """The answerer of MCP servers' forms in this app: each shown over whatever is on screen, and what the user
    chose (dismissed any other way: cancelled)."""
    async def answer(request: FormRequest) -> FormAnswer:
        answered: asyncio.Future[FormAnswer] = asyncio.get_running_loop().create_future()

        def chose(answer: FormAnswer | None) -> None:
            if not answered.done():
                answered.set_result(answer if answer is not None else FormAnswer("cancel"))

        app.push_screen(FormScreen(request), callback=chose)
        return await answered
    return answer
