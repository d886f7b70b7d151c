"""Children whose worker runs in a tmux pane (`tmux`/`terminal` mode): whether panes can be used here, opening
the worker's window and recording where it is, following the run to its end (`RunsElsewhere`), and finding
its window again. The tmux server itself is `PaneHost` (yeetui.subagents.panes)."""

from __future__ import annotations

import asyncio
from collections import defaultdict

from yeetui.bus import Bus
from yeetui.events import Notice, RunStatus
from yeetui.runs.spec import RunOptions, RunResult
from yeetui.store import Store
from yeetui.subagents.elsewhere import RunsElsewhere
from yeetui.subagents.panes import Pane, PaneHost, TmuxError
from yeetui.subagents.spawn_request import SpawnRefused
from yeetui.system.terminals import show_window


class PaneRuns:
    def __init__(self, host: PaneHost | None, elsewhere: RunsElsewhere, *, store: Store, bus: Bus) -> None:
        self.host = host
        """Where `tmux`/`terminal` mode children run; None: they run in-process (with a notice)."""
        self.elsewhere = elsewhere
        """The runs this process started in panes, followed until they end."""
        self.store = store
        self.bus = bus
        self._opening: defaultdict[str, set[asyncio.Future[None]]] = defaultdict(set)
        """Per parent session: the spawns of this process still opening their tmux pane. A spawn refused for
        the parent's limit waits for them first: one tmux refuses ends failed, and frees its place."""

    async def problem(self) -> str | None:
        """Why a child cannot run in a pane here, or None."""
        return "this process has no tmux host" if self.host is None else await self.host.problem()

    async def siblings_opened(self, parent_session_id: str | None) -> bool:
        """Wait for the parent's children still opening their pane; False when none was. Each holds a place
        among the parent's children that it gives back if tmux refuses it."""
        opening = self._opening.get(parent_session_id or "")
        if not opening:
            return False
        await asyncio.wait(list(opening))
        return True

    async def start(self, run_id: str, label: str, *, parent_session_id: str | None, session_id: str,
                    show: bool = False) -> None:
        """Start the run's worker in a window of yeetui's tmux server (`show`, for `terminal` mode: and put it
        in front of the user at once), record the window on the run, and follow the run from here. When tmux
        refuses, the run is recorded failed and the spawn refused."""
        assert self.host is not None
        opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        key = parent_session_id or ""
        siblings = self._opening[key]
        siblings.add(opened)
        try:
            pane = await self.host.start(run_id, label)
        except (TmuxError, OSError) as exc:
            await self.store.update_run(run_id, status=RunStatus.FAILED, error=f"could not open its tmux window: {exc}")
            raise SpawnRefused(f"{label} could not start in a tmux pane: {exc}") from None
        finally:  # its place among the parent's children is settled: taken, or (failed) given back
            siblings.discard(opened)
            if not siblings:
                self._opening.pop(key, None)
            opened.set_result(None)
        run = await self.store.get_run(run_id)
        options = RunOptions.of(run).but(pane={"server": pane.server, "window": pane.window, "pane": pane.pane_id})
        if run is not None and run.pid is None:  # the worker records its own pid when it claims the run
            await self.store.update_run(run_id, pid=pane.pid, options=options.to_json())
        else:
            await self.store.update_run(run_id, options=options.to_json())
        where = f"{label} runs in tmux window {pane.window}: {pane.attach_command()}"
        if show:
            shown = await asyncio.to_thread(show_window, pane.server, pane.target, env=self.host.env,
                                            prefer="window")
            if shown.how != "command":
                where = f"{label} runs in tmux window {pane.window}, opened in {shown.how.replace('-', ' ')}."
        self.bus.publish(Notice("info", where, parent_session_id or session_id))
        self.elsewhere.follow(run_id, parent_session_id)

    def ended(self, run_id: str, limit: float, *, inline: bool = False) -> asyncio.Future[RunResult]:
        """The run's ending, once its worker has recorded it (see `RunsElsewhere.ended`); `inline`: taken as a
        blocking spawn's tool result, so marked delivered here."""
        return asyncio.ensure_future(self.elsewhere.ended(run_id, limit, inline=inline))

    def children_of(self, session_id: str) -> list[str]:
        """The followed pane runs of a parent session."""
        return self.elsewhere.children_of(session_id)

    @property
    def asks_answered_here(self) -> bool:
        """This process shows permission dialogs: a pane's worker posts its questions for it to ask."""
        return self.elsewhere.answers_asks

    async def adopt(self) -> None:
        """At start: follow the pane runs that outlived the yeetui that started them (see RunsElsewhere)."""
        await self.elsewhere.adopt()

    async def pane_of(self, run_id: str) -> Pane | None:
        """The tmux window a run lives in, while its pane is there."""
        run = await self.store.get_run(run_id)
        pane = RunOptions.of(run).pane if run else None
        if run is None or not pane or self.host is None or not await self.host.server.has_pane(pane["pane"]):
            return None
        return Pane(pane["server"], pane["window"], pane["pane"], run.pid or 0)

    async def close(self) -> None:
        await self.elsewhere.close()
        if self.host is not None:
            await self.host.close()
