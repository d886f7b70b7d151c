"""Locating the data shipped with yeetui: built-in agent profiles, workflows and themes.

In an installed wheel they sit inside the package at `yeetui/_data/<name>` (hatch force-include, see
pyproject.toml); in a source checkout they are the repo-root directories `agents/`, `workflows/`,
`themes/`. The package location is tried first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from yeetui.errors import YeetuiError

DataName = Literal["agents", "workflows", "themes"]

_PACKAGE_DIR = Path(__file__).resolve().parent


def candidates(name: DataName) -> tuple[Path, Path]:
    """Where `name` is looked for, in order."""
    return _PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name


def builtin_dir(name: DataName) -> Path:
    for path in candidates(name):
        if path.is_dir():
            return path
    looked = " and ".join(str(p) for p in candidates(name))
    raise YeetuiError(f"yeetui's built-in '{name}' directory is missing (looked in {looked}); "
                      "the installation is incomplete.")


def agents_dir() -> Path:
    return builtin_dir("agents")


def workflows_dir() -> Path:
    return builtin_dir("workflows")


def themes_dir() -> Path:
    return builtin_dir("themes")
