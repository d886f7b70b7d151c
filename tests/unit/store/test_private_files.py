"""The database's files are made private at open, and another process's -wal or -shm file that comes and goes
meanwhile does not fail the open (four processes opening and closing one database hit that)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from yeetui.store import Store


async def test_a_readable_database_left_by_an_older_yeetui_is_made_private(tmp_path: Path) -> None:
    db = tmp_path / "data" / "yeetui.db"
    db.parent.mkdir(mode=0o700)
    db.touch(mode=0o644)
    db.chmod(0o644)
    store = await Store.open(db)
    await store.close()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


async def test_a_wal_file_gone_between_the_look_and_the_change_does_not_fail_the_open(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "data" / "yeetui.db"
    store = await Store.open(db)
    await store.close()
    wal = db.with_name(db.name + "-wal")
    wal.unlink(missing_ok=True)
    real_exists = Path.exists

    def exists(self: Path, *args: object, **kwargs: object) -> bool:
        # the closing process's checkpoint removes the file right after this look said it was there
        return True if self == wal else real_exists(self)

    monkeypatch.setattr(Path, "exists", exists)
    store = await Store.open(db)
    await store.close()
