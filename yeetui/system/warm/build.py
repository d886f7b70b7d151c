"""Which build a warm server serves, and when the code it forks has gone stale.

The build key (`build_key`) names what can be seen without importing: the interpreter, where yeetui and the
installed packages live, and mtimes — an upgrade or an edit starts a new server. What it cannot see, a file of
an installed package edited in place, the server checks before each fork: the files its modules came from
(`loaded_files`), each still as it was (`changed_file`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path


def build_key(package: Path | None = None) -> str:
    """What the server's code depends on: the interpreter, where yeetui and the installed packages live, the
    mtimes of yeetui's sources and of the folders packages are installed in (installing or removing a package
    changes its folder's), and PYTHONPATH. The same however the process was started (`-m`, a script, pytest)."""
    package = package or Path(__file__).resolve().parents[2]
    paths = sysconfig.get_paths()
    folders = sorted({paths["purelib"], paths["platlib"], *os.environ.get("PYTHONPATH", "").split(os.pathsep)} - {""})
    digest = hashlib.sha256(f"{sys.executable}\0{sys.version}\0{package}\0{folders}".encode())
    for folder in folders:
        with contextlib.suppress(OSError):
            digest.update(f"{folder}:{os.stat(folder).st_mtime_ns}".encode())
    for root, _, files in sorted(os.walk(package)):
        for name in sorted(files):
            if name.endswith(".py"):
                with contextlib.suppress(OSError):
                    info = os.stat(os.path.join(root, name))
                    digest.update(f"{root}/{name}:{info.st_mtime_ns}:{info.st_size}".encode())
    return digest.hexdigest()[:16]


def loaded_files() -> dict[str, tuple[int, int]]:
    """The files this process's modules came from, beneath a folder of its import path (the standard library,
    site-packages, PYTHONPATH, yeetui), each with its mtime and size: what a server forks, so what a change in
    place (an edited or reinstalled package of the same version) makes stale. About 3,700 files once a worker's
    imports are loaded (3,400 of them in site-packages): 11–25 ms to check on a busy 2-core machine
    (`changed_file`), once per fork."""
    roots = tuple(f"{p.rstrip('/')}/" for p in sys.path if os.path.isabs(p) and os.path.isdir(p))
    found: dict[str, tuple[int, int]] = {}
    for module in list(sys.modules.values()):
        try:  # not through the module's own attribute lookup: a lazily loaded module would load on it
            path = object.__getattribute__(module, "__dict__").get("__file__")
        except (AttributeError, TypeError):
            continue
        if isinstance(path, str) and path.startswith(roots):
            with contextlib.suppress(OSError):
                info = os.stat(path)
                found[path] = (info.st_mtime_ns, info.st_size)
    return found


def changed_file(files: Mapping[str, tuple[int, int]]) -> str | None:
    """The first of `files` (`loaded_files`) whose mtime or size is no longer the same, or that is gone; None
    when none changed. A file edited while the server was importing it, in the second or two it starts, is
    not seen."""
    for path, known in files.items():
        try:
            info = os.stat(path)
        except OSError:
            return path
        if (info.st_mtime_ns, info.st_size) != known:
            return path
    return None
