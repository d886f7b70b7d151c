"""Where yeetui keeps its config and data (XDG), overridable with YEETUI_CONFIG_DIR / YEETUI_DATA_DIR."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("YEETUI_CONFIG_DIR"):
        return Path(env["YEETUI_CONFIG_DIR"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "yeetui"


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("YEETUI_DATA_DIR"):
        return Path(env["YEETUI_DATA_DIR"]).expanduser()
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "yeetui"


def database_path(env: Mapping[str, str] | None = None) -> Path:
    return data_dir(env) / "yeetui.db"


def log_path(env: Mapping[str, str] | None = None) -> Path:
    return data_dir(env) / "logs" / "yeetui.log"


def project_config_dir(project_dir: Path) -> Path:
    return project_dir / ".yeetui"


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) for this user only (0700). An existing one of ours that others
    may read is tightened to 0700: it holds transcripts and logs."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid == os.getuid() and info.st_mode & 0o077:
        path.chmod(0o700)
    return path


def replace_private(path: Path, text: str) -> None:
    """Write `text` to `path` (readable by this user only) in a private dir at once: readers see the old file or
    the new, never half of it."""
    private_dir(path.parent)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)


PROJECT_MARKERS = (".git", ".yeetui")
"""What makes a folder a project root: a git checkout (`.git` folder or file) or yeetui's own folder."""


def find_project_root(start: Path) -> Path:
    """The project `start` is in, found by walking up as git and Claude Code do: the nearest folder (`start`
    itself first) holding `.git` or `.yeetui`; `start` when none does. Running from a subfolder thus finds
    the same profiles, config, commands and trust as running from the root."""
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS) and folder != Path(folder.anchor):
            return folder
    return here
