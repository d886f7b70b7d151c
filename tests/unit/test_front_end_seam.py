"""The front ends (yeetui.tui, yeetui.cli) do their use cases through the application surface: they never reach
into the runtime's parts that do the work (the launcher, the spawner, the watchers, the delivery of results)
and never write to the store. Reading store records for display and subscribing to the bus's typed events
are what read models and events are for, and stay allowed.

The import-linter contracts cannot see this (the parts are attributes of the Runtime the front ends import),
so the source is parsed: any attribute access by one of those names fails, whatever object it is on.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from yeetui.store import Store

ROOT = Path(__file__).resolve().parents[2]
FRONT_ENDS = (ROOT / "yeetui" / "tui", ROOT / "yeetui" / "cli")

RUNTIME_PARTS = frozenset({"launcher", "watchers", "spawner", "mailroom", "delivery"})
"""The Runtime's working parts: use cases over them belong in yeetui.application."""

STORE_READS = frozenset({
    "children", "count_inbox", "count_messages", "descendants", "get_inbox_item", "get_message", "get_run",
    "get_session", "get_worktree", "has_child_sessions", "latest_session", "list_breadcrumbs", "list_inbox",
    "list_runs", "list_sessions", "list_worktrees", "load_workflow_state", "messages", "open_permission_asks",
    "pending_announcement_sessions", "pending_announcements", "permission_answer", "process_log",
    "remembered_permissions", "resolve_run", "resolve_session", "resolve_worktree", "root_session_id",
    "run_has_messages", "session_tree_ids", "slot_counts", "tree_usage", "unattended_refusals",
})
"""Store methods that only read (read models a front end may show). Every other public method writes."""


def store_writes() -> frozenset[str]:
    """The store's public methods that change it: all but the known reads, and `close` (the runtime closes
    it). A new store method counts as a write until it is listed as a read here."""
    public = {name for name, _ in inspect.getmembers(Store, inspect.isfunction) if not name.startswith("_")}
    return frozenset(public - STORE_READS - {"close"})


def reach_throughs(source: str, filename: str = "<source>") -> list[str]:
    """`file:line: .name` for each attribute access to a runtime part or a store write in `source`."""
    banned = RUNTIME_PARTS | store_writes()
    return [f"{filename}:{node.lineno}: .{node.attr}" for node in ast.walk(ast.parse(source, filename))
            if isinstance(node, ast.Attribute) and node.attr in banned]


def front_end_reach_throughs(packages: tuple[Path, ...] = FRONT_ENDS) -> list[str]:
    found: list[str] = []
    for package in packages:
        for path in sorted(package.rglob("*.py")):
            found += reach_throughs(path.read_text(encoding="utf-8"), str(path.relative_to(package.parents[1])))
    return found


def test_front_ends_use_the_application_surface() -> None:
    found = front_end_reach_throughs()
    assert not found, "front ends reach into the runtime's parts or write to the store; add the use case to " \
        "yeetui/application instead:\n" + "\n".join(found)


def test_the_rule_sees_parts_and_writes_on_any_object() -> None:
    source = """
async def f(screen, runtime):
    store = screen.runtime.store
    await store.set_inbox_status(1, "read")
    await runtime.launcher.compact("s")
    screen.runtime.watchers.get("s")
    await store.get_session("s")          # a read: allowed
    runtime.bus.subscribe()               # typed events: allowed
"""
    assert sorted(reach_throughs(source)) == ["<source>:4: .set_inbox_status", "<source>:5: .launcher",
                                              "<source>:6: .watchers"]


def test_store_writes_are_the_changing_methods() -> None:
    writes = store_writes()
    assert {"set_inbox_status", "update_run", "create_session", "append_message", "claim_run"} <= writes
    assert not writes & STORE_READS
    assert STORE_READS <= {name for name, _ in inspect.getmembers(Store, inspect.isfunction)}, \
        "a listed read is no longer a Store method"
