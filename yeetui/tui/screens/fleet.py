"""The fleet on screen: every run of every project on this data dir, grouped needs you / working / done, kept
up to date from the store (see yeetui.application.fleet). The same screen serves `yeetui fleet` (full screen)
and the TUI's ctrl+g; what "open", "attach" and "a shell in its worktree" mean differs between them, so the
host that shows the screen does those (`FleetHost`). Everything else goes through `FleetDesk`, which reaches a
run wherever it executes.

Keys: enter opens the run's session · a answers its permission question · m sends it a message (a running run
reads it at its next turn; a finished subagent goes on with it; a finished conversation of its own goes on only
where it is opened — in the app, for this project, it opens with the message as its next turn; elsewhere m says
so before anything is typed) · c cancels it · t attaches to its tmux pane · w opens a shell in its worktree ·
r refreshes · esc (or q) closes. A question answered in another window while this fleet's dialog shows it
closes the dialog, and the line at the top says how it was answered.

Each run's line is its place in its tree (cut from the right, its own label kept), its status in words, its
project's folder, where it runs, for how long, its spend and what it needs or does; every column is cut from
the right at a whole word.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from yeetui.application.fleet import Fleet, FleetDesk, FleetRow
from yeetui.errors import YeetuiError
from yeetui.events import PermissionAnswer
from yeetui.store.coordination import PermissionAsk
from yeetui.subagents.ledger import format_elapsed
from yeetui.text import clip_words, dollars, one_line, terminal_safe, tokens_text
from yeetui.tui.bridge import permission_preview
from yeetui.tui.screens.permission import PermissionScreen
from yeetui.tui.slash import open_worktree_shell, show_pane

if TYPE_CHECKING:
    from yeetui.tui.commands import CommandScreen

REFRESH = 2.0
"""Seconds between looks at the store."""

LIVE_WORDS = ("queued", "running", "waiting_permission", "stalled")
"""A row's status while its run goes on (a message for it is guidance, not a follow-up)."""
HINT = ("enter open · a answer · m message · c cancel · t attach pane · w worktree shell · r refresh · "
        "esc close")


class FleetHost(Protocol):
    """What the screen's host does with a row: these depend on where the fleet is shown."""

    async def open_row(self, row: FleetRow) -> str | None:
        """Open the run's session; a line to show, or None (the screen may be gone)."""
        ...

    async def attach_row(self, row: FleetRow) -> str | None:
        """Put the run's tmux pane in front of the user."""
        ...

    async def worktree_row(self, row: FleetRow) -> str | None:
        """A shell in the run's worktree."""
        ...

    async def send_row(self, row: FleetRow, text: str) -> str | None:
        """A message for the run (guidance, or a finished run's follow-up)."""
        ...

    def message_refusal(self, row: FleetRow) -> str | None:
        """Why `m` cannot take a message for the run here, said before anything is typed (None: it can)."""
        ...


