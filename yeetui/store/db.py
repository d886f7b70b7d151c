"""The connection layer under `Store`: opening, pragmas, transactions and error wrapping.

Two aiosqlite connections per Store, both in autocommit mode, each with its own thread:

- the writer runs every write as one `BEGIN IMMEDIATE` transaction (so a second process waits on
  `busy_timeout` instead of failing half-way). `transaction` hands the whole transaction — a plain
  function over the sqlite3 connection — to the writer's thread in one trip: one wake-up of the event loop
  per transaction instead of one per statement, and the transaction is atomic even if its caller is
  cancelled. An asyncio lock keeps transactions from interleaving.
- the reader (`PRAGMA query_only`) answers `fetch_all` / `fetch_one`. With WAL it reads the last committed
  state and never waits for the writer, so the UI's reads do not queue behind a burst of checkpoints.

`Database` is what the store's parts are built on: `Store` (store/sqlite.py) is a Database with the core tables
(sessions, messages, runs) and hands itself to each of its parts (the inbox, worktree records, run slots, …).
They write and read through the small public interface below and never touch the connections: `transaction`,
`fetch_all` / `fetch_one`, `require` and `first_row` inside a transaction, `resolve_row`, `clean`, and
`placeholders` for `IN (…)`.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Self, TypeVar

import aiosqlite

from yeetui.errors import StoreError
from yeetui.paths import private_dir
from yeetui.redact import redact
from yeetui.store.migrate import Migration, migrate
from yeetui.store.txn import uninterruptible

BUSY_TIMEOUT_MS = 5000
T = TypeVar("T")

_PRAGMAS = (
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",  # first, so switching to WAL waits for other writers
    "PRAGMA journal_mode = WAL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA synchronous = NORMAL",  # in WAL mode a commit survives a process crash (kill -9)
)


def _prepare(path: Path) -> Path:
    """Create the database's directory (0700) and file (0600) when missing: transcripts are private. SQLite
    gives the -wal and -shm files the database file's mode."""
    path = path.expanduser()
    try:
        private_dir(path.parent)
    except OSError as err:
        raise StoreError(f"Could not create the directory {path.parent} for the database: {err}") from err
    try:
        if not path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        for existing in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if existing.exists() and existing.stat().st_uid == os.getuid() and existing.stat().st_mode & 0o077:
                existing.chmod(0o600)  # made by an older yeetui, readable by others
    except OSError as err:
        raise StoreError(f"Could not create the database {path}: {err}") from err
    return path


async def _connect(path: Path) -> aiosqlite.Connection:
    try:
        conn = await aiosqlite.connect(path, isolation_level=None)
    except sqlite3.Error as err:
        raise StoreError(f"Could not open the database {path}: {err}") from err
    conn.row_factory = sqlite3.Row
    return conn


async def _configure(conn: aiosqlite.Connection, path: Path, *, reader: bool = False) -> None:
    """The pragmas of a connection; the reader's also make it read-only and leave the journal mode (WAL by
    then, set by the writer) alone."""
    pragmas = list(_PRAGMAS)
    if reader:
        pragmas = [p for p in pragmas if "journal_mode" not in p] + ["PRAGMA query_only = ON"]
    for pragma in pragmas:
        row = await _pragma(conn, pragma)
        if "journal_mode" in pragma and (row is None or str(row[0]).lower() != "wal"):
            raise StoreError(
                f"The database {path} cannot use write-ahead logging (journal mode stays "
                f"{row[0] if row else 'unknown'!r}); is it on a network filesystem?"
            )


async def _pragma(conn: aiosqlite.Connection, pragma: str) -> sqlite3.Row | None:
    """Run one pragma. Switching a brand-new file to WAL while another connection does the same can fail
    with "database is locked" at once, without waiting on `busy_timeout`: that is retried for as long as
    `busy_timeout` would have waited."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            async with conn.execute(pragma) as cursor:
                row: sqlite3.Row | None = await cursor.fetchone()
                return row
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.02)


async def _in_thread(conn: aiosqlite.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Call `fn(sqlite3 connection)` on `conn`'s own thread, queued in order with its statements.

    aiosqlite has no public call for this; `_execute` and `_conn` are the two private names it has kept
    through the versions pyproject allows (>=0.21,<0.23). Every use goes through here.
    """
    raw: sqlite3.Connection = conn._conn
    result: T = await conn._execute(lambda: fn(raw))  # type: ignore[no-untyped-call]  # aiosqlite's private call is untyped
    return result


