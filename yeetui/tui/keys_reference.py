"""The keys page of the docs' reference, from the BINDINGS of every screen and widget of the TUI.

Every module under `yeetui.tui` is imported and every class that declares its own `BINDINGS` is listed, so a
new screen or binding reaches the page without anyone listing it here (`yeetui.docs_reference` writes it;
`tests/unit/test_docs_reference.py` checks it is current).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass

from textual.binding import Binding
from textual.dom import DOMNode

import yeetui.tui


@dataclass(frozen=True)
class KeyEntry:
    owner: str
    """Where the binding is declared, `module.Class` under yeetui.tui."""
    binding_id: str | None
    keys: str
    action: str
    description: str
    shown: bool
    """Whether the footer lists it."""


def _tui_modules() -> Iterator[str]:
    for found in pkgutil.walk_packages(yeetui.tui.__path__, prefix="yeetui.tui."):
        yield found.name


def key_entries() -> list[KeyEntry]:
    """Every binding the TUI declares, grouped by the class declaring it, in declaration order."""
    owners: dict[str, type[DOMNode]] = {}
    for name in sorted(_tui_modules()):
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, DOMNode) and value.__module__ == name
                    and "BINDINGS" in vars(value)):
                owners[f"{name.removeprefix('yeetui.tui.')}.{value.__qualname__}"] = value
    entries: list[KeyEntry] = []
    for owner, cls in owners.items():
        for item in vars(cls)["BINDINGS"]:
            bindings = [item] if isinstance(item, Binding) else list(Binding.make_bindings([item]))
            for binding in bindings:
                entries.append(KeyEntry(owner, binding.id, binding.key, binding.action, binding.description,
                                        binding.show))
    return entries


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def keys_page() -> str:
    lines = ["# Keys reference\n",
             "Every key binding of the TUI, from the `BINDINGS` of its app, screens and widgets. Remap one by its "
             "id in your `config.yaml` (`keymap: {toggle_pair: f3, inbox.merge: ctrl+g}`; a project's config may "
             "not, until you trust it). A binding without an id cannot be remapped. See "
             "[Keys and panels](../keys-and-panels.md).\n"]
    owner = ""
    for entry in key_entries():
        if entry.owner != owner:
            owner = entry.owner
            lines += ["", f"## `{owner}`", "", "| id | keys | does | in footer |", "|---|---|---|---|"]
        ident = f"`{entry.binding_id}`" if entry.binding_id else "—"
        lines.append(f"| {ident} | `{_cell(entry.keys)}` | {_cell(entry.description or entry.action)} "
                     f"| {'yes' if entry.shown else 'no'} |")
    return "\n".join(lines) + "\n"
