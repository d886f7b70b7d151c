"""The key hints at the bottom: Textual's footer, showing only the keys that fit whole.

Textual's footer clips what does not fit, mid-word (`esc Interru` at 80 columns). This one leaves out the keys
from the first that would not fit whole, so the last hint shown is always complete; the command palette key
stays docked at the right.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Footer


class FittedFooter(Footer):
    """The footer, cut between hints, never inside one."""

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
