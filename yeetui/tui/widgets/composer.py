"""The message input: Enter sends, Ctrl+J / Shift+Enter / Alt+Enter break the line, Up/Down walk history,
`/` and `@` open a completion popup. The screen decides what a submitted text means.

Keys are priority bindings on the Composer (the focused TextArea is inside it), so Enter is seen before
the TextArea turns it into a newline. Bindings that only matter while the popup is open are switched off
by `check_action`, letting Tab and Escape fall through to the app otherwise. Through tmux, Shift+Enter and
Alt+Enter usually arrive as a plain Enter; Ctrl+J always works, and a line ending in `\\` + Enter also
breaks the line instead of sending.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual import events, on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import OptionList, Static, TextArea
from textual.widgets.text_area import Edit, EditResult, Selection

from yeetui.tui.textual_workarounds import own_bindings, paint_now, user_keymap
from yeetui.tui.widgets.completion import Candidate, CompletionPopup, Location, candidates, find_context

PLACEHOLDER = "Message yeetui — / for commands, @ for files and agents, ! for shell"
HISTORY_LIMIT = 500


def _no_files(prefix: str) -> list[str]:
    return []


@dataclass(frozen=True, slots=True)
class Draft:
    """What is in a composer: carried from the start-up screen's composer into the main screen's."""

    text: str = ""
    selection: tuple[Location, Location] = ((0, 0), (0, 0))
    history: tuple[str, ...] = ()


_IN_ORDER = {"composer.submit": ("enter", "submit"),
             "composer.newline": ("ctrl+j,shift+enter,alt+enter,ctrl+enter", "newline")}


class ComposerInput(TextArea):
    """The TextArea inside the Composer (its own class so styles and tests can find it).

    Every key is handled in the order typed. Textual inserts a character as soon as this widget reads its
    key, but runs a key's binding only once the key has bubbled back up to the app, behind the keys typed
    after it; and a priority binding runs as soon as the app reads the key, ahead of the keys typed before
    it. In text typed in one burst (a fast typist, a paste, tmux send-keys, a terminal that buffers),
    "helo", two backspaces and "lo world" came out "helolo wor"; and Enter, were it a priority binding,
    sent the text without its tail. So Enter and the newline keys, and the TextArea's own bindings
    (backspace, delete, the arrows …), run here, as each key is read. The keys still follow the user's
    keymap (binding ids `composer.submit`, `composer.newline`, and the TextArea's).
    """

    DEFAULT_CSS = """
    ComposerInput {
        height: auto;
        min-height: 3;
        max-height: 10;
        border: tall $border-blurred;
        background: $surface;
        &:focus { border: tall $primary; }
    }
    """

    def edit(self, edit: Edit) -> EditResult:
        """Every change to the text (a key, a paste, a deletion), drawn on the terminal at once: the echo of a
        key does not wait for the screen's next frame, nor for what else that frame draws (`paint_now`)."""
        result = super().edit(edit)
        paint_now(self)
        return result

    async def on_key(self, event: events.Key) -> None:
        """Enter, the newline keys and the TextArea's bindings, in key order (see the class docstring), before
        the TextArea's own key handling: Textual dispatches a key to each class of the widget in turn (this
        one first), and `prevent_default` stops it reaching TextArea."""
        composer = next((a for a in self.ancestors if isinstance(a, Composer)), None)
        if composer is None:
            return
        keymap = user_keymap(self.app)
        for binding_id, (default, action) in _IN_ORDER.items():
            if event.key in {k.strip() for k in keymap.get(binding_id, default).split(",")}:
                event.stop()
                event.prevent_default()
                getattr(composer, f"action_{action}")()
                return
        for binding in own_bindings(self, event.key):
            if await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()
                return


class Composer(Widget):
    BINDINGS = [
        # Shown in the footer; carried out by ComposerInput.on_key, in key order (see its docstring).
        Binding("enter", "submit", "Send", id="composer.submit"),
        Binding("ctrl+j,shift+enter,alt+enter,ctrl+enter", "newline", "Newline", id="composer.newline",
                key_display="ctrl+j"),
        Binding("up", "history_previous", "Previous message", id="composer.history_previous", priority=True,
                show=False),
        Binding("down", "history_next", "Next message", id="composer.history_next", priority=True, show=False),
        Binding("tab", "complete", "Complete", id="composer.complete", priority=True, show=False),
        Binding("escape", "close_completion", "Close completion", id="composer.close_completion", priority=True,
                show=False),
    ]

    DEFAULT_CSS = """
    Composer {
        height: auto;
        max-height: 12;
        padding: 0 1;
        & > #composer-hint {
            height: 1;
            padding: 0 1;
            color: $text-warning;
            display: none;
            &.-visible { display: block; }
        }
    }
    """

    class Submitted(Message):
        """The user sent `text` (a prompt, `/command`, `!shell`, or `@profile …`)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.commands: list[tuple[str, str]] = []
        self.profiles: list[str] = []
        self.file_source: Callable[[str], list[str]] = _no_files
        self.history: list[str] = []
        self.busy = False
        self.queued = 0
        self._history_index: int | None = None
        self._draft = ""
        self._suppressed: str | None = None
        # Held rather than queried: a worker that outlives the screen (the session start, as the app quits)
        # may still set the hint or read the draft after the children are gone.
        self._popup = CompletionPopup(id="composer-completion")
        self._hint = Static(id="composer-hint")
        self._input = ComposerInput(placeholder=PLACEHOLDER, id="composer-input", soft_wrap=True)

    def compose(self) -> ComposeResult:
        yield self._popup
        yield self._hint
        yield self._input

    @property
    def input(self) -> ComposerInput:
        return self._input

    @property
    def popup(self) -> CompletionPopup:
        return self._popup

    @property
    def text(self) -> str:
        return self.input.text

    @text.setter
    def text(self, value: str) -> None:
        self._set_text(value, at_end=True)

    def focus(self, scroll_visible: bool = True) -> Composer:
        self.input.focus(scroll_visible)
        return self

    def draft(self) -> Draft:
        """The text, the cursor (selection) and the history, to carry into another composer."""
        area = self.input
        return Draft(area.text, (area.selection.start, area.selection.end), tuple(self.history))

    def restore(self, draft: Draft) -> None:
        """Take over `draft`: the text with its cursor, the history before this composer's own; the
        completion popup opens if the cursor sits on a completable token (`/he`)."""
        self.history = [*draft.history, *self.history][-HISTORY_LIMIT:]
        area = self.input
        area.load_text(draft.text)
        last = area.document.end
        start, end = (min(point, last) for point in draft.selection)
        area.selection = Selection(start, end)
        self._suppressed = None
        self._refresh_completion()

    # -- busy hint ---------------------------------------------------------------------------------

    def set_busy(self, busy: bool, queued: int = 0) -> None:
        """Show whether the agent works and how many typed messages wait for it."""
        self.busy, self.queued = busy, queued
        parts: list[str] = []
        if busy:
            parts.append("● agent working")
        if queued:
            parts.append(f"{queued} queued")
        if busy:
            parts.append("esc to interrupt")
        hint = self._hint
        hint.update(" · ".join(parts))
        hint.set_class(bool(parts), "-visible")

    # -- actions -----------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("complete", "close_completion"):
            return self._popup.is_open
        return True

    def action_submit(self) -> None:
        # The popup follows TextArea.Changed messages, which may still be queued when Enter arrives right
        # behind the text (typed in one burst): bring it up to date with the text as it is now.
        row, column = self.input.cursor_location
        if find_context(self.input.document[row], row, column) != self.popup.context:
            self._refresh_completion()
        popup = self.popup
        chosen = popup.selected
        if chosen is not None and popup.context is not None and not self._token_is(chosen):
            self._apply(chosen)
            return
        popup.hide()
        text = self.input.text
        row, column = self.input.cursor_location
        line = self.input.document[row]
        if column > 0 and line[:column].endswith("\\"):  # `\` + Enter: a newline where Shift+Enter cannot reach
            self.input.replace("\n", (row, column - 1), (row, column), maintain_selection_offset=False)
            return
        if not text.strip():
            return
        self._remember(text)
        self.input.clear()
        self.post_message(self.Submitted(text))

    def action_newline(self) -> None:
        start, end = sorted(self.input.selection)
        self.input.replace("\n", start, end, maintain_selection_offset=False)

    def action_complete(self) -> None:
        if (chosen := self.popup.selected) is not None:
            self._apply(chosen)

    def action_close_completion(self) -> None:
        self._suppressed = self.input.text
        self.popup.hide()

    def action_history_previous(self) -> None:
        if self.popup.is_open:
            self.popup.move(-1)
            return
        if not self.input.cursor_at_first_line or not self.history:
            raise SkipAction()
        if self._history_index is None:
            self._draft = self.input.text
            self._history_index = len(self.history) - 1
        elif self._history_index > 0:
            self._history_index -= 1
        else:
            return
        self._set_text(self.history[self._history_index], at_end=False)

    def action_history_next(self) -> None:
        if self.popup.is_open:
            self.popup.move(1)
            return
        if not self.input.cursor_at_last_line or self._history_index is None:
            raise SkipAction()
        if self._history_index < len(self.history) - 1:
            self._history_index += 1
            self._set_text(self.history[self._history_index], at_end=True)
        else:
            self._history_index = None
            self._set_text(self._draft, at_end=True)

    # -- helpers -----------------------------------------------------------------------------------

    def _remember(self, text: str) -> None:
        if not self.history or self.history[-1] != text:
            self.history.append(text)
            del self.history[:-HISTORY_LIMIT]
        self._history_index, self._draft = None, ""

    def _set_text(self, text: str, *, at_end: bool) -> None:
        """Replace the text; the cursor goes to the end, or to the end of the first line (history going back,
        so the next Up keeps walking)."""
        self._suppressed = text
        area = self.input
        area.load_text(text)
        if at_end:
            area.move_cursor(area.document.end)
        else:
            area.move_cursor((0, len(area.document[0])))

    def _token_is(self, chosen: Candidate) -> bool:
        """Enter on a token that is already complete (`/help`) sends rather than re-inserting it."""
        context = self.popup.context
        if context is None:
            return False
        sigil = "/" if context.kind == "command" else "@"
        return sigil + context.prefix == chosen.value and not chosen.value.endswith("/")

    def _apply(self, chosen: Candidate) -> None:
        context = self.popup.context
        if context is None:
            return
        self.popup.hide()
        self.input.replace(chosen.insert_text, context.start, context.end, maintain_selection_offset=False)
        self._refresh_completion()

    @on(OptionList.OptionSelected, "#composer-completion")
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if 0 <= event.option_index < len(self.popup.items):
            self._apply(self.popup.items[event.option_index])
        self.input.focus()

    @on(TextArea.Changed, "#composer-input")
    def _changed(self, event: TextArea.Changed) -> None:
        if self.input.text != self._suppressed:
            self._suppressed = None
        self._refresh_completion()

    @on(TextArea.SelectionChanged, "#composer-input")
    def _moved(self, event: TextArea.SelectionChanged) -> None:
        self._refresh_completion()

    def _refresh_completion(self) -> None:
        area, popup = self.input, self.popup
        if self._suppressed is not None and area.text == self._suppressed:
            popup.hide()
            return
        row, column = area.cursor_location
        context = find_context(area.document[row], row, column)
        if context is None:
            popup.hide()
            return
        items = candidates(context, commands=self.commands, profiles=self.profiles, file_source=self.file_source)
        popup.show(context, items)
