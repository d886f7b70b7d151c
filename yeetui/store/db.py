"""The connection layer under `Store`: opening, pragmas, transactions and error wrapping.

Two aiosqlite connections per Store, both in autocommit mode, each with its own thread:

- the writer runs every write as one `BEGIN IMMEDIATE` transaction (so a second process waits on
  `busy_timeout` instead of failing half-way; a transaction that found the write lock taken all that time is
  begun again, up to `write_wait` seconds in all). `transaction` hands the whole transaction — a plain
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

Opening fails closed: whatever goes wrong — a locked or full disk, a damaged file, a step the caller asked to run
on the opened store (`then`) — both connections are closed before the error goes on, so no connection thread is
left behind to keep the process from exiting. SQLite's errors are said in plain words; a damaged database
(SQLite's "malformed" or "not a database", or `verify`'s check at open) says where it is and how to recover.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Self, TypeVar

import aiosqlite

from yeetui.errors import StoreError
from yeetui.paths import private_dir
from yeetui.redact import redact
from yeetui.store.migrate import Migration, migrate
from yeetui.store.txn import uninterruptible

BUSY_TIMEOUT_MS = 5000
WRITE_WAIT = 60.0
"""Seconds a write waits in all for another process's write lock before it fails (SQLite waits `busy_timeout` at
a time, then the transaction, not begun, is tried again): a run outlasts another process's long transaction or
checkpoint instead of ending with "database is locked"."""
_RETRY_PAUSE = 0.05
"""Seconds between two tries to begin a write, for when SQLite reports the lock taken without waiting."""
_CHECK_LINES = 3
"""Problems of `PRAGMA quick_check` named in the message about a damaged database."""
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
            _make_private(existing)
    except OSError as err:
        raise StoreError(f"Could not create the database {path}: {err}") from err
    return path


def _make_private(existing: Path) -> None:
    """0600 for a file of the database made by an older yeetui, readable by others. The -wal and -shm files come
    and go as other processes open and close the database: one gone between the look and the change is fine."""
    try:
        found = existing.stat()
        if found.st_uid == os.getuid() and found.st_mode & 0o077:
            existing.chmod(0o600)
    except FileNotFoundError:
        pass


async def _connect(path: Path) -> aiosqlite.Connection:
    """A connection to `path` (its thread stopped again by aiosqlite if connecting fails)."""
    conn = await aiosqlite.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def _code(err: BaseException) -> int | None:
    """SQLite's primary result code of `err` (`SQLITE_BUSY` for `SQLITE_BUSY_SNAPSHOT`, …), None if it has none."""
    code = getattr(err, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _sqlite_cause(err: BaseException | None) -> sqlite3.Error | None:
    """The SQLite error behind `err`: itself, or what a StoreError was raised from (a migration's)."""
    while err is not None:
        if isinstance(err, sqlite3.Error):
            return err
        err = err.__cause__
    return None


def damaged(path: Path, detail: object) -> StoreError:
    """The error of a database SQLite finds damaged: where it is, and how to start afresh or recover."""
    name, folder = path.name, path.parent
    return StoreError(
        f"The database {path} is damaged ({detail}); yeetui stops rather than use it. Stop every "
        f"yeetui using it, then move {name}, {name}-wal and {name}-shm together out of {folder} into another "
        f"folder: yeetui then starts a new, empty store. To get back what can still be read, with no yeetui "
        f"running: `sqlite3 OTHER/{name} .recover | sqlite3 OTHER/recovered.db` (or `.dump` where that sqlite3 "
        f"has no `.recover`), then move OTHER/recovered.db to {path}.")


def _reason(err: sqlite3.Error, *, waited: float | None = None) -> str:
    """What went wrong, in plain words with SQLite's own after them."""
    code = _code(err)
    if code == sqlite3.SQLITE_BUSY:
        held = "holds its write lock" if waited is None else f"has held its write lock for over {waited:g} s"
        return f"another process {held} ({err})"
    if code == sqlite3.SQLITE_FULL:
        return f"the disk is full ({err})"
    if code == sqlite3.SQLITE_READONLY:
        return f"it cannot be written: is the file or its folder read-only? ({err})"
    if code in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN):
        return f"the disk failed to read or write it: is the disk full, or the file gone or read-only? ({err})"
    return str(err)


def _damage(err: BaseException) -> sqlite3.Error | None:
    """The SQLite error behind `err` when it says the database is damaged, else None."""
    cause = _sqlite_cause(err)
    return cause if cause is not None and _code(cause) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) else None


def _opening_error(path: Path, err: BaseException) -> BaseException:
    """The error to raise for `err` raised while opening `path`: SQLite's said in plain words, the rest as is."""
    if (broken := _damage(err)) is not None:
        return damaged(path, broken)
    if isinstance(err, sqlite3.Error):
        return StoreError(f"Could not open the database {path}: {_reason(err)}.")
    return err


async def _close_after_failure(conns: Sequence[aiosqlite.Connection]) -> None:
    """Close `conns` while an error goes on: each thread stops even if closing fails — a second failure, about the
    same database, that would only hide the first — and even if the caller is cancelled meanwhile."""
    async def close(conn: aiosqlite.Connection) -> None:
        with contextlib.suppress(sqlite3.Error, ValueError):
            await conn.close()

    await asyncio.shield(asyncio.gather(*(close(conn) for conn in conns)))


