"""The front ends (yeetui.tui, yeetui.cli, yeetui.acp) do their use cases through the application surface
(`yeetui.application.surface.Surface`, the one object each receives): they never hold the runtime behind it, never
reach into the parts that do the work (the launcher, the spawner, the watchers, the delivery of results) and never
write to the store. Reading store records for display and subscribing to the bus's typed events
are what read models and events are for, and stay allowed.

The import-linter contracts cannot see this (the parts are attributes of the Runtime the front ends import),
so the source is parsed: any attribute access by one of those names fails, whatever object it is on; a write
of one of the store's parts (`store.inbox.set_status`) fails when reached as `<anything>.inbox.set_status` or
through a variable named for the part.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import get_type_hints

from yeetui.store import Store

ROOT = Path(__file__).resolve().parents[2]
FRONT_ENDS = (ROOT / "yeetui" / "tui", ROOT / "yeetui" / "cli", ROOT / "yeetui" / "acp")

RUNTIME_PARTS = frozenset({"runtime", "launcher", "watchers", "spawner", "mailroom", "delivery", "detached"})
"""The runtime behind the surface and its working parts: use cases over them belong in yeetui.application."""
PART_CLASSES = frozenset({"RunLauncher", "AgentSpawner", "Watchers", "Delivery", "PaneRuns", "RunsElsewhere"})
"""Their classes: a front end that builds (or imports) one has a part of its own beside the runtime's."""

STORE_READS = frozenset({
    "children", "count_messages", "descendants", "get_message", "get_run", "get_session", "has_child_sessions",
    "latest_session", "list_runs", "list_sessions", "messages", "remembered_permissions", "resolve_run",
    "resolve_session", "root_session_id", "run_has_messages", "session_project", "session_tree_ids", "tree_usage",
    "usage_by_session",
    "announcements.pending", "announcements.pending_sessions", "breadcrumbs.list", "inbox.count", "inbox.get",
    "inbox.list", "permission_asks.read_answer", "permission_asks.unanswered", "permission_asks.unattended_refusals",
    "slots.counts", "tool_processes.run_log", "workflow_states.load", "worktree_records.get",
    "worktree_records.list", "worktree_records.resolve",
})
"""Store methods that only read (read models a front end may show): the Store's own by name, its parts' as
`part.method` (`inbox.list` is `store.inbox.list`). Every other public method writes."""


def store_parts() -> dict[str, type]:
    """The Store's parts by attribute name (`inbox`: InboxItems, …), from its annotations."""
    return {name: hint for name, hint in get_type_hints(Store).items() if inspect.isclass(hint)}


def public_methods(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")}


def store_methods() -> frozenset[str]:
    """The Store's public methods, and its parts' as `part.method`."""
    names = public_methods(Store)
    for part, cls in store_parts().items():
        names |= {f"{part}.{name}" for name in public_methods(cls)}
    return frozenset(names)


def store_writes() -> frozenset[str]:
    """The store's public methods that change it: all but the known reads, and `close` (the runtime closes
    it). A new store method counts as a write until it is listed as a read here."""
    return store_methods() - STORE_READS - {"close"}


def _accessed_as(node: ast.Attribute) -> str:
    """`name` for `x.name`; `part.name` for `x.part.name` or `part.name` (the part held in a variable of its
    name), so a part's write is caught however the store was reached."""
    inner = node.value
    if isinstance(inner, ast.Attribute):
        return f"{inner.attr}.{node.attr}"
    if isinstance(inner, ast.Name):
        return f"{inner.id}.{node.attr}"
    return node.attr


def reach_throughs(source: str, filename: str = "<source>") -> list[str]:
    """`file:line: .name` for each attribute access to a runtime part or a store write in `source`."""
    writes = store_writes()
    banned = RUNTIME_PARTS | {name for name in writes if "." not in name}
    part_writes = {name for name in writes if "." in name}
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.alias) and node.name.rpartition(".")[2] in PART_CLASSES:
            found.append(f"{filename}:{node.lineno}: {node.name}")
        if isinstance(node, ast.Name) and node.id in PART_CLASSES:
            found.append(f"{filename}:{node.lineno}: {node.id}")
        if not isinstance(node, ast.Attribute):
            continue
        if node.attr in PART_CLASSES:
            found.append(f"{filename}:{node.lineno}: .{node.attr}")
        elif (qualified := _accessed_as(node)) in part_writes:
            found.append(f"{filename}:{node.lineno}: .{qualified}")
        elif node.attr in banned:
            found.append(f"{filename}:{node.lineno}: .{node.attr}")
    return found


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
    store = screen.surface.store
    await store.inbox.set_status(1, "read")
    await runtime.launcher.compact("s")
    inbox = store.inbox
    await inbox.add(session_id="s", kind="note", title="t")
    screen.surface.runtime.watchers.get("s")
    await store.get_session("s")          # a read: allowed
    await store.inbox.list("s")           # a part's read: allowed
    names.add("x")                        # not a store part: allowed
    runtime.bus.subscribe()               # typed events: allowed
    await store.schedules.add("s")        # a part the Store builds without announcing it
    await store.provider_holds.hold("anthropic", "spent")
    Delivery(store, runtime.bus)          # a part of its own
    subagents.inbox.Delivery(store, runtime.bus)
from yeetui.subagents.inbox import Delivery as Mine
worker.runtime.close()                # the runtime behind a surface or a worker
"""
    assert sorted(reach_throughs(source)) == [
        "<source>:13: .schedules.add", "<source>:14: .provider_holds.hold", "<source>:15: Delivery",
        "<source>:16: .Delivery", "<source>:17: Delivery", "<source>:18: .runtime", "<source>:4: .inbox.set_status",
        "<source>:5: .launcher", "<source>:7: .inbox.add", "<source>:8: .runtime", "<source>:8: .watchers"]


def test_store_writes_are_the_changing_methods() -> None:
    writes = store_writes()
    assert {"inbox.set_status", "update_run", "create_session", "append_message", "claim_run", "slots.take",
            "permission_asks.answer", "announcements.announce", "worktree_records.claim"} <= writes
    assert not writes & STORE_READS
    assert STORE_READS <= store_methods(), "a listed read is no longer a method of the Store or of one of its parts"
