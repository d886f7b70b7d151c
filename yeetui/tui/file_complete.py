"""`@path` completion: project files under what was typed."""

from __future__ import annotations

from pathlib import Path

LIMIT = 50


def project_files(root: Path, prefix: str) -> list[str]:
    """Entries of the directory named by `prefix` whose names start with its last part; hidden ones only
    when asked for. Never leaves `root`."""
    directory, _, stem = prefix.rpartition("/")
    base = (root / directory).resolve()
    if not base.is_dir() or (base != root and root not in base.parents):
        return []
    found: list[str] = []
    try:
        for entry in sorted(base.iterdir()):
            if entry.name.startswith(".") and not stem.startswith("."):
                continue
            if entry.name.startswith(stem):
                rel = entry.relative_to(root).as_posix()
                found.append(rel + "/" if entry.is_dir() else rel)
            if len(found) >= LIMIT:
                break
    except OSError:
        return []
    return found