class _WriteLockTaken(Exception):
    """`BEGIN IMMEDIATE` found the write lock taken for all of `busy_timeout`: nothing was done, try again."""

    def __init__(self, error: sqlite3.OperationalError) -> None:
        super().__init__(str(error))
        self.error = error


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
        self.write_wait = WRITE_WAIT
        """Seconds a write waits in all for another process's write lock (see `WRITE_WAIT`)."""
        self._owed: dict[str, Callable[[], Awaitable[object]]] = {}
        self._settling = False

    def owe(self, key: str, write: Callable[[], Awaitable[object]]) -> None:
        """A write that failed (a full disk) and must still happen — a run's ending, a slot given back: it is
        tried again before every later transaction of this store and once more as it closes, until it lands
        (a later one of the same `key` replaces it). Until then this process keeps the truth in memory, and a
        process that dies owing it leaves what its death says (a live run of a dead pid reads as interrupted)."""
        self._owed[key] = write

    @property
    def owing(self) -> list[str]:
        """The keys of the writes still owed."""
        return list(self._owed)

    async def _settle(self) -> None:
        """Try the owed writes in order; stop at the first that fails again (the disk is still full)."""
        if self._settling or not self._owed:
            return
        self._settling = True
        try:
            for key, write in list(self._owed.items()):
                try:
                    await write()
                except StoreError:
                    return
                if self._owed.get(key) is write:
                    del self._owed[key]
        finally:
            self._settling = False

    def clean(self, text: str) -> str:
        """`text` as it may be stored: keys and credentials redacted (see `yeetui.redact`)."""
        return redact(text, self.secrets)

    @classmethod
    async def open(cls, path: Path, *, migrations: list[Migration] | None = None, write_wait: float = WRITE_WAIT,
                   verify: bool = False, then: Callable[[Self], Awaitable[object]] | None = None) -> Self:
        """Open (creating it and its parent directory if needed) and migrate the database at `path`.

        `write_wait`: see `WRITE_WAIT` (a command someone waits on may say sooner that the store is busy).
        `verify`: check the whole file first (`PRAGMA quick_check`, about a millisecond a megabyte), for a
        caller whose reading of a damaged store would mislead — SQLite reads some damage as missing rows.
        `then`: what to do with the opened store before it is handed over (recover what a dead process left).
        Whatever fails, both connections are closed before the error goes on."""
        path = await asyncio.to_thread(_prepare, Path(path))
        opened: list[aiosqlite.Connection] = []
        try:
            opened.append(conn := await _connect(path))
            await _configure(conn, path)
            await migrate(conn, where=str(path), migrations=migrations)
            opened.append(reader := await _connect(path))
            await _configure(reader, path, reader=True)
            database = cls(path, conn, reader)
            database.write_wait = write_wait
            if verify:
                await database._verify()
            if then is not None:
                await then(database)
        except BaseException as err:
            await _close_after_failure(opened)
            failure = _opening_error(path, err)
            if failure is err:
                raise
            raise failure from err
        return database

    async def _verify(self) -> None:
        """Raise the damaged-database error when `PRAGMA quick_check` finds the file damaged."""
        rows = await self.fetch_all("check the database", f"PRAGMA quick_check({_CHECK_LINES})")
        found = [line for row in rows for line in str(row[0]).splitlines() if line and not line.startswith("***")]
        if found != ["ok"]:
            raise damaged(self.path, "; ".join(found[:_CHECK_LINES]) or "its check found no answer")

    async def close(self) -> None:
        """Close both connections (the writer even if closing the reader fails), the owed writes tried once
        more first. Safe to call twice."""
        if self._conn is not None:
            await self._settle()
        conn, self._conn = self._conn, None
        reader, self._reader = self._reader, None
        try:
            if reader is not None:
                await reader.close()
        finally:
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

    def _fail(self, what: str, err: sqlite3.Error, *, waited: float | None = None) -> StoreError:
        if _damage(err) is not None:
            return damaged(self.path, err)
        return StoreError(f"Could not {what} in the store at {self.path}: {_reason(err, waited=waited)}.")

    async def transaction(self, what: str, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run `body` as one write transaction on the writer's thread, in a single trip; return its result.

        `body` gets the plain sqlite3 connection and must not touch the event loop. It commits as a whole
        or rolls back as a whole. A caller cancelled meanwhile waits for the thread to finish (the write
        may have committed), then the cancellation goes on. `what` completes the sentence "Could not … in
        the store at …" for SQLite errors; a StoreError raised by `body` passes through unchanged.

        While another process holds the write lock the transaction is not begun: it is tried again (SQLite waits
        `busy_timeout` each time) until `write_wait` seconds have gone, then fails saying the store is busy.
        """
        def run(raw: sqlite3.Connection) -> T:
            try:
                raw.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as err:
                if _code(err) == sqlite3.SQLITE_BUSY:
                    raise _WriteLockTaken(err) from err
                raise
            try:
                result = body(raw)
                raw.execute("COMMIT")
            except BaseException:
                if raw.in_transaction:
                    raw.execute("ROLLBACK")
                raise
            return result

        await self._settle()
        async with self._lock:  # held until the thread is done, so nothing can follow while the transaction is open
            deadline = time.monotonic() + self.write_wait
            while True:
                try:
                    return await uninterruptible(_in_thread(self._connection(), run))
                except _WriteLockTaken as taken:
                    if time.monotonic() >= deadline:
                        raise self._fail(what, taken.error, waited=self.write_wait) from taken.error
                except sqlite3.Error as err:
                    raise self._fail(what, err) from err
                await asyncio.sleep(_RETRY_PAUSE)

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
