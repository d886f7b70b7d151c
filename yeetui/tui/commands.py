"""Slash commands as data: the record each command is, what a command may use of the main screen, and the
parsing of what was typed. The commands themselves, and the one table of them, are in yeetui.tui.slash.

Imports no domain module at run time: the domain types below are for annotations only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.app import App

    from yeetui.application.runs import SpawnHandle
    from yeetui.application.surface import Surface
    from yeetui.store.records import SessionRecord


class CommandScreen(Protocol):
    """What a slash command may use of the main screen (yeetui.tui.screens.main.MainScreen has all of it)."""

    @property
    def app(self) -> App[Any]: ...

    @property
    def surface(self) -> Surface:
        """What the commands do and read: runs, sessions, worktrees, schedules, models, MCP servers…"""
        ...

    @property
    def commands(self) -> Sequence[SlashCommand]:
        """Every command this screen knows, in the order /help lists them."""
        ...

    @property
    def current(self) -> str | None:
        """The id of the session on screen."""
        ...

    @property
    def model(self) -> str | None:
        """The model this window's sessions use; None: the configured default."""
        ...

    async def set_model(self, model: str) -> None:
        """Use `model` for this window's sessions from their next turn on (the header names it at once)."""
        ...

    async def notice(self, level: str, text: str) -> None:
        """Show a line in the open conversation (`level`: info, warning or error)."""
        ...

    async def new_session(self) -> None: ...

    async def open_switcher(self) -> None: ...

    async def show_help(self, keys: list[tuple[str, str]], commands: list[tuple[str, str]]) -> None: ...

    def toggle_inbox(self) -> None: ...

    async def embed(self, pane: Any, label: str = "") -> None:
        """Show a subagent's tmux window inside the screen (None: close the one shown)."""

    async def toggle_pair(self) -> None: ...

    async def send_prompt(self, text: str) -> None:
        """Send `text` to the session on screen as a prompt, whatever it starts with."""
        ...

    async def send_to(self, session: SessionRecord, text: str) -> None:
        """A message for `session`: its conversation's next turn, its live run's guidance, or a finished
        subagent's follow-up; a refusal is shown and the text put back in the composer."""
        ...

    async def spawn(self, profile: str, prompt: str, **kw: Any) -> None:
        """Start a subagent of `profile` under the session on screen (`mode="tmux"`: in a pane); a refusal
        is shown, not raised."""
        ...

    async def show_spawned(self, handle: SpawnHandle) -> None:
        """A subagent started from this screen some other way: follow its session and say it started."""
        ...

    def prefill(self, text: str) -> None:
        """Put `text` in the composer for the user to finish, and focus it."""
        ...

    def give_back(self, text: str) -> None:
        """Put `text`, which the user sent but nothing took, back in the composer: before a draft begun since,
        never over it."""
        ...

    def pick(self, title: str, choices: Sequence[tuple[str, str]], current: str | None,
             then: Callable[[str | None], Awaitable[None]]) -> None:
        """Let the user pick one of `choices` ((value, note) pairs) in a list; `then` gets the value, or None
        when they close it."""
        ...

    def confirm(self, question: str, detail: str, yes: str, then: Callable[[], Awaitable[None]]) -> None:
        """Ask `question` in a dialog that keys typed ahead cannot answer; `then` runs only when the user
        deliberately chooses `yes` (a refusal it raises is shown, as a command's is)."""
        ...


Handler = Callable[[CommandScreen, str], Awaitable[None]]
"""Carries out a command: the screen, and the text typed after the command's name (stripped, maybe empty)."""


@dataclass(frozen=True)
class SlashCommand:
    name: str
    """Without the slash: `oracle`."""
    usage: str
    """How to type it, as /help shows it: `/oracle <question>`."""
    help: str
    handler: Handler
    palette_prefills: bool = False
    """Chosen in the command palette, the command is put in the composer for the user to finish (it needs
    text), instead of being run at once."""


def parse(text: str) -> tuple[str, str] | None:
    """`/oracle why?` → ("oracle", "why?"); None when `text` is not a slash command."""
    if not text.startswith("/") or text.startswith("//"):
        return None
    head, _, rest = text[1:].partition(" ")
    return head.strip().lower(), rest.strip()


def suggest(name: str, commands: Sequence[SlashCommand]) -> list[str]:
    """Close names for an unknown command (prefix or subsequence matches)."""
    names = [c.name for c in commands]
    close = [n for n in names if n.startswith(name[:2])] or [n for n in names if _subsequence(name, n)]
    return close[:4]


def _subsequence(needle: str, hay: str) -> bool:
    it = iter(hay)
    return all(ch in it for ch in needle)
