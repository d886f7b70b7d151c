"""A conversation as an interactive front end drives it: one primary run at a time, prompts typed meanwhile
queued, Esc interrupting only this session, `!cmd` shell commands, user-launched subagents.

Headless (no Textual): the TUI calls these methods and renders the events they cause.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from yeetui.bus import Bus
from yeetui.errors import YeetuiError
from yeetui.events import MessageCommitted, Notice, RunStatus, SessionBusyChanged
from yeetui.messages import Message
from yeetui.redact import redact
from yeetui.runs.launcher import RunLauncher
from yeetui.runs.spec import RunResult
from yeetui.store import Store
from yeetui.store.records import StoredMessage
from yeetui.subagents.ledger import run_status_word
from yeetui.subagents.spawner import AgentSpawner, SpawnHandle, SpawnRequest
from yeetui.text import cap
from yeetui.tools.shell import scrub_env

log = logging.getLogger(__name__)

QUIT_REASON = "yeetui quit while it ran"
"""The error of a conversation's run that quitting ended."""
SHELL_TIMEOUT = 120.0
SHELL_OUTPUT_CAP = 20_000


def ending_notice(status: RunStatus, error: str | None) -> str | None:
    """The error line a run's ending leaves in its conversation (`The run failed: …`), or None when it ended
    well. The same words live and when the transcript is restored (`yeetui --continue`)."""
    if not error or status in (RunStatus.COMPLETED, RunStatus.WAITING_USER) or not status.is_final:
        return None
    if status in (RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.INTERRUPTED):
        return f"The run {status.value}: {error}"  # a word that reads as what happened
    return f"The run ended, {run_status_word(status)}: {error}"  # timed out, budget exhausted, quota exhausted


async def ending_notices(store: Store, session_id: str, messages: Sequence[StoredMessage]) -> dict[int, list[str]]:
    """The error lines of the session's runs that ended badly, by the id of the message each follows (the
    last of that run among `messages`, the page on show): what was said live, said again on restore."""
    last: dict[str, int] = {}
    for stored in messages:
        if stored.run_id:
            last[stored.run_id] = stored.id
    notices: dict[int, list[str]] = {}
    if not last:
        return notices
    for run in await store.list_runs(session_id=session_id, limit=max(len(last) * 2, 20)):
        text = ending_notice(run.status, run.error)
        if text is not None and run.id in last:
            notices.setdefault(last[run.id], []).append(text)
    return notices


class SessionControl:
    def __init__(self, launcher: RunLauncher, spawner: AgentSpawner, session_id: str, *, store: Store, bus: Bus,
                 project_dir: Path, env: Mapping[str, str], secrets: Sequence[str], model: str | None = None) -> None:
        self.launcher = launcher
        self.spawner = spawner
        self.store = store
        self.bus = bus
        self.project_dir = project_dir
        self.env = env
        """The environment of `!cmd` (scrubbed of keys before the shell gets it)."""
        self.secrets = secrets
        """Values redacted from a shell command's output before it joins the conversation."""
        self.session_id = session_id
        self.model = model
        self.queue: deque[str] = deque()
        self._task: asyncio.Task[RunResult] | None = None
        self.last_result: RunResult | None = None

    async def use_model(self, model: str) -> None:
        """Run this conversation's next turns, and the subagents it spawns from now, on `model`."""
        self.model = model
        await self.launcher.models.choose(self.session_id, model)

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    def _publish_busy(self) -> None:
        self.bus.publish(SessionBusyChanged(self.session_id, self.busy, len(self.queue)))

    async def submit(self, text: str) -> None:
        """Send `text` to the primary agent now, or queue it behind the running turn."""
        self.queue.append(text)
        if not self.busy:
            self._start_next()
        self._publish_busy()

    def _start_next(self) -> None:
        if not self.queue:
            return
        prompt = self.queue.popleft()
        self._task = asyncio.create_task(self._run(prompt), name=f"yeetui primary {self.session_id[:8]}")
        self._task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[RunResult]) -> None:
        if not task.cancelled() and task.exception() is not None and not isinstance(task.exception(), YeetuiError):
            log.error("primary run crashed", exc_info=task.exception())
        if self._task is task:
            self._task = None
            self._start_next()
            self._publish_busy()

    async def _run(self, prompt: str) -> RunResult:
        try:
            result = await self.launcher.run_prompt(prompt, session_id=self.session_id, model=self.model,
                                                    interactive=True)
        except YeetuiError as exc:
            self.bus.publish(Notice("error", str(exc), self.session_id))
            raise
        self.last_result = result
        if (text := ending_notice(result.status, result.error)) is not None:
            self.bus.publish(Notice("error", text, self.session_id))
        return result

    async def wait_idle(self) -> None:
        """Wait until the running turn and every queued prompt are done."""
        while self._task is not None:
            try:
                await asyncio.shield(self._task)
            except (asyncio.CancelledError, YeetuiError):
                await asyncio.sleep(0)

    async def interrupt(self) -> bool:
        """Esc: cancel this session's running turn (its subagents stop with it). Queued prompts stay."""
        if not self.busy:
            return False
        task = self._task
        assert task is not None
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, YeetuiError):
            pass
        self.bus.publish(Notice("info", "Interrupted.", self.session_id))
        return True

    async def close(self, reason: str = QUIT_REASON) -> bool:
        """The front end quits: queued prompts are dropped and the running turn ends, stored as cancelled with
        `reason`. True when a turn was running."""
        self.queue.clear()
        task = self._task
        if task is None or task.done():
            return False
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, YeetuiError):
            await task
        runs = await self.store.list_runs(session_id=self.session_id, limit=1)
        if runs and runs[0].status == RunStatus.CANCELLED:  # the runner wrote "cancelled": say by whom
            await self.store.update_run(runs[0].id, error=reason)
        return True

    async def shell(self, command: str) -> Message:
        """`!cmd`: run a shell command in the project without the model; the output joins the conversation
        (as a user message) so the agent sees it next turn."""
        proc = await asyncio.create_subprocess_shell(
            command, cwd=self.project_dir, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            env=scrub_env(dict(self.env)), start_new_session=True)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), SHELL_TIMEOUT)
            code: int | str = proc.returncode if proc.returncode is not None else "?"
        except TimeoutError:
            proc.kill()
            out, code = b"", f"killed after {SHELL_TIMEOUT:g} s"
        text = cap(redact(out.decode("utf-8", errors="replace"), self.secrets), SHELL_OUTPUT_CAP)
        body = f"I ran `{command}` in the shell (exit {code}):\n```\n{text.rstrip()}\n```"
        message = Message.user(body, shell=True, command=command, exit_code=code)  # noqa: S604 - a note, not a call
        message_id = await self.store.append_message(self.session_id, message)
        self.bus.publish(MessageCommitted("", self.session_id, message_id, message))
        return message

    async def spawn(self, profile: str, prompt: str, **kw: Any) -> SpawnHandle:
        """A subagent the user launched (slash command, @profile, hotkey): a child of this session."""
        return await self.spawner.spawn(SpawnRequest(profile=profile, prompt=prompt, parent_session_id=self.session_id,
                                                     requested_by="user", **kw))
