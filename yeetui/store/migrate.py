"""Schema migrations: numbered `NNNN_name.sql` files applied in order against `PRAGMA user_version`.

The files live in `yeetui/store/migrations/` and are read with `importlib.resources`, so they work from an
installed wheel too. Each migration runs in its own `BEGIN IMMEDIATE` transaction that also bumps
`user_version`; the version is re-read inside the transaction, so two processes opening a fresh database
at once apply each migration exactly once.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable

import aiosqlite

from yeetui.errors import StoreError
from yeetui.store.txn import rollback_if_open

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations(source: Traversable | None = None) -> list[Migration]:
    """Read the migration files, sorted, checking they are numbered 1, 2, 3, … without gaps."""
    folder = source if source is not None else resources.files("yeetui.store") / "migrations"
    found: list[Migration] = []
    for entry in folder.iterdir():
        if not entry.is_file() or not entry.name.endswith(".sql"):
            continue
        match = _NAME.match(entry.name)
        if match is None:
            raise StoreError(f"Migration file {entry.name!r} is not named like NNNN_name.sql.")
        found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise StoreError(
                f"Migration files must be numbered 0001, 0002, … without gaps or repeats; "
                f"expected {expected:04d} but found {migration.version:04d}_{migration.name}.sql."
            )
    return found


def split_statements(sql: str) -> list[str]:
    """Split a script into single statements (`sqlite3.complete_statement` keeps trigger bodies whole).

    `executescript` cannot be used: on Python 3.11 it commits any open transaction first.
    """
    statements: list[str] = []
    buffer = ""
    *pieces, tail = sql.split(";")
    for piece in pieces:
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if _has_code(buffer):
                statements.append(buffer.strip())
            buffer = ""
    buffer += tail
    if _has_code(buffer):
        raise StoreError(f"Migration script ends with an incomplete statement: {buffer.strip()[:80]!r}")
    return statements


def _has_code(text: str) -> bool:
    lines = (line.split("--", 1)[0].strip() for line in text.splitlines())
    return any(line and line != ";" for line in lines)


async def schema_version(conn: aiosqlite.Connection) -> int:
    async with conn.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def migrate(conn: aiosqlite.Connection, *, where: str,
                  migrations: list[Migration] | None = None) -> int:
    """Bring the database at `conn` (described as `where` in errors) up to date; return its version.

    The connection must be in autocommit mode (`isolation_level=None`).
    """
    migrations = load_migrations() if migrations is None else migrations
    latest = migrations[-1].version if migrations else 0
    current = await schema_version(conn)
    if current > latest:
        raise StoreError(
            f"The database {where} has schema version {current}, but this yeetui only knows versions up "
            f"to {latest}; it was written by a newer yeetui. Upgrade yeetui or use another data directory."
        )
    for migration in migrations:
        if migration.version <= current:
            continue
        current = await _apply(conn, migration, where)
    return current


async def _apply(conn: aiosqlite.Connection, migration: Migration, where: str) -> int:
    label = f"{migration.version:04d}_{migration.name}.sql"
    statements = split_statements(migration.sql)
    try:
        await conn.execute("BEGIN IMMEDIATE")
        version = await schema_version(conn)
        if version < migration.version:  # another process may have applied it while we waited
            for statement in statements:
                await conn.execute(statement)
            # PRAGMA takes no parameters; the version is an int we parsed from the file name.
            await conn.execute(f"PRAGMA user_version = {migration.version:d}")
            version = migration.version
        await conn.execute("COMMIT")
    except BaseException as err:
        await rollback_if_open(conn)
        if isinstance(err, sqlite3.Error):
            raise StoreError(f"Applying migration {label} to {where} failed: {err}") from err
        raise
    return version