class MessageScreen(ModalScreen[str | None]):
    """One line of text for a run: enter sends it, escape gives up."""

    DEFAULT_CSS = """
    MessageScreen { align: center middle; }
    MessageScreen > Vertical { width: 80%; max-width: 100; height: auto; border: round $primary;
                               background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="fleet.message.cancel")]

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_text)
            yield Input(id="fleet-message", placeholder="enter: send · esc: cancel")

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)


class FleetScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    FleetScreen { align: center middle; }
    FleetScreen > Vertical { width: 96%; height: 90%; border: round $primary; background: $surface; }
    FleetScreen.full > Vertical { width: 100%; height: 100%; }
    FleetScreen OptionList { height: 1fr; border: none; text-wrap: nowrap; text-overflow: ellipsis; }
    FleetScreen #fleet-said { height: auto; color: $text-muted; padding: 0 1; }
    FleetScreen #fleet-detail { height: auto; max-height: 4; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [Binding("escape,q", "dismiss(None)", "Close", id="fleet.close"),
                Binding("c", "cancel_run", "Cancel run", id="fleet.cancel"),
                Binding("a", "answer", "Answer", id="fleet.answer"),
                Binding("m", "message", "Message", id="fleet.message"),
                Binding("t", "attach", "Attach pane", id="fleet.attach"),
                Binding("w", "worktree", "Worktree shell", id="fleet.worktree"),
                Binding("r", "refresh", "Refresh", id="fleet.refresh")]

    def __init__(self, desk: FleetDesk, host: FleetHost, *, full: bool = False) -> None:
        super().__init__(classes="full" if full else "")
        self.desk, self.host = desk, host
        self.rows: dict[str, FleetRow] = {}
        self._shown: list[tuple[str, tuple[str, ...]]] = []
        self._answering: tuple[PermissionAsk, PermissionScreen] | None = None
        """The question this fleet's permission dialog shows, while it is open."""
        self.looks = 0
        """How many times the store was read (bench/bench_fleet.py counts the refreshes)."""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Fleet — {HINT}", id="fleet-said")
            yield OptionList(id="fleet-list")
            yield Static("", id="fleet-detail")

    async def on_mount(self) -> None:
        await self.action_refresh()
        self.set_interval(REFRESH, self.action_refresh, name="fleet-refresh")
        self.query_one(OptionList).focus()

    async def action_refresh(self) -> None:
        try:
            seen = await self.desk.look()
        except YeetuiError as exc:
            self.say(f"Could not read the fleet: {exc}")
            return
        self.looks += 1
        if not self.is_attached:
            return
        self._show(seen)
        try:
            await self._settled_elsewhere(seen)
        except YeetuiError as exc:
            self.say(f"Could not read how the question was answered: {exc}")

    def _show(self, seen: Fleet) -> None:
        listing = self.query_one(OptionList)
        highlighted = self.highlighted
        lines: list[tuple[str, tuple[str, ...]]] = []
        self.rows = {}
        counts = seen.counts()
        for title, key, rows in (("NEEDS YOU", "needs_you", seen.needs_you), ("WORKING", "working", seen.working),
                                 ("DONE", "done", seen.done)):
            lines.append((f"#{title}", (f"{title} ({counts[key]})",)))
            for row in rows:
                self.rows[row.run_id] = row
                lines.append((row.run_id, _cells(row)))
        if seen.done_not_listed:
            lines.append(("#more", (f"  … and {seen.done_not_listed} older done in the last 24 hours, not listed",)))
        if lines == self._shown:  # unchanged: nothing redrawn (500 rows every two seconds would be felt)
            self._detail()
            return
        if [key for key, _ in lines] == [key for key, _ in self._shown]:  # the same rows: only changed ones
            for index, ((_, cells), (_, before)) in enumerate(zip(lines, self._shown, strict=True)):
                if cells != before:
                    listing.replace_option_prompt_at_index(index, _text(cells))
        else:
            listing.clear_options()
            listing.add_options([Option(_text(cells), id=key, disabled=key.startswith("#")) for key, cells in lines])
            if highlighted is not None or self.rows:  # where it was, else the first run
                chosen = highlighted.run_id if highlighted is not None and highlighted.run_id in self.rows \
                    else next(iter(self.rows))
                listing.highlighted = listing.get_option_index(chosen)
        self._shown = lines
        self._detail()

    @property
    def highlighted(self) -> FleetRow | None:
        option = self.query_one(OptionList).highlighted_option
        return self.rows.get(option.id or "") if option is not None else None

    @on(OptionList.OptionHighlighted)
    def _moved(self) -> None:
        self._detail()

    def _detail(self) -> None:
        row = self.highlighted
        if row is None:
            self.query_one("#fleet-detail", Static).update("")
            return
        parts = [f"{shown(row.path)}  ({row.run_id[:12]}, {row.mode}, {shown(row.project) or 'no project'})"]
        if row.why:
            parts.append(shown(row.why))
        if row.pane:
            parts.append(f"pane: {shown(row.pane)}")
        if row.worktree:
            parts.append(f"worktree: {shown(row.worktree)}")
        self.query_one("#fleet-detail", Static).update(Text("\n".join(parts), no_wrap=True, overflow="ellipsis"))

    def say(self, text: str) -> None:
        if self.is_attached:
            self.query_one("#fleet-said", Static).update(text)

    @on(OptionList.OptionSelected)
    async def _selected(self, event: OptionList.OptionSelected) -> None:
        row = self.rows.get(event.option.id or "")
        if row is not None:
            await self._do(self.host.open_row(row))

    async def _do(self, action: Awaitable[str | None]) -> None:
        """Run an action's coroutine; what it says (or the refusal it raises) goes in the line at the top."""
        try:
            said = await action
        except YeetuiError as exc:
            said = str(exc)
        if said:
            self.say(said)
        if self.is_attached:
            await self.action_refresh()

    async def action_cancel_run(self) -> None:
        if (row := self.highlighted) is not None:
            await self._do(self.desk.cancel(row))

    async def action_answer(self) -> None:
        row = self.highlighted
        if row is None:
            return
        if row.ask is None:
            self.say(self.desk.no_question(row))
            return
        ask = row.ask
        dialog = PermissionScreen(ask.agent_label, ask.tool, ask.subject, ask.arguments,
                                  permission_preview(ask.tool, ask.arguments))
        self._answering = (ask, dialog)

        async def answered(answer: str | None) -> None:
            self._answering = None
            if answer:
                await self._do(self.desk.answer(row, _answer(answer)))

        await self.app.push_screen(dialog, answered)

    async def _settled_elsewhere(self, seen: Fleet) -> None:
        """The question on screen in this fleet's dialog is no longer open (answered in another window, or its
        run stopped waiting): the dialog closes, and the line at the top says how it was settled."""
        if self._answering is None:
            return
        ask, dialog = self._answering
        if any(row.ask is not None and row.ask.id == ask.id for row in seen.needs_you):
            return
        self._answering = None
        said = await self.desk.settled(ask)
        dialog.settle()
        self.say(said)

    async def action_message(self) -> None:
        row = self.highlighted
        if row is None:
            return
        if (refusal := self.host.message_refusal(row)) is not None:  # said before a word is typed in vain
            self.say(refusal)
            return
        live = row.status in LIVE_WORDS
        title = (f"Guidance for {row.label} (read at its next turn):" if live
                 else f"Follow-up for {row.label} (it goes on in its own session, with its context):")

        async def typed(text: str | None) -> None:
            if text:
                await self._do(self.host.send_row(row, text))

        await self.app.push_screen(MessageScreen(title), typed)

    async def action_attach(self) -> None:
        if (row := self.highlighted) is not None:
            await self._do(self.host.attach_row(row))

    async def action_worktree(self) -> None:
        if (row := self.highlighted) is not None:
            await self._do(self.host.worktree_row(row))


