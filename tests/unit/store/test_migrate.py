"""Store opening and schema migrations: fresh files, re-opening, version checks, broken migration sets."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from yeetui.errors import StoreError
from yeetui.store import Store
from yeetui.store.migrate import Migration, load_migrations, split_statements

ROOT = Path(__file__).resolve().parents[3]
TABLES = {"sessions", "messages", "agent_runs", "inbox_items", "breadcrumbs", "worktrees", "workflow_states"}


def _user_version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("PRAGMA user_version").fetchone()[0]


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


async def test_open_creates_parent_dir_and_migrates_from_empty(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "yeetui.db"
    async with await Store.open(path) as store:
        assert store.path == path
        busy = await store.fetch_one("read busy_timeout", "PRAGMA busy_timeout")
        fks = await store.fetch_one("read foreign_keys", "PRAGMA foreign_keys")
        sync = await store.fetch_one("read synchronous", "PRAGMA synchronous")
        assert (busy[0], fks[0], sync[0]) == (5000, 1, 1)  # synchronous 1 == NORMAL
    latest = load_migrations()[-1].version
    assert latest >= 1
    assert _user_version(path) == latest
    assert TABLES <= _tables(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # persistent in the file


async def test_reopen_is_idempotent_and_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "yeetui.db"
    async with await Store.open(path) as store:
        session = await store.create_session(profile="generic", title="kept")
    version = _user_version(path)
    for _ in range(2):
        async with await Store.open(path) as store:
            again = await store.get_session(session.id)
            assert again is not None and again.title == "kept"
    assert _user_version(path) == version


async def test_database_newer_than_code_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "yeetui.db"
    async with await Store.open(path):
        pass
    newer = load_migrations()[-1].version + 1
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {newer}")
    with pytest.raises(StoreError, match="newer yeetui") as info:
        await Store.open(path)
    assert str(path) in str(info.value)
    assert f"schema version {newer}" in str(info.value)


async def test_file_that_is_not_a_database_gives_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "yeetui.db"
    path.write_bytes(b"this is a text file, not SQLite" * 200)
    with pytest.raises(StoreError, match="not a database") as info:
        await Store.open(path)
    assert str(path) in str(info.value)


async def test_parent_that_is_a_file_gives_clear_error(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("x")
    with pytest.raises(StoreError, match="Could not create the directory"):
        await Store.open(tmp_path / "blocker" / "yeetui.db")


async def test_closed_store_says_so(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "yeetui.db")
    await store.close()
    await store.close()  # twice is fine
    assert store.closed
    with pytest.raises(StoreError, match="is closed"):
        await store.get_session("x")


async def test_concurrent_first_opens_migrate_once(tmp_path: Path) -> None:
    path = tmp_path / "yeetui.db"
    stores = await asyncio.gather(*(Store.open(path) for _ in range(4)))
    try:
        created = await asyncio.gather(*(s.create_session(profile="generic") for s in stores))
        assert len({c.id for c in created}) == 4
        assert len(await stores[0].list_sessions()) == 4
    finally:
        for store in stores:
            await store.close()
    assert _user_version(path) == load_migrations()[-1].version


def _write_migrations(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_migration_set_with_a_gap_is_rejected(tmp_path: Path) -> None:
    folder = _write_migrations(tmp_path / "m", {"0001_a.sql": "CREATE TABLE a (x);",
                                                "0003_c.sql": "CREATE TABLE c (x);"})
    with pytest.raises(StoreError, match=r"expected 0002 but found 0003_c\.sql"):
        load_migrations(folder)


def test_migration_with_bad_name_is_rejected(tmp_path: Path) -> None:
    folder = _write_migrations(tmp_path / "m", {"1_init.sql": "CREATE TABLE a (x);"})
    with pytest.raises(StoreError, match=r"'1_init\.sql' is not named like NNNN_name\.sql"):
        load_migrations(folder)


async def test_later_migration_applies_on_top_and_failure_rolls_back(tmp_path: Path) -> None:
    base = load_migrations()
    path = tmp_path / "yeetui.db"
    async with await Store.open(path, migrations=base):
        pass
    broken = [*base, Migration(len(base) + 1, "broken",
                               "CREATE TABLE extra (x INTEGER);\nINSERT INTO no_such_table VALUES (1);")]
    with pytest.raises(StoreError, match=rf"{len(base) + 1:04d}_broken.sql .* no such table") as info:
        await Store.open(path, migrations=broken)
    assert str(path) in str(info.value)
    assert _user_version(path) == len(base)
    assert "extra" not in _tables(path)  # the whole migration rolled back

    good = [*base, Migration(len(base) + 1, "extra", "CREATE TABLE extra (x INTEGER);")]
    async with await Store.open(path, migrations=good) as store:
        assert await store.fetch_one("probe", "SELECT count(*) FROM extra") is not None
    assert _user_version(path) == len(base) + 1


def test_split_statements_keeps_triggers_and_drops_comments() -> None:
    sql = """
    -- a comment; with a semicolon
    CREATE TABLE a (x TEXT DEFAULT ';'); CREATE TABLE b (y);
    CREATE TRIGGER t AFTER INSERT ON a BEGIN
        INSERT INTO b VALUES (1);
        INSERT INTO b VALUES (2);
    END;
    -- trailing comment
    """
    statements = split_statements(sql)
    assert len(statements) == 3
    assert statements[1] == "CREATE TABLE b (y);"
    assert statements[2].startswith("CREATE TRIGGER") and statements[2].endswith("END;")
    conn = sqlite3.connect(":memory:")
    for statement in statements:
        conn.execute(statement)
    conn.execute("INSERT INTO a VALUES ('x')")
    assert conn.execute("SELECT count(*) FROM b").fetchone()[0] == 2


def test_split_statements_rejects_unterminated_text() -> None:
    with pytest.raises(StoreError, match="incomplete statement"):
        split_statements("CREATE TABLE a (x); CREATE TABLE b (")


def test_migrations_load_from_a_zipped_package(tmp_path: Path) -> None:
    """importlib.resources finds the .sql files even when yeetui is not a plain directory (wheel, zipapp)."""
    archive = tmp_path / "yeetui.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for file in (ROOT / "yeetui").rglob("*"):
            if file.is_file() and "__pycache__" not in file.parts:
                zf.write(file, file.relative_to(ROOT))
    code = ("import yeetui.store.migrate as m; assert '.zip' in m.__file__, m.__file__; "
            "print([(x.version, x.name) for x in m.load_migrations()])")
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(archive)}, cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "(1, 'init')" in out.stdout
