"""The read model of the session tree a switcher shows — apart from `sessions.py` so a front end can name it
without importing the runtime."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SessionTreeNode:
    """One session of the tree a switcher shows (a read model: labels and statuses already decided)."""

    id: str
    parent_id: str | None
    label: str
    """The label of its latest run (`oracle#4`); a top-level session is `primary`, or its origin and label."""
    profile: str
    title: str
    status: str
    """The latest run's status (a RunStatus value), what its live row says (`watching`), `new` or `answered`."""
    unread: int = 0
    depth: int = 0
    tokens: int = 0
    """Tokens spent by this session and every session below it."""
    cost: float | None = 0.0
    """Dollars spent by this session and every session below it; None when a run's price is unknown."""
