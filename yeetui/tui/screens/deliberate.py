"""Modals whose answer must be a deliberate act: keys typed ahead never answer them.

A dialog can open while the user is typing (the trust prompt as yeetui starts, a confirmation after a key in a
panel): the keys already on their way were meant for something else. For `SETTLE` seconds after the dialog
is drawn — and after each key it ignored meanwhile, so a user still typing is never taken at their word — it
takes no key (enter, space, tab, arrows, escape: none acts, and the focus stays where it started) and no
click on its buttons. The box's subtitle says when it listens. The time comes from `clock`, a class
attribute tests replace instead of waiting.

Subclasses yield their buttons (the safe one focused by `AUTO_FOCUS`) and answer in `pressed`; they must not
handle `Button.Pressed` themselves. Their bindings have no ids, so no keymap can put a letter on them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar, TypeVar

from textual import events
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Button

ResultType = TypeVar("ResultType")
WAITING = "a moment…"
"""The box's subtitle while keys are not taken yet."""


class DeliberateScreen(ModalScreen[ResultType]):
    """A modal that ignores keys and clicks until it has been on screen, with the keyboard quiet, a moment."""

    SETTLE: ClassVar[float] = 0.5
    """Seconds after the dialog is drawn (and after the last key it ignored) before it takes keys and clicks."""
    clock: ClassVar[Callable[[], float]] = time.monotonic
    """Where the time comes from (a builtin, so it is not bound as a method); tests replace it."""
    BOX: ClassVar[str] = ""
    """Selector of the box whose border subtitle says whether the dialog listens yet."""
    READY: ClassVar[str] = ""
    """That subtitle once it listens (the keys that answer)."""

    def __init__(self) -> None:
        super().__init__()
        self._quiet_since: float | None = None
        """When the dialog was drawn, or ignored its last key; None while it is not on screen."""
        self._timer: Timer | None = None

    # -- the window -------------------------------------------------------------------------------

    @property
    def shown_at(self) -> float | None:
        """The `clock` time the window counts from; None until the dialog is drawn."""
        return self._quiet_since

    @property
    def settled(self) -> bool:
        """Whether keys and clicks are taken now."""
        return self._quiet_since is not None and type(self).clock() - self._quiet_since >= self.SETTLE

    def on_screen_resume(self) -> None:
        """Shown (or shown again after another screen on top closed): the window starts once it is drawn."""
        self._quiet_since = None
        self._show_state()
        self.call_after_refresh(self._drawn)

    def on_screen_suspend(self) -> None:
        self._quiet_since = None

    def _drawn(self) -> None:
        self._quiet_since = type(self).clock()
        self._recheck()

    def _recheck(self) -> None:
        """Show whether the dialog listens, and look again when the window should be over."""
        self._show_state()
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._quiet_since is not None and not self.settled:
            left = self.SETTLE - (type(self).clock() - self._quiet_since)
            self._timer = self.set_timer(min(max(left, 0.05), self.SETTLE), self._recheck, name="settle")

    def _show_state(self) -> None:
        settled = self.settled
        self.set_class(not settled, "-settling")
        if self.BOX:
            for box in self.query(self.BOX):
                box.border_subtitle = self.READY if settled else WAITING

    # -- what the window holds back ---------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        """Runs before any binding of the dialog (keys bubble up to the screen first): within the window, the key
        is dropped and the window starts again."""
        if self.settled:
            return
        event.stop()
        event.prevent_default()
        if self._quiet_since is not None:
            self._quiet_since = type(self).clock()
            self._recheck()

    def set_focus(self, widget: Widget | None, scroll_visible: bool = True, from_app_focus: bool = False) -> None:
        """Within the window the focus stays where it started (a click would move it to another button)."""
        if widget is not None and self.focused is not None and widget is not self.focused and not self.settled:
            return
        super().set_focus(widget, scroll_visible, from_app_focus)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if self.settled:
            self.pressed(event.button)

    def pressed(self, button: Button) -> None:
        """A button was pressed (enter on it, or a click) once the window was over."""
        raise NotImplementedError
