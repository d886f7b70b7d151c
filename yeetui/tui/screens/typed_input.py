"""What text sent from the composer becomes: a slash command, a shell command (`!ls`), a subagent (`@oracle …`,
with flags: `@builder --tmux --max-cost 0.5 …`), or a message for the session on screen — its conversation's next
turn, or the run it is (in this process or another), told where it went. Text that cannot be sent is never lost:
it goes back into the composer."""

from __future__ import annotations

from typing import Protocol

from yeetui.errors import YeetuiError
from yeetui.store.records import SessionRecord
from yeetui.subagents.session_control import SessionControl
from yeetui.tui.commands import CommandScreen, parse
from yeetui.tui.slash import FlagError, run_slash, spawn_flags


class InputScreen(CommandScreen, Protocol):
    """What sending typed text uses of the main screen besides the commands' share."""

    def control(self, session_id: str) -> SessionControl:
        """The conversation of `session_id`, driven from this screen."""
        ...


async def handle_typed(screen: InputScreen, text: str) -> None:
    """A prompt, `/command`, `!shell` or `@profile …` sent from the composer, once the session is open."""
    if (slash := parse(text)) is not None:
        await run_slash(screen, *slash, typed=text)
        return
    session = await screen.surface.store.get_session(screen.current or "")
    if session is None:
        return
    if text.startswith("!") and len(text) > 1:
        await screen.control(session.id).shell(text[1:].strip())
        return
    if text.startswith("@"):
        name, _, rest = text[1:].partition(" ")
        if name in screen.surface.profiles:
            try:  # `@builder --tmux --max-cost 0.5 …`: in a pane, with a budget
                where, rest = spawn_flags(rest.strip())
            except FlagError as exc:
                screen.give_back(text)
                await screen.notice("warning", f"{exc} Nothing was sent: your text is back in the composer.")
                return
            if rest.strip():
                await screen.spawn(name, rest.strip(), **where)
                return
    await send_typed(screen, session, text)


async def send_typed(screen: InputScreen, session: SessionRecord, text: str) -> None:
    """A message typed into the session on screen: its conversation's next turn, the run another process
    executes for it, the live subagent's next turn, or a finished subagent's follow-up."""
    try:
        sent = await screen.surface.runs.send(session, text, converse=screen.control(session.id).submit)
    except YeetuiError as exc:
        screen.give_back(text)  # never lost: back in the composer, to send elsewhere
        back = "; ctrl+o goes to the parent" if session.parent_id else ""
        await screen.notice("warning", f"{exc} Your message is back in the composer{back}.")
        return
    if sent.to == "elsewhere":
        await screen.notice("info", f"Sent to {sent.label} in process {sent.pid}; it reads it at its next turn.")
    elif sent.to == "live":
        await screen.notice("info", "Sent to the subagent; it reads it at its next turn.")
    elif sent.to == "follow_up":
        await screen.notice("info", f"{sent.label} goes on with your message; its answer goes to the parent as "
                          "its first did.")
