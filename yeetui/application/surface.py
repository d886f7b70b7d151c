"""The application surface as one object: what a front end — the TUI, the CLI, the ACP agent, the MCP server —
does and reads over one runtime. `Surface.open` builds the runtime and its desks; a front end receives the
surface and never the runtime (an import-linter contract and the seam test hold it to that).

A desk holds the use cases of one topic and the rules that go with them (`surface.schedules.add` refuses an
unknown profile whoever calls it). Besides the desks the surface hands out the read models a front end shows
(the status ledger, a session's heading, the fleet) and the runtime's facts it reads: the settings, the
profiles, the project, the start-up warnings; the store's reads and the bus's typed events.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from yeetui.application.agents import AgentDesk
from yeetui.application.fleet import FleetDesk
from yeetui.application.inbox import InboxDesk
from yeetui.application.mcp import McpServers
from yeetui.application.models import Models
from yeetui.application.runs import RunDesk
from yeetui.application.schedules import Scheduler
from yeetui.application.sessions import SessionDesk
from yeetui.application.watchers import PairWatching
from yeetui.application.worktrees import WorktreeDesk
from yeetui.bus import Bus
from yeetui.definitions.foreign.commands import CommandFile
from yeetui.definitions.profiles import ProfileSet
from yeetui.runtime import FrontEnd, Runtime
from yeetui.settings.config import Settings
from yeetui.store import Store
from yeetui.subagents.heading import SessionHeading, session_heading
from yeetui.subagents.ledger import Ledger
from yeetui.subagents.ledger_sync import LedgerSync
from yeetui.subagents.session_control import SessionControl

__all__ = ["FrontEnd", "Surface"]


class Surface:
    """The use cases and read models of one runtime, by topic."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        """The composition root's parts: for the application's own modules and tests. A front end does not
        touch it (tests/unit/test_front_end_seam.py)."""
        self.runs = RunDesk(runtime)
        """Runs wherever they execute: find, cancel, steer, follow up, their panes."""
        self.sessions = SessionDesk(runtime)
        """Which session to open, new ones, compacting, the tree a switcher shows."""
        self.inbox = InboxDesk(runtime)
        self.worktrees = WorktreeDesk.of(runtime)
        """The worktrees subagents work in: merge, discard, open."""
        self.pair = PairWatching(runtime)
        """The pair watcher of a session, on or off."""
        self.schedules = Scheduler(runtime.store, runtime.bus)
        """Scheduled agents: add, list, remove, fire the due ones."""
        self.fleet = FleetDesk(runtime.store, env=runtime.env, stall_after=runtime.settings.stall_after)
        """Every run of every project on the data dir, and the answers and stops that reach them."""
        self.mcp = McpServers(runtime.project_dir, env=runtime.env, grants=runtime.settings.project_grants,
                              runtime=runtime)
        """The MCP servers of the project: configured, approved, connected."""
        self.models = Models(runtime)
        """The models a front end offers, and why one cannot be used."""
        self.agents = AgentDesk(runtime)
        """Runs started from a command: in a detached worker, or here until they end."""

    @classmethod
    async def open(cls, *, cwd: Path | None = None, front_end: FrontEnd | None = None,
                   overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> Surface:
        """The surface over a runtime opened for `cwd`'s project (see `Runtime.open`)."""
        return cls(await Runtime.open(cwd=cwd, front_end=front_end, overrides=overrides, env=env))

    # -- what a front end reads ---------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def profiles(self) -> ProfileSet:
        return self.runtime.profiles

    @property
    def project_dir(self) -> Path:
        return self.runtime.project_dir

    @property
    def env(self) -> Mapping[str, str]:
        return self.runtime.env

    @property
    def store(self) -> Store:
        """For reading records (a front end's writes go through the desks: the seam test fails on one)."""
        return self.runtime.store

    @property
    def bus(self) -> Bus:
        """The domain's typed events, to listen to."""
        return self.runtime.bus

    @property
    def warnings(self) -> list[str]:
        """What opening the runtime found wrong or weaker than asked, said once at start."""
        return self.runtime.warnings

    @property
    def notes(self) -> list[str]:
        """What a front end says once at start besides warnings (the project instruction files agents read)."""
        return self.runtime.notes

    @property
    def command_files(self) -> list[CommandFile]:
        """Claude Code / OpenCode / the user's slash-command files (a front end adds them to its commands)."""
        return self.runtime.command_files

    # -- read models --------------------------------------------------------------------------------------

    def ledger(self, *, clock: Callable[[], float] = time.monotonic) -> Ledger:
        """A status ledger fed by this runtime's events (one per view: its rows linger on its clock)."""
        return Ledger(self.runtime.bus, clock=clock, stall_after=self.runtime.settings.stall_after)

    def ledger_sync(self, ledger: Ledger) -> LedgerSync:
        """What keeps `ledger` true for the runs of other processes (detached workers) and for tree costs."""
        return LedgerSync(self.runtime.store, ledger, project_dir=self.runtime.project_dir,
                          is_local=self.runs.is_live)

    async def heading(self, session_id: str, ledger: Ledger | None = None, *,
                      model: str | None = None) -> SessionHeading | None:
        """The heading of a session (its label, model, spend), or None when it does not exist."""
        return await session_heading(self.runtime.store, session_id, ledger, model=model)

    # -- conversations and closing ----------------------------------------------------------------------------

    def session_control(self, session_id: str, *, model: str | None = None) -> SessionControl:
        """The interactive control of one conversation (what a front end drives)."""
        return self.runtime.session_control(session_id, model=model)

    async def close(self) -> None:
        """Quitting: see `Runtime.close`."""
        await self.runtime.close()
