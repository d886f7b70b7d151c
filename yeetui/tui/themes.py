"""Themes: Textual's built-in ones plus the YAML files in `themes/` (built-in data dir, then the user's
`<config>/themes/`). The user's choice persists in the data dir's `ui_state.json`."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import yaml
from textual.theme import Theme

from yeetui import paths
from yeetui.resources import builtin_dir

log = logging.getLogger(__name__)
_THEME_FIELDS = {"name", "primary", "secondary", "warning", "error", "success", "accent", "foreground",
                 "background", "surface", "panel", "boost", "dark", "luminosity_spread", "text_alpha", "variables"}


def load_theme_file(path: Path) -> Theme:
    """A Theme from one YAML file; ValueError naming the file when it is not a valid theme."""
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"Theme file {path}: {exc}") from None
    if not isinstance(data, dict) or "primary" not in data:
        raise ValueError(f"Theme file {path}: expected a mapping with at least `primary` (and `name`).")
    unknown = set(data) - _THEME_FIELDS
    if unknown:
        raise ValueError(f"Theme file {path}: unknown keys {', '.join(sorted(unknown))}.")
    data.setdefault("name", path.stem)
    return Theme(**data)


def discover_themes() -> tuple[list[Theme], list[str]]:
    """Every theme file found, and a warning per broken one."""
    themes, warnings = [], []
    for directory in (builtin_dir("themes"), paths.config_dir() / "themes"):
        if directory is None or not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.y*ml")):
            try:
                themes.append(load_theme_file(path))
            except ValueError as exc:
                warnings.append(str(exc))
    return themes, warnings


def _state_file() -> Path:
    return paths.data_dir() / "ui_state.json"


def saved_theme() -> str | None:
    try:
        theme = json.loads(_state_file().read_text(encoding="utf-8")).get("theme")
        return theme if isinstance(theme, str) else None
    except (OSError, ValueError, AttributeError):
        return None


def save_theme(name: str) -> None:
    path = _state_file()
    try:
        state = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError):
        state = {}
    state["theme"] = name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(state), encoding="utf-8")
    except OSError as exc:
        log.warning("could not save the theme choice: %s", exc)
