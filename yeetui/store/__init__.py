"""yeetui's SQLite store. `Store` is the entry point; the records are what it returns."""

from yeetui.store.records import (
    Breadcrumb,
    InboxItem,
    InboxStatus,
    RunRecord,
    SessionRecord,
    StoredMessage,
    WorkflowStateRecord,
    WorktreeRecord,
)
from yeetui.store.sqlite import Store

__all__ = [
    "Breadcrumb",
    "InboxItem",
    "InboxStatus",
    "RunRecord",
    "SessionRecord",
    "Store",
    "StoredMessage",
    "WorkflowStateRecord",
    "WorktreeRecord",
]