def shown(text: str) -> str:
    """What a run says (its question, its error, its label), on one line and harmless to the terminal: it
    comes from a model, an agent or a project's files."""
    return one_line(terminal_safe(text))


def _answer(text: str) -> PermissionAnswer:
    return "allow_once" if text == "allow_once" else "allow_always" if text == "allow_always" else "deny"


PATH_WIDTH = 30
STATUS_WIDTH = 17
PROJECT_WIDTH = 16
WHY_WIDTH = 70


def fit_path(path: str, width: int) -> str:
    """A run's place in its tree in `width` characters: the path from its top session, cut from the right at a
    whole word, and always the run's own label at the end (`fix the flaky login… › builder#3`)."""
    if len(path) <= width:
        return path
    *above, own = path.split(" › ")
    room = width - len(own) - len(" › ")
    if not above or room < 6:
        return clip_words(own, width)
    return f"{clip_words(' › '.join(above), room)} › {own}"


def project_name(project: str) -> str:
    """The project's folder by its name (the detail line below the list has the whole path)."""
    return Path(project).name or project


def _cells(row: FleetRow) -> tuple[str, ...]:
    """What a run's line shows, cheap to compare between two looks: the line is drawn only when it changed."""
    spend = f"{dollars(row.cost)} {tokens_text(row.tokens)}" if row.tokens else ""
    elapsed = format_elapsed(row.elapsed) if row.elapsed is not None else ""
    project = clip_words(shown(project_name(row.project)), PROJECT_WIDTH)
    return (fit_path(shown(row.path), PATH_WIDTH), row.status, clip_words(row.status_text, STATUS_WIDTH - 1),
            f" {project:<{PROJECT_WIDTH}} {row.mode:<10} {elapsed:>7} {spend:<16} ",
            clip_words(shown(row.why), WHY_WIDTH))


