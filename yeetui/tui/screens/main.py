"""The main screen: the controller between the domain and the widgets.

Domain events arrive through one worker (`_pump`) and are routed to the widget that shows them; user input
arrives as widget messages and becomes domain calls (SessionControl, the spawner, the watcher). No agent
logic lives here, and none in the widgets.

The screen holds its collaborators rather than inheriting them: `SessionStart` (yeetui.tui.startup) opens
the session and runs what was sent meanwhile; the slash commands (yeetui.tui.slash) are a table of
handlers that get this screen through `CommandScreen`; what typed text becomes (`typed_input`), the panels' keys
(`panel_actions`) and the permission dialogs (`permission_queue`) have modules of their own. All are imported
here, never the other way round. What the screen does and reads comes from its `Surface`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Input, Static, TextArea

from yeetui import events as ev
from yeetui.application.schedules import TUI_INTERVAL as SCHEDULES_INTERVAL
from yeetui.application.surface import Surface
from yeetui.errors import YeetuiError
from yeetui.store.records import SessionRecord
from yeetui.subagents.ledger import LedgerRow, status_word
from yeetui.subagents.panes import Pane
from yeetui.tui.file_complete import project_files
from yeetui.tui.screens.confirm import ConfirmScreen
from yeetui.tui.screens.fleet import FleetScreen, InAppFleetHost
from yeetui.tui.screens.help import HelpScreen
from yeetui.tui.screens.panel_actions import inbox_action, ledger_action
from yeetui.tui.screens.permission_queue import PermissionQueue
from yeetui.tui.screens.picker import Choice, PickerScreen
from yeetui.tui.screens.switcher import SwitcherScreen
from yeetui.tui.screens.typed_input import handle_typed, send_typed
from yeetui.tui.slash import (
    all_commands,
)
from yeetui.tui.startup import LOADING, Pending, SessionStart
from yeetui.tui.textual_workarounds import app_bindings, being_removed
from yeetui.tui.widgets.composer import Composer, Draft
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.conversation_pages import ConversationPages
from yeetui.tui.widgets.embedded_pane import EmbeddedPane
from yeetui.tui.widgets.footer import FittedFooter
from yeetui.tui.widgets.inbox import InboxPanel
from yeetui.tui.widgets.inbox_badge import InboxBadge
from yeetui.tui.widgets.ledger import LedgerPanel
from yeetui.tui.widgets.message_views import Pacing
from yeetui.tui.widgets.session_header import SessionHeader

if TYPE_CHECKING:
    from yeetui.application.runs import SpawnHandle
    from yeetui.subagents.session_control import SessionControl

log = logging.getLogger(__name__)
_VIEW_ONLY = (ev.TextDelta, ev.ThinkingDelta, ev.StreamRestarted, ev.ToolCallStarted, ev.ToolCallFinished,
              ev.MessageCommitted)
"""Events that only matter to an open conversation view."""
USER_KINDS = frozenset({"interjection", "permission", "orchestrator", "budget"})
"""Inbox items that need the user from any session of the tree (a watcher's advice, a question, an
orchestrator's blocked step or its end)."""
LEDGER_SYNC_INTERVAL = 1.0
"""Seconds between looks at the store for runs of other processes and tree costs."""
SECOND_ESC = 8.0
"""Seconds within which a second esc stops the background subagents the first one named."""


class MainScreen(Screen[None]):
    CSS_PATH = "main.tcss"
    BINDINGS = [  # priority: the composer (a TextArea) would take them for its own cursor otherwise
        Binding("pageup", "scroll_conversation(-1)", "Scroll up", id="scroll_up", show=False, priority=True),
        Binding("pagedown", "scroll_conversation(1)", "Scroll down", id="scroll_down", show=False, priority=True),
        Binding("ctrl+home", "jump_conversation('start')", "Start of conversation", id="jump_start", show=False,
                priority=True),
        Binding("ctrl+end", "jump_conversation('end')", "End of conversation", id="jump_end", show=False,
                priority=True),
        # Plain Home / End too, unless they would move the cursor in a draft (see check_action).
        Binding("home", "jump_unless_editing('start')", "Start of conversation", id="jump_start_home", show=False,
                priority=True),
        Binding("end", "jump_unless_editing('end')", "End of conversation", id="jump_end_end", show=False,
                priority=True),
    ]

    class Ready(Message, namespace="main_screen"):
        """The session is open and what was sent during start-up has been handled."""

    def __init__(self, surface: Surface, *, resume: str | None = None, continue_latest: bool = False,
                 model: str | None = None, extra_warnings: list[str] | None = None,
                 pending: list[Pending[MainScreen]] | None = None,
                 ledger_clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.surface = surface
        """What the screen does and reads: the application surface (never the runtime behind it)."""
        self._children_offer: float | None = None
        """When esc last named the background subagents (a second esc soon after stops them)."""
        self.model = model
        """The model this window's sessions use; None: the configured default."""
        self.commands, command_warnings = all_commands(surface.profiles, surface.command_files)
        self.ledger = surface.ledger(clock=ledger_clock)
        self.ledger_sync = surface.ledger_sync(self.ledger)
        """Rows for runs of other yeetui processes (detached workers) and the tree cost of parent rows."""
        self.controls: dict[str, SessionControl] = {}
        self.current: str | None = None
        self.root: str | None = None
        """The top-level session whose tree is on screen (inbox, switcher)."""
        self.session_ids: set[str] = set()
        self._views: dict[str, ConversationView] = {}
        self.pages = ConversationPages(surface.store)
        self.pacing = Pacing()
        """Streamed answers are drawn less often while the user types (their keys echo first)."""
        self.permissions = PermissionQueue(surface.fleet, show=lambda dialog, done: self.app.push_screen(dialog, done),
                                           later=lambda work: self.run_worker(work, group="permissions"),
                                           tell=self._say_settled)
        self.startup = SessionStart(self, pending if pending is not None else [], resume=resume,
                                    continue_latest=continue_latest,
                                    warnings=[*(extra_warnings or []), *command_warnings])
        """Opens the session; until then, what is sent waits in its `pending` (shared with the app)."""
        self.carry: Draft | None = None
        """The starting screen's composer draft, set by the app before this screen shows."""

    @property
    def ready(self) -> bool:
        """The session is open and what was sent during start-up is handled: input is handled at once."""
        return self.startup.ready

    @property
    def composer(self) -> Composer:
        return self.query_one(Composer)

    def focus_composer(self) -> None:
        self.composer.focus()

    def compose(self) -> ComposeResult:
        with Horizontal(id="header-row"):
            yield SessionHeader(id="session-header")
            yield InboxBadge(id="inbox-badge")
        yield LedgerPanel(id="ledger")
        with Horizontal(id="body"):
            with ContentSwitcher(id="conversations", initial="conv-loading"):
                yield Static(LOADING, id="conv-loading")  # until the session's history is in
            yield InboxPanel(id="inbox")
        yield Composer(id="composer")
        yield FittedFooter()

    def on_mount(self) -> None:
        """Quick: the session opens in a worker (`_start`).

        Takes over the starting screen's draft and the focus synchronously, so the composer has both before
        the app dispatches another key (see YeetuiApp.handover)."""
        self.run_worker(self._pump(), name="events", exclusive=False)
        self.watch(self.query_one(InboxPanel), "unread", lambda _: self._show_inbox_badge(), init=False)
        composer = self.composer
        composer.commands = [(f"/{c.name}", c.help) for c in self.commands]
        composer.profiles = list(self.surface.profiles.names())
        composer.file_source = self._files
        if self.carry is not None:
            composer.restore(self.carry)
        self.startup.show_pending()
        self.set_focus(composer.input)
        self.run_worker(self._start(), name="start", exclusive=False)
        self.set_interval(LEDGER_SYNC_INTERVAL, self.ledger_sync.refresh, name="ledger-sync")
        self.set_interval(SCHEDULES_INTERVAL, self._fire_schedules, name="schedules")

    async def _fire_schedules(self) -> None:
        """A running app fires due scheduled agents too (each trigger once, whoever looks first)."""
        try:
            await self.surface.schedules.tick()
        except YeetuiError as exc:
            await self.notice("warning", f"Could not look at the schedules: {exc}")

    async def _start(self) -> None:
        try:
            await self.startup.run()
        except NoMatches:
            if being_removed(self):  # taken down while start-up awaited the store: its widgets are gone
                return
            raise
        self.post_message(self.Ready())

    def _files(self, prefix: str) -> list[str]:
        return project_files(self.surface.project_dir, prefix)

    def on_resize(self) -> None:
        """Narrow terminals: the inbox is hidden until toggled (ctrl+b)."""
        narrow = self.size.width < 100
        if narrow != self.has_class("-narrow"):
            self.set_class(narrow, "-narrow")
            self.query_one(InboxPanel).display = not narrow
            self._show_inbox_badge()

    def _show_inbox_badge(self) -> None:
        """The unread count in the header line while the inbox is hidden, so new items are not missed."""
        inbox = self.query_one(InboxPanel)
        self.query_one(InboxBadge).unread = 0 if inbox.display else inbox.unread

    def bind_profile_hotkeys(self) -> None:
        taken = {b.key for b in app_bindings(self.app)} | {"f2", "ctrl+s", "ctrl+p", "escape", "ctrl+q", "ctrl+b"}
        for profile in self.surface.profiles.profiles.values():
            key = profile.triggers.hotkey
            if not key or profile.name == "pair":
                continue
            if key in taken:
                self.app.call_later(self.notice, "warning", f"Profile {profile.name!r}: hotkey {key} is "
                                    "already bound to a built-in action; the built-in wins.")
                continue
            self.app.bind(key, f"profile_hotkey('{profile.name}')", description=profile.name)
            taken.add(key)

    def on_key(self, event: events.Key) -> None:
        """A printable key that reached the screen unused — the focus is on a clicked tool row, card,
        conversation, the inbox or the ledger, not on a text field — goes into the composer, as if it had the
        focus: typing a word never acts on a panel. The panels bind only enter and keys with a modifier (alt+m,
        …); a key the user's keymap put on a panel action is left to it."""
        if not event.is_printable or event.character is None or event.key in self.app.active_bindings:
            return
        if isinstance(self.app.focused, (TextArea, Input, EmbeddedPane)):
            return
        event.stop()
        event.prevent_default()
        composer = self.composer
        composer.focus()
        composer.input.insert(event.character)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "jump_unless_editing":
            focused = self.focused
            draft = focused.text if isinstance(focused, TextArea) else focused.value if isinstance(focused, Input) \
                else ""
            return not draft  # with text written, Home / End move its cursor
        return True

    def action_jump_unless_editing(self, where: str) -> None:
        self.action_jump_conversation(where)

    def action_jump_conversation(self, where: str) -> None:
        """Jump to the start or the end of the open conversation, whatever has the focus."""
        if self.current is None:
            return
        view = self.view()
        if where == "start":
            view.jump_to_start()
        else:
            view.jump_to_end()

    def action_scroll_conversation(self, direction: int) -> None:
        """Page the open conversation while the composer keeps the focus (and the draft)."""
        view = self.view()  # releasing the anchor: the view stops following the end until scrolled back to it
        page = view.scrollable_content_region.height
        view.scroll_to(y=view.scroll_y + direction * page, animate=False, release_anchor=True)

    # -- sessions ----------------------------------------------------------------------------------

    def view(self, session_id: str | None = None) -> ConversationView:
        return self.query_one(f"#conv-{session_id or self.current}", ConversationView)

    async def notice(self, level: str, text: str) -> None:
        """A line in the open conversation (`level`: info, warning or error)."""
        await self.view().add_notice(level, text)

    def control(self, session_id: str) -> SessionControl:
        if session_id not in self.controls:
            self.controls[session_id] = self.surface.session_control(session_id, model=self.model)
        return self.controls[session_id]

    async def set_model(self, model: str) -> None:
        """Use `model` for this window's sessions: those already open and those opened later; the header says
        so at once."""
        self.model = model
        for session_id in {*self.controls, *self._views}:
            await self.control(session_id).use_model(model)
        await self.refresh_header()

    def show_busy(self) -> None:
        """The open session's state on the composer: whether it is busy, and how many messages wait."""
        control = self.controls.get(self.current or "")
        self.composer.set_busy(bool(control and control.busy), len(control.queue) if control else 0)

    async def new_session(self) -> None:
        """Start a new primary session and open it."""
        session = await self.surface.sessions.new(model=self.model, replacing=self.current)
        await self.open_session(session.id)

    async def open_session(self, session_id: str) -> None:
        store = self.surface.store
        session = await store.get_session(session_id)
        if session is None:
            self.notify(f"Session {session_id} no longer exists.", severity="error")
            return
        switcher = self.query_one("#conversations", ContentSwitcher)
        if not self.query(f"#conv-{session_id}"):
            view = ConversationView(session_id, id=f"conv-{session_id}", pacing=self.pacing)
            view.display = False  # shown once its history is in: never an empty frame before it
            await switcher.mount(view)
            self._views[session_id] = view
            await self.pages.open(view)
        elif session_id != self.current:  # back to a conversation opened before (the parent): show its end
            self.call_after_refresh(self._views[session_id].jump_to_end)
        switcher.current = f"conv-{session_id}"
        for placeholder in self.query("#conv-loading"):
            await placeholder.remove()
        self.current = session_id
        root = session
        while root.parent_id and (parent := await store.get_session(root.parent_id)):
            root = parent
        if root.id != self.root:
            self.root = root.id
            self.session_ids = {root.id, *(s.id for s in await store.descendants(root.id))}
            inbox = self.query_one(InboxPanel)
            inbox.set_items([i for sid in self.session_ids for i in await store.inbox.list(sid)
                             if self._for_user(i.session_id, i.kind)])
        await self.refresh_header()
        self.show_busy()

    async def refresh_header(self) -> None:
        """Name the session on screen in the header: its trail from the primary, status, model."""
        heading = await self.surface.heading(self.current or "", self.ledger, model=self.model)
        headers = self.query(SessionHeader)
        if not headers:  # the app quit while the store was read: the screen is being taken down
            return
        headers.first().show(heading)
        if heading is not None:
            self.sub_title = heading.text()

    async def _follow_row(self, row: LedgerRow) -> None:
        """A ledger row of the session on screen changed: the header follows its status (and the title a
        first prompt gave), not every change of activity or cost."""
        heading = self.query_one(SessionHeader).heading
        if heading is None or heading.status != status_word(row) or heading.model != row.model or \
                (not heading.title and len(heading.trail) == 1):
            await self.refresh_header()

    async def open_parent(self) -> None:
        session = await self.surface.store.get_session(self.current or "")
        if session and session.parent_id:
            await self.open_session(session.parent_id)

    async def open_switcher(self) -> None:
        # the ledger's live rows name a watcher between runs, a queued run …
        nodes = await self.surface.sessions.tree(self.ledger.rows())

        async def chosen(result: str | None) -> None:
            if result == "new":
                await self.new_session()
            elif result:
                await self.open_session(result)

        await self.app.push_screen(SwitcherScreen(nodes, self.current), chosen)

    async def open_fleet(self) -> None:
        """Every run of every project on this data dir (ctrl+g), to act on (see yeetui.tui.screens.fleet)."""
        desk = self.surface.fleet
        await self.app.push_screen(FleetScreen(desk, InAppFleetHost(self, desk, self.open_session)))

    async def show_help(self, keys: list[tuple[str, str]], commands: list[tuple[str, str]]) -> None:
        await self.app.push_screen(HelpScreen(keys, commands))

    # -- input -------------------------------------------------------------------------------------

    @on(Composer.Submitted)
    async def submitted(self, message: Composer.Submitted) -> None:
        text = message.text.strip()
        if text and not self.startup.hold(text):
            await self.handle_input(text)

    async def handle_input(self, text: str) -> None:
        """A prompt, `/command`, `!shell` or `@profile …` sent from the composer, once the session is open."""
        await handle_typed(self, text)

    async def send_prompt(self, text: str) -> None:
        session = await self.surface.store.get_session(self.current or "")
        if session is not None:
            await self.send_to(session, text)

    async def send_to(self, session: SessionRecord, text: str) -> None:
        """A message typed into the session on screen (see typed_input.send_typed)."""
        await send_typed(self, session, text)

    async def spawn(self, profile: str, prompt: str, **kw: Any) -> None:
        """Start a subagent of `profile` under the session on screen; a refusal is shown, not raised."""
        try:
            handle = await self.control(self.current or "").spawn(profile, prompt, **kw)
        except YeetuiError as exc:
            await self.notice("error", str(exc))
            return
        await self.show_spawned(handle)

    async def show_spawned(self, handle: SpawnHandle) -> None:
        """A subagent started from this screen: its session joins the tree on screen; the conversation says so."""
        self.session_ids.add(handle.session_id)
        await self.notice("info", f"Started {handle.label}.")

    async def interrupt(self) -> bool:
        """Stop what runs in the session on screen; False when nothing ran there. When only its subagents run
        in the background, say so — and a second esc soon after stops them."""
        if self.current in self.controls and await self.controls[self.current].interrupt():
            return True
        runs = await self.surface.store.list_runs(session_id=self.current or "", limit=1)
        if runs and self.surface.runs.is_live(runs[0].id):
            self.surface.runs.abort(runs[0].id)
            return True
        if (elsewhere := await self.surface.runs.elsewhere(self.current or "")) is not None:
            with contextlib.suppress(YeetuiError):  # it ended meanwhile: nothing to stop
                await self.surface.runs.cancel(elsewhere.id, graceful=False)
                return True
        return await self._interrupt_children()

    async def _interrupt_children(self) -> bool:
        children = self.surface.runs.live_here(under_session=self.current) if self.current else []
        if not children:
            self._children_offer = None
            return False
        labels = ", ".join(self.surface.runs.label(run_id) for run_id in children)
        now = time.monotonic()
        if self._children_offer is not None and now - self._children_offer <= SECOND_ESC:
            self._children_offer = None
            await self.notice("info", f"Stopping {labels}.")
            await self.surface.runs.stop_children(self.current or "")
            return True
        self._children_offer = now
        await self.notice("info", f"Nothing runs in this conversation; its subagents run in the background: "
                                  f"{labels}. Press esc again to stop them all, or /cancel one of them.")
        return True

    def running_subagents(self) -> list[str]:
        """Labels of the subagents this process runs (they stop when it quits)."""
        return [self.surface.runs.label(run_id) for run_id in self.surface.runs.live_here()]

    async def embed(self, pane: Pane | None, label: str = "") -> None:
        """Show `pane` (a subagent's tmux window) live under the conversation, focused; None closes it."""
        for old in self.query(EmbeddedPane):
            await old.remove()
        if pane is None:
            self.composer.focus()
            return
        env = {k: v for k, v in self.surface.env.items() if k != "TMUX"}
        view = EmbeddedPane(self.surface.runs.attach_command(pane), env=env, title=f"{label} · tmux {pane.window}")
        await self.mount(view, before=self.composer)
        view.focus()

    @on(EmbeddedPane.Released)
    def _pane_released(self) -> None:
        self.composer.focus()

    @on(EmbeddedPane.Exited)
    async def _pane_exited(self) -> None:
        await self.embed(None)

    def toggle_inbox(self) -> None:
        inbox = self.query_one(InboxPanel)
        inbox.display = not inbox.display
        self._show_inbox_badge()

    async def toggle_pair(self) -> None:
        target = self.current if self.current in self.controls or self.current == self.root else self.root
        watching = await self.surface.pair.toggle(target or "")
        await self.notice("info", "Pair watcher on." if watching else "Pair watcher off.")

    def prefill(self, text: str) -> None:
        """Put `text` in the composer for the user to finish, and focus it."""
        composer = self.composer
        composer.text = text
        composer.focus()

    def give_back(self, text: str) -> None:
        """Put `text`, sent but taken by nothing, back in the composer: before what was typed since (a message
        sent during start-up is handled later), never over it."""
        composer = self.composer
        draft = composer.text
        composer.text = f"{text}\n{draft}" if draft.strip() else text
        composer.focus()

    def pick(self, title: str, choices: Sequence[tuple[str, str]], current: str | None,
             then: Callable[[str | None], Awaitable[None]]) -> None:
        self.app.push_screen(PickerScreen(title, [Choice(value, note) for value, note in choices], current), then)

    def confirm(self, question: str, detail: str, yes: str, then: Callable[[], Awaitable[None]]) -> None:
        """Ask `question` (ConfirmScreen: keys typed ahead cannot answer it); `then` runs on a deliberate yes."""
        async def answered(confirmed: bool | None) -> None:
            if not confirmed:
                return
            try:
                await then()
            except YeetuiError as exc:
                await self.notice("error", str(exc))

        self.app.push_screen(ConfirmScreen(question, detail, yes=yes), answered)

    async def profile_hotkey(self, profile: str) -> None:
        self.prefill(f"@{profile} ")

    # -- domain events -----------------------------------------------------------------------------

    async def _pump(self) -> None:
        handled = 0
        events: asyncio.Queue[ev.Event] = asyncio.Queue()
        with self.surface.bus.listen(events.put_nowait):
            # The questions of other processes' runs found while the runtime opened were published before this
            # screen listened: asked again now, in the same step as the listening starts, each reaches it once.
            self.surface.runs.ask_again()
            while True:
                event = await events.get()
                try:
                    await self._route(event)
                except Exception:  # one bad event must not stop the screen from updating
                    log.exception("could not show %s", getattr(event, "kind", event))
                handled += 1
                if handled % 20 == 0:  # a backlog must not starve keys and painting
                    await asyncio.sleep(0)

    async def _route(self, event: ev.Event) -> None:
        session_id = getattr(event, "session_id", None)
        view = self._views.get(session_id) if session_id else None
        if view is None and isinstance(event, _VIEW_ONLY):
            return  # a stream of a session that is not open: nothing to draw
        if view is not None and await view.draw(event):
            return
        match event:
            case ev.Notice():
                target = view or (self.view() if self.current else None)
                if target is not None:
                    await target.add_notice(event.level, event.text)
            case ev.PermissionRequested():
                await self.permissions.ask(event)
            case ev.LedgerChanged():
                self.query_one(LedgerPanel).update_row(event.run_id, event.row)
                if event.row is not None and event.row.session_id == self.current:
                    await self._follow_row(event.row)
            case ev.RunRegistered() if event.parent_session_id in self.session_ids:
                self.session_ids.add(event.session_id)
            case ev.InboxItemAdded() if event.session_id in self.session_ids and \
                    self._for_user(event.session_id, event.item_kind):
                await self._inbox_item(event.item_id)
            case ev.SessionBusyChanged() if event.session_id == self.current:
                self.composer.set_busy(event.busy, event.queued)

    async def _inbox_item(self, item_id: int) -> None:
        """A new inbox item for the user: in the panel, and said in a toast when the panel is hidden (a narrow
        terminal), or unread items go unseen."""
        item = await self.surface.inbox.get(item_id)
        if item is None:
            return
        inbox = self.query_one(InboxPanel)
        inbox.add_item(item)
        if not inbox.display:
            self.notify(f"Inbox: {item.title} ({inbox.unread} unread · ctrl+b)", timeout=4,
                        markup=False)  # an agent's words: never Textual markup

    def _for_user(self, session_id: str, kind: str) -> bool:
        """Whether an inbox item of the tree on screen is the user's: what was sent to the top session (the
        user's conversation), and what needs the user wherever it arose. A subagent's own mail — the steps an
        orchestrator's children report back to it — is its input, shown in its session, not the user's inbox."""
        return session_id == self.root or kind in USER_KINDS

    async def _say_settled(self, said: str) -> None:
        if self.current is not None and not being_removed(self):
            await self.notice("info", said)

    # -- widget messages ---------------------------------------------------------------------------

    @on(ConversationView.OpenSession)
    async def open_child(self, message: ConversationView.OpenSession) -> None:
        await self.open_session(message.session_id)

    @on(TextArea.Changed, "#composer-input")
    def _typing(self, event: TextArea.Changed) -> None:
        self.pacing.typed()
        self.call_after_refresh(self.pacing.echoed)  # a stream's draw held for the echo runs after it

    @on(ConversationView.LoadOlder)
    async def load_older(self, message: ConversationView.LoadOlder) -> None:
        await self.pages.older(self.view(message.session_id), message)

    @on(ConversationView.LoadNewer)
    async def load_newer(self, message: ConversationView.LoadNewer) -> None:
        await self.pages.newer(self.view(message.session_id), message)

    @on(ConversationView.Jump)
    async def jump(self, message: ConversationView.Jump) -> None:
        await self.pages.jump(self.view(message.session_id), message)

    @on(LedgerPanel.Action)
    async def ledger_action(self, message: LedgerPanel.Action) -> None:
        await ledger_action(self, message, self.query_one(LedgerPanel).rows.get(message.run_id))

    @on(InboxPanel.Action)
    async def inbox_action(self, message: InboxPanel.Action) -> None:
        await inbox_action(self, message, self.query_one(InboxPanel))