def placeholders(values: Iterable[Any]) -> tuple[str, list[Any]]:
    """`?, ?, …` for the values, and the values as a list: for `… IN (?, ?, …)`."""
    items = list(values)
    return ", ".join("?" * len(items)), items


def first_row(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
    """One row, inside a `Database.transaction` body (errors are wrapped by `transaction`)."""
    row: sqlite3.Row | None = conn.execute(sql, params).fetchone()
    return row


class Database:
    """Owns the two connections. `Store` adds the core tables on top; its parts get the Database itself."""

    def __init__(self, path: Path, conn: aiosqlite.Connection, reader: aiosqlite.Connection) -> None:
        self.path = path
        self._conn: aiosqlite.Connection | None = conn
        self._reader: aiosqlite.Connection | None = reader
        self._lock = asyncio.Lock()
        self.secrets: tuple[str, ...] = ()
        """Exact values (the provider keys) redacted from everything written, with the known key formats."""

    def clean(self, text: str) -> str:
        """`text` as it may be stored: keys and credentials redacted (see `yeetui.redact`)."""
        return redact(text, self.secrets)

    @classmethod
    async def open(cls, path: Path, *, migrations: list[Migration] | None = None) -> Self:
        """Open (creating it and its parent directory if needed) and migrate the database at `path`."""
        path = await asyncio.to_thread(_prepare, Path(path))
        conn = await _connect(path)
        try:
            await _configure(conn, path)
            await migrate(conn, where=str(path), migrations=migrations)
            reader = await _connect(path)
            try:
                await _configure(reader, path, reader=True)
            except BaseException:
                await reader.close()
                raise
        except BaseException as err:
            await conn.close()
            if isinstance(err, sqlite3.Error):
                raise StoreError(f"Could not open the database {path}: {err}") from err
            raise
        return cls(path, conn, reader)

    async def close(self) -> None:
        """Close both connections. Safe to call twice."""
        conn, self._conn = self._conn, None
        reader, self._reader = self._reader, None
        if reader is not None:
            await reader.close()
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

    async def transaction(self, what: str, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run `body` as one write transaction on the writer's thread, in a single trip; return its result.

        `body` gets the plain sqlite3 connection and must not touch the event loop. It commits as a whole
        or rolls back as a whole. A caller cancelled meanwhile waits for the thread to finish (the write
        may have committed), then the cancellation goes on. `what` completes the sentence "Could not … in
        the store at …" for SQLite errors; a StoreError raised by `body` passes through unchanged.
        """
        def run(raw: sqlite3.Connection) -> T:
            raw.execute("BEGIN IMMEDIATE")
            try:
                result = body(raw)
                raw.execute("COMMIT")
            except BaseException:
                if raw.in_transaction:
                    raw.execute("ROLLBACK")
                raise
            return result

        async with self._lock:
            try:  # held until the thread is done, so nothing can follow while the transaction is open
                return await uninterruptible(_in_thread(self._connection(), run))
            except sqlite3.Error as err:
                raise self._fail(what, err) from err

    async def fetch_all(self, what: str, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Rows of a read, from the reader connection: committed data only, one trip, no lock."""
        reader = self._reader
        if reader is None:
            raise StoreError(f"The store at {self.path} is closed.")
        try:
            return list(await reader.execute_fetchall(sql, params))
        except sqlite3.Error as err:
            raise self._fail(what, err) from err

    async def fetch_one(self, what: str, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        """The first row of a read (see `fetch_all`), None when there is none."""
        rows = await self.fetch_all(what, sql, params)
        return rows[0] if rows else None

    def require(self, conn: sqlite3.Connection, table: str, row_id: str, what: str) -> None:
        """Inside a `transaction` body: raise a StoreError naming `what` when `table` has no row `row_id`
        (clearer than a foreign key error)."""
        if first_row(conn, f"SELECT 1 FROM {table} WHERE id = ?", (row_id,)) is None:
            raise StoreError(f"There is no {what} {row_id} in the store at {self.path}.")

    async def resolve_row(self, table: str, what: str, text: str, *, key_column: str | None = None
                          ) -> sqlite3.Row:
        """The row whose id is `text` or starts with it (or whose `key_column` equals it)."""
        text = text.strip()
        if not text:
            raise StoreError(f"Give a {what} id (or the first characters of one).")
        exact = f"SELECT * FROM {table} WHERE id = ?" + (f" OR {key_column} = ?" if key_column else "")
        row = await self.fetch_one(f"look up {what} {text!r}", exact, (text, text) if key_column else (text,))
        if row is not None:
            return row
        prefix = text.lower()
        rows = await self.fetch_all(
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
