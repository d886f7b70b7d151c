"""Sessions as the user handles them from any front end: which one to open at start (`--resume`,
`--continue`), a new conversation, compacting one, and the tree of sessions a switcher shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from yeetui.application.session_tree import SessionTreeNode
from yeetui.errors import ConfigError
from yeetui.messages import Usage
from yeetui.runtime import Runtime
from yeetui.store.records import SessionRecord
from yeetui.subagents.heading import PRIMARY
from yeetui.subagents.ledger import ANSWERED, LedgerRow

__all__ = ["SessionDesk", "SessionToOpen", "SessionTreeNode"]

SWITCHER_TOP_SESSIONS = 30
"""Top-level sessions the tree holds (the latest ones), each with every session below it."""


@dataclass(frozen=True, slots=True)
class SessionToOpen:
    """The session a front end opens at start, and what it tells the user about the choice."""

    session_id: str
    note: str | None = None
    """Said once when the choice is not the obvious one (`--continue` found no conversation of the app)."""


class SessionDesk:
    """Session use cases over one runtime."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._store = runtime.store

    async def get(self, session_id: str) -> SessionRecord | None:
        return await self._store.get_session(session_id)

    async def resolve(self, ident: str) -> SessionRecord:
        """The session with this id or unique id prefix (a clear error otherwise)."""
        return await self._store.resolve_session(ident)

    async def latest(self) -> SessionRecord | None:
        """The session of this project that ran last with something said in it, whatever started it (`yeetui run
        --continue`)."""
        return await self._store.latest_session(with_messages=True, cwd=self._runtime.project_dir)

    async def new(self, *, model: str | None = None, replacing: str | None = None) -> SessionRecord:
        """A new conversation of the app with the configured primary profile. `replacing`: the conversation it
        clears (/new, /clear): that one ends (its SessionEnd hooks, `reason: clear`) and this one starts as
        `clear` (its SessionStart hooks' `source`)."""
        runtime = self._runtime
        profile = runtime.profiles.get(runtime.settings.primary_profile)
        session = await runtime.launcher.new_session(profile, model=model)
        if replacing is not None:
            await runtime.launcher.clear(replacing, session.id)
        return session

    async def use_profile(self, session_id: str, profile: str) -> SessionRecord:
        """Have the conversation with `profile` from its next turn on (an ACP client's mode): it becomes the
        session's profile, so every front end that opens it later has it too. Only a profile the conversation can
        be had with (`primary`) can be chosen."""
        if profile not in {p.name for p in self._runtime.profiles.with_capability("primary")}:
            raise ConfigError(f"{profile!r} is not a profile a conversation can be had with (one with the "
                              f"`primary` capability)")
        return await self._store.update_session(session_id, profile=profile)

    async def to_open(self, *, resume: str | None = None, continue_latest: bool = False,
                      model: str | None = None) -> SessionToOpen:
        """The session the app opens at start: `resume` (an id or prefix); with `continue_latest`, the app's
        latest conversation in this project with something said in it, else whatever ran last here (and the note
        says which it is); else a new one."""
        if resume:
            return SessionToOpen((await self.resolve(resume)).id)
        if continue_latest:
            project = self._runtime.project_dir  # as Claude Code's: the latest conversation here, not elsewhere
            latest = await self._store.latest_session(origin="primary", with_messages=True, cwd=project)
            if latest is not None:
                return SessionToOpen(latest.id)
            if (latest := await self._store.latest_session(with_messages=True, cwd=project)) is not None:
                return SessionToOpen(latest.id, "--continue: no conversation of the app in this project yet; reopened "
                                     f"the latest session, a {latest.origin} run: {latest.title or latest.id[:12]}.")
        return SessionToOpen((await self.new(model=model)).id)

    async def compact(self, session_id: str, *, model: str | None = None) -> str:
        """Summarise the conversation's earlier turns; the summary replaces them in the model's context.
        Returns the summary."""
        return await self._runtime.launcher.compact(session_id, model=model)

    async def tree(self, live: Iterable[LedgerRow] = ()) -> list[SessionTreeNode]:
        """The latest top-level sessions, each followed by every session below it (depth first), with what each
        spent together with the sessions below it. `live` are the ledger rows on screen: a row's label and
        status win over the stored latest run's (a watcher between runs, a queued run)."""
        store = self._store
        rows = {row.session_id: row for row in live}
        nodes: list[SessionTreeNode] = []
        for top in await store.list_sessions(parent_id=None, limit=SWITCHER_TOP_SESSIONS):
            sessions = [top, *await store.descendants(top.id)]
            spent = _spent_below(sessions, await store.usage_by_session(s.id for s in sessions))
            for session in sessions:
                runs = await store.list_runs(session_id=session.id, limit=1)
                unread = await store.inbox.count(session.id, statuses=["unread"])
                label = runs[0].label if runs and runs[0].label else session.profile
                status = runs[0].status.value if runs else "new"
                if (row := rows.get(session.id)) is not None:
                    label, status = row.label, getattr(row.status, "value", str(row.status))
                if session.parent_id is None:  # named by its title, not by the label of its latest run
                    label = PRIMARY if session.origin == "primary" else f"{session.origin} {label}"
                if status == "waiting_user" and session.parent_id is None:
                    status = ANSWERED  # the primary waiting for the user has simply answered
                tokens, cost = spent[session.id]
                nodes.append(SessionTreeNode(id=session.id, parent_id=session.parent_id, label=label,
                                             profile=session.profile, title=session.title, status=status,
                                             unread=unread, depth=session.depth, tokens=tokens, cost=cost))
        return nodes


def _spent_below(sessions: list[SessionRecord], own: Mapping[str, tuple[Usage, float | None]],
                 ) -> dict[str, tuple[int, float | None]]:
    """Tokens and cost of each session together with every session below it, from each one's own. A cost
    is None (unknown) as soon as one session below has an unknown cost."""
    spent: dict[str, tuple[int, float | None]] = {}
    for session in sessions:
        usage, cost = own.get(session.id, (Usage(), 0.0))
        spent[session.id] = (usage.total_tokens, cost)
    for session in sorted(sessions, key=lambda s: s.depth, reverse=True):  # each adds up into its parent
        if session.parent_id in spent:
            tokens, cost = spent[session.id]
            parent_tokens, parent_cost = spent[session.parent_id]
            spent[session.parent_id] = (parent_tokens + tokens,
                                        None if cost is None or parent_cost is None else parent_cost + cost)
    return spent
