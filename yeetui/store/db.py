"""The connection layer under `Store`: opening, pragmas, transactions and error wrapping.

One aiosqlite connection per Store, in autocommit mode; every write runs in an explicit
`BEGIN IMMEDIATE` transaction so a second process waits on `busy_timeout` instead of failing half-way.
An asyncio lock keeps one coroutine's statements from landing inside another coroutine's transaction
(aiosqlite serialises statements, not transactions).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Self

import aiosqlite

from yeetui.errors import StoreError
from yeetui.store.migrate import Migration, migrate
from yeetui.store.txn import rollback_if_open

BUSY_TIMEOUT_MS = 5000

_PRAGMAS = (
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",  # first, so switching to WAL waits for other writers
    "PRAGMA journal_mode = WAL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA synchronous = NORMAL",  # in WAL mode a commit survives a process crash (kill -9)
)


def _prepare(path: Path) -> Path:
    path = path.expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StoreError(f"Could not create the directory {path.parent} for the database: {err}") from err
    return path


class Database:
    """Owns the connection. `Store` adds the table-level API on top."""

    def __init__(self, path: Path, conn: aiosqlite.Connection) -> None:
        self.path = path
        self._conn: aiosqlite.Connection | None = conn
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path, *, migrations: list[Migration] | None = None) -> Self:
        """Open (creating it and its parent directory if needed) and migrate the database at `path`."""
        path = await asyncio.to_thread(_prepare, Path(path))
        try:
            conn = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as err:
            raise StoreError(f"Could not open the database {path}: {err}") from err
        try:
            conn.row_factory = sqlite3.Row
            for pragma in _PRAGMAS:
                async with conn.execute(pragma) as cursor:
                    row = await cursor.fetchone()
                if "journal_mode" in pragma and (row is None or str(row[0]).lower() != "wal"):
                    raise StoreError(
                        f"The database {path} cannot use write-ahead logging (journal mode stays "
                        f"{row[0] if row else 'unknown'!r}); is it on a network filesystem?"
                    )
            await migrate(conn, where=str(path), migrations=migrations)
        except BaseException as err:
            await conn.close()
            if isinstance(err, sqlite3.Error):
                raise StoreError(f"Could not open the database {path}: {err}") from err
            raise
        return cls(path, conn)

    async def close(self) -> None:
        """Close the connection. Safe to call twice."""
        conn, self._conn = self._conn, None
        if conn is not None:
            async with self._lock:
                await conn.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._conn is None

    def _connection(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise StoreError(f"The store at {self.path} is closed.")
        return self._conn

    def _fail(self, what: str, err: sqlite3.Error) -> StoreError:
        return StoreError(f"Could not {what} in the store at {self.path}: {err}.")

    @asynccontextmanager
    async def _write(self, what: str) -> AsyncIterator[aiosqlite.Connection]:
        """A write transaction; `what` completes the sentence "Could not … in the store at …"."""
        async with self._lock:
            conn = self._connection()
            try:
                await conn.execute("BEGIN IMMEDIATE")
                yield conn
                await conn.execute("COMMIT")
            except BaseException as err:
                await rollback_if_open(conn)  # also when cancelled: see yeetui.store.txn
                if isinstance(err, sqlite3.Error):
                    raise self._fail(what, err) from err
                raise

    async def _all(self, what: str, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        async with self._lock:
            try:
                async with self._connection().execute(sql, params) as cursor:
                    return list(await cursor.fetchall())
            except sqlite3.Error as err:
                raise self._fail(what, err) from err

    async def _one(self, what: str, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        rows = await self._all(what, sql, params)
        return rows[0] if rows else None

    @staticmethod
    async def _row(conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        """One row, inside a transaction `_write` opened (errors are wrapped by `_write`)."""
        async with conn.execute(sql, params) as cursor:
            return await cursor.fetchone()

    async def _require(self, conn: aiosqlite.Connection, table: str, row_id: str, what: str) -> None:
        """Raise a StoreError naming `what` when `table` has no row `row_id` (clearer than an FK error)."""
        if await self._row(conn, f"SELECT 1 FROM {table} WHERE id = ?", (row_id,)) is None:
            raise StoreError(f"There is no {what} {row_id} in the store at {self.path}.")

    async def _resolve(self, table: str, what: str, text: str, *, key_column: str | None = None
                       ) -> sqlite3.Row:
        """The row whose id is `text` or starts with it (or whose `key_column` equals it)."""
        text = text.strip()
        if not text:
            raise StoreError(f"Give a {what} id (or the first characters of one).")
        exact = f"SELECT * FROM {table} WHERE id = ?" + (f" OR {key_column} = ?" if key_column else "")
        row = await self._one(f"look up {what} {text!r}", exact, (text, text) if key_column else (text,))
        if row is not None:
            return row
        prefix = text.lower()
        rows = await self._all(
            f"look up {what} {text!r}",
            f"SELECT * FROM {table} WHERE substr(id, 1, ?) = ? ORDER BY created_at DESC LIMIT 6",
            (len(prefix), prefix),
        )
        if not rows:
            raise StoreError(f"No {what} has an id starting with {text!r}.")
        if len(rows) > 1:
            shown = ", ".join(r["id"][: max(len(prefix) + 4, 8)] for r in rows[:5])
            more = "" if len(rows) <= 5 else ", …"
            raise StoreError(
                f"{text!r} matches more than one {what} ({shown}{more}); give more characters of the id."
            )
        return rows[0]
