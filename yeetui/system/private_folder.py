"""This user's private runtime folder, where yeetui keeps what only its own processes may reach: the warm
server's socket (`warm`), the live-event relay's sockets (`relay`), the sandbox's mount-point locks
(`mount_points`)."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path


def user_folder(env: Mapping[str, str] | None = None) -> Path | None:
    """This user's private runtime folder: `$XDG_RUNTIME_DIR/yeetui-UID` (or `/tmp/yeetui-UID`), created 0700.
    None when it cannot be made safely (someone else owns it, or others may write in it)."""
    env = os.environ if env is None else env
    runtime = env.get("XDG_RUNTIME_DIR")
    fallback = Path("/tmp")  # noqa: S108 - only the base of this user's folder, checked below (owner, mode) before use
    base = Path(runtime) if runtime and os.path.isdir(runtime) else fallback
    folder = base / f"yeetui-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return folder
