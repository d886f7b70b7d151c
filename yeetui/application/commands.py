"""Command files (Claude Code's and OpenCode's `commands/*.md`, the user's own) as commands of any front end:
each under a name that shadows nothing built in. A command file's text only ever becomes a prompt."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from yeetui.definitions.foreign.commands import CommandFile, place

__all__ = ["CommandFile", "placed_commands"]


def placed_commands(files: Sequence[CommandFile], taken: Iterable[str]) -> tuple[list[CommandFile], list[str]]:
    """The command files under the names they get beside `taken` (built-in commands, profiles' slash
    triggers): a taken name keeps its meaning and the file becomes `namespace:name`; the warnings say so."""
    return place(files, taken=sorted(taken))