_STYLES = {"stalled": "bold yellow", "gone": "dim", "waiting_permission": "bold yellow"}


def _text(cells: tuple[str, ...]) -> Text:
    """`oracle#2  stalled  proj  tmux  3:10  $0.04 12k tok  no progress for 3:10`; a group's title (bold), or the
    line after the done ones that says how many more there are (dim). Every column is cut from the right."""
    if len(cells) == 1:
        return Text(cells[0], style="dim" if cells[0].startswith(" ") else "bold")
    path, status, status_text, middle, why = cells
    text = Text()
    text.append(f"  {path:<{PATH_WIDTH}} ", style="bold")
    text.append(f"{status_text:<{STATUS_WIDTH}}", style=_STYLES.get(status, ""))
    text.append(middle + why)
    text.no_wrap, text.overflow = True, "ellipsis"  # one line per run
    return text


class InAppFleetHost:
    """The fleet inside the TUI (ctrl+g): a run of this project opens in the app; panes and worktree shells
    open beside it (a split of the user's tmux, a terminal window, or the command to type)."""

    def __init__(self, screen: CommandScreen, desk: FleetDesk, open_session: Callable[[str], Awaitable[None]]) -> None:
        self.screen, self.desk, self._open_session = screen, desk, open_session

    def _here(self, row: FleetRow) -> bool:
        here = str(self.screen.surface.project_dir)
        return not row.project or row.project == here or row.project.startswith(here + "/")

    async def open_row(self, row: FleetRow) -> str | None:
        if not self._here(row):
            return (f"{row.label} is a run of {row.project}: open it there with "
                    f"`cd {shlex.quote(row.project)} && yeetui --resume {row.session_id[:12]}` (or `yeetui fleet`).")
        await self.desk.mark_read(row)
        self.screen.app.pop_screen()  # not awaited: the fleet screen is the one asking, it goes once this returns
        await self._open_session(row.session_id)
        return None

    async def attach_row(self, row: FleetRow) -> str | None:
        pane = await self.desk.pane(row)
        if pane is None:
            return f"{row.label} has no tmux pane (any more)."
        return await show_pane(self.screen, pane, row.label)

    async def worktree_row(self, row: FleetRow) -> str | None:
        worktree = await self.desk.worktree(row)
        if worktree is None:
            return f"{row.label} works in no worktree of its own."
        return await open_worktree_shell(self.screen, worktree, row.label)

    async def send_row(self, row: FleetRow, text: str) -> str | None:
        if row.status in LIVE_WORDS or not self._here(row):
            return await self.desk.send(row, text)
        if row.conversation:  # a conversation of its own goes on here, on screen: opened, the message its next turn
            session = await self.screen.surface.store.get_session(row.session_id)
            if session is None:
                return f"{row.label}'s conversation is gone."
            await self.desk.mark_read(row)
            self.screen.app.pop_screen()  # not awaited: the fleet screen is the one asking, it goes once this returns
            await self._open_session(row.session_id)
            await self.screen.send_to(session, text)
            return None
        handle = await self.screen.surface.runs.follow_up(row.session_id, text)  # here, with its dialogs and ledger
        return f"{handle.label} goes on with your message."

    def message_refusal(self, row: FleetRow) -> str | None:
        if self._here(row) and row.conversation:
            return None  # it opens here, and the message goes on with it
        return self.desk.no_message(row)
