"""The key hints at the bottom: Textual's footer, showing only the keys that fit whole.

Textual's footer clips what does not fit, mid-word (`esc Interru` at 80 columns). This one leaves out the keys
from the first that would not fit whole, so the last hint shown is always complete; the command palette key
stays docked at the right.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Footer


class FittedFooter(Footer):
    """The footer, cut between hints, never inside one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.composed_for: tuple[object, ...] | None = None
        """The keys shown, as last composed (see `bindings_changed`)."""

    def bindings_changed(self, screen: Screen[Any]) -> None:
        """Textual announces the bindings after every focus change, and its footer then mounts all its keys
        again (~10 ms each time, about a dozen times in a short session): only do that when what it shows
        has changed."""
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = self.shown(screen)
            if shown == self.composed_for:
                return
            self.composed_for = shown
        super().bindings_changed(screen)

    def shown(self, screen: Screen[Any]) -> tuple[object, ...]:
        """What the footer composes from `screen`'s bindings: each shown binding, enabled or not, its tooltip,
        and the command palette's key."""
        bindings = screen.active_bindings
        keys = tuple((binding, enabled, tooltip) for _, binding, enabled, tooltip in bindings.values() if binding.show)
        palette = bindings.get(self.app.COMMAND_PALETTE_BINDING)
        return keys, None if palette is None else palette[1:], self.show_command_palette, self.compact

    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self.fit)

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit)

    def fit(self) -> None:
        """Show the keys, in order, while they fit whole beside the docked ones; hide the rest."""
        keys = list(self.query("FooterKey"))
        docked = [k for k in keys if k.styles.dock == "right"]
        room = self.size.width - sum(k.outer_size.width for k in docked)
        used, fits = 0, True
        for key in keys:
            if key in docked:
                continue
            drawn = key.render()
            used += (drawn.cell_len if isinstance(drawn, Text) else key.outer_size.width) + key.styles.margin.width
            fits = fits and used <= room
            if key.display != fits:
                key.display = fits
