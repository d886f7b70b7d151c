"""The fleet inside the app (ctrl+g): every run of every project on this data dir, grouped needs you / working /
done, refreshed every two seconds from the store (see yeetui.application.fleet). Enter opens the run's session
(a session of this project; another project's says where it is), `c` cancels the run, escape closes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from yeetui.application.fleet import Fleet, FleetRow
from yeetui.subagents.ledger import format_elapsed
from yeetui.text import dollars, tokens_text

REFRESH = 2.0

Loader = Callable[[], Awaitable[Fleet]]
Act = Callable[[str, FleetRow], Awaitable[str | None]]
"""(action, row) → a line to show, or None."""


class FleetScreen(ModalScreen[FleetRow | None]):
    DEFAULT_CSS = """
    FleetScreen { align: center middle; }
    FleetScreen > Vertical { width: 96%; height: 90%; border: round $primary; background: $surface; }
    FleetScreen OptionList { height: 1fr; border: none; }
    FleetScreen #fleet-said { height: auto; color: $text-muted; padding: 0 1; }
    """
    BINDINGS = [Binding("escape", "dismiss(None)", "Close"), Binding("c", "cancel_run", "Cancel run"),
                Binding("r", "refresh", "Refresh")]

    def __init__(self, load: Loader, act: Act) -> None:
        super().__init__()
        self.load, self.act = load, act
        self.rows: dict[str, FleetRow] = {}

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Fleet — enter: open · c: cancel · r: refresh · esc: close", id="fleet-said")
            yield OptionList(id="fleet-list")

    async def on_mount(self) -> None:
        await self.action_refresh()
        self.set_interval(REFRESH, self.action_refresh, name="fleet-refresh")
        self.query_one(OptionList).focus()

    async def action_refresh(self) -> None:
        seen = await self.load()
        listing = self.query_one(OptionList)
        highlighted = listing.highlighted_option.id if listing.highlighted_option is not None else None
        options: list[Option | None] = []
        self.rows = {}
        for title, rows in (("NEEDS YOU", seen.needs_you), ("WORKING", seen.working), ("DONE", seen.done)):
            options.append(Option(Text(f"{title} ({len(rows)})", style="bold"), disabled=True))
            for row in rows:
                self.rows[row.run_id] = row
                options.append(Option(_line(row), id=row.run_id))
        listing.clear_options()
        listing.add_options(options)
        if highlighted in self.rows or self.rows:  # where it was, else the first run
            listing.highlighted = listing.get_option_index(highlighted if highlighted in self.rows
                                                           else next(iter(self.rows)))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        row = self.rows.get(event.option.id or "")
        if row is not None:
            self.dismiss(row)

    async def action_cancel_run(self) -> None:
        listing = self.query_one(OptionList)
        option = listing.highlighted_option
        row = self.rows.get(option.id or "") if option is not None else None
        if row is None:
            return
        said = await self.act("cancel", row)
        if said:
            self.query_one("#fleet-said", Static).update(said)
        await self.action_refresh()


def _line(row: FleetRow) -> Text:
    """`oracle#2  stalled  ~/proj  tmux  3:10  $0.04 12k tok  no progress for 3:10`."""
    spend = f"{dollars(row.cost)} {tokens_text(row.tokens)}" if row.tokens else ""
    elapsed = format_elapsed(row.elapsed) if row.elapsed is not None else ""
    style = {"stalled": "bold yellow", "gone": "dim", "waiting_permission": "bold yellow"}.get(row.status, "")
    text = Text()
    text.append(f"  {row.path[-30:]:<30} ", style="bold")
    text.append(f"{row.status:<16}", style=style)
    text.append(f" {row.project[-22:]:<22} {row.mode:<10} {elapsed:>6} {spend:<16} {row.why[:60]}")
    text.no_wrap, text.overflow = True, "ellipsis"  # one line per run
    return text
