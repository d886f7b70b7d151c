"""The store failing under the real binary: a database another process holds locked, a disk that takes no more
writes, a file that is not a database or is damaged in the middle. Every command that reads the store says what
went wrong, where, and exits non-zero — never hangs, never reads a damaged store as an empty one. And a run
outlasts another process's write lock held longer than SQLite's busy timeout instead of failing.

Each command runs in a fresh interpreter (not forked from the warm server) with a timeout: a store left open by
a failed start-up keeps two connection threads, and an interpreter waits for them at exit forever."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import Completed, start_yeetui, yeetui_argv, yeetui_env
from yeetui import paths
from yeetui.events import RunStatus
from yeetui.store import Store

COMMANDS = (("agents", "list"), ("agents", "status", "nope"), ("fleet", "--print"))
"""What the user types to see the runs: each must end, with the store's trouble said."""
EXIT_WITHIN = 45.0


def _database() -> Path:
    return paths.database_path()


def _run_all(project: Path, commands: tuple[tuple[str, ...], ...] = COMMANDS,
             preexec_fn: Callable[[], None] | None = None) -> list[Completed]:
    """The commands at once, each in a fresh `yeetui`; a command still running after `EXIT_WITHIN` fails the test."""
    started = [subprocess.Popen(yeetui_argv(*args), cwd=project, env=yeetui_env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
               for args in commands]
    done = []
    try:
        for args, proc in zip(commands, started, strict=True):
            try:
                out, err = proc.communicate(timeout=EXIT_WITHIN)
            except subprocess.TimeoutExpired:
                pytest.fail(f"`yeetui {' '.join(args)}` did not exit within {EXIT_WITHIN:g} s")
            done.append(Completed(proc.returncode, out, err))
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return done


def _store_with_runs(count: int = 1, *, status: RunStatus = RunStatus.COMPLETED, pid: int | None = None) -> None:
    async def fill() -> None:
        async with await Store.open(_database()) as store:
            for n in range(count):
                session = await store.create_session(profile="generic", title=f"task {n}")
                await store.create_run(session_id=session.id, profile="generic", model=None, prompt="p" * 500,
                                       status=status, pid=pid)

    asyncio.run(fill())


def _dead_pid() -> int:
    gone = subprocess.Popen(["true"])  # any short-lived process: its pid is then free
    gone.wait()
    return gone.pid


@contextmanager
def _held(database: Path, begin: str) -> Iterator[sqlite3.Connection]:
    """Another process's connection holding the database's write lock (`begin`) until the block ends."""
    with closing(sqlite3.connect(database, isolation_level=None, timeout=30)) as other:
        other.execute(begin)
        try:
            yield other
        finally:
            other.execute("ROLLBACK")


def test_commands_exit_saying_so_while_another_process_holds_the_database_locked(project: Path) -> None:
    _store_with_runs()
    with _held(_database(), "BEGIN EXCLUSIVE"):
        done = _run_all(project)
    for args, result in zip(COMMANDS, done, strict=True):
        assert result.returncode == 1, (args, result)
        assert str(_database()) in result.stderr and "locked" in result.stderr, (args, result.stderr)
        assert "another process" in result.stderr, result.stderr


def _no_more_writes() -> None:
    """In the command's process: no file may grow (EFBIG, as on a full disk), and that is an error, not a signal."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_commands_exit_saying_so_when_the_store_cannot_be_written(project: Path) -> None:
    """A full disk (the process may write no byte more) while a run's process is gone, so opening the store
    has something to write: it fails half-way, closes what it opened, and the command exits."""
    _store_with_runs(status=RunStatus.RUNNING, pid=_dead_pid())
    with closing(sqlite3.connect(_database())) as other:  # keeps the -wal and -shm files there, as a TUI would
        other.execute("SELECT count(*) FROM agent_runs").fetchall()
        done = _run_all(project, preexec_fn=_no_more_writes)
    for args, result in zip(COMMANDS, done, strict=True):
        assert result.returncode == 1, (args, result)
        assert str(_database()) in result.stderr and "disk" in result.stderr, (args, result.stderr)


def _damaged_says(result: Completed, database: Path) -> None:
    assert result.returncode == 1, result
    said = result.stderr
    assert f"The database {database} is damaged" in said, said
    assert ".recover" in said and f"{database.name}-wal" in said, said  # how to move it aside and recover
    assert "No agent runs" not in said and "NEEDS YOU" not in result.stdout


def test_a_database_file_replaced_by_garbage_is_said_to_be_damaged(project: Path) -> None:
    _store_with_runs()
    database = _database()
    database.write_bytes(os.urandom(64 * 1024))
    for result in _run_all(project):
        _damaged_says(result, database)


def test_a_database_damaged_in_the_middle_is_said_to_be_so_not_read_as_empty(project: Path) -> None:
    """The runs table's root page overwritten by an empty leaf page (as a torn write or a bad sector leaves it):
    SQLite reads the table as empty without an error; the store must not."""
    _store_with_runs(50)
    database = _database()
    with closing(sqlite3.connect(database)) as conn:
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'agent_runs'").fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    with database.open("r+b") as raw:
        raw.seek((root - 1) * page_size)
        raw.write(b"\x0d" + bytes(4) + page_size.to_bytes(2, "big") + bytes(page_size - 7))
    with closing(sqlite3.connect(database)) as conn:
        assert conn.execute("SELECT * FROM agent_runs").fetchall() == []  # what SQLite alone reads
    for result in _run_all(project, (("agents", "list", "--all"), *COMMANDS[1:])):
        _damaged_says(result, database)


HOLD = 6.5
"""Seconds the other process keeps the write lock: longer than SQLite's busy timeout (5 s)."""


def test_a_run_outlasts_a_write_lock_another_process_holds_longer_than_the_busy_timeout(fake_env, project: Path
                                                                                       ) -> None:
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "done after the wait"})], after_requests=2))
    proc = start_yeetui("run", "--json", "finish the task", cwd=project, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
    try:
        fake_env.wait_for_requests(1, timeout=60)  # the run waits for the model's answer
        with _held(_database(), "BEGIN IMMEDIATE"):
            fake_env.release()  # the answer goes; storing it must wait for the lock
            fake_env.wait_for_requests(1, timeout=30, finished=True)
            since = time.monotonic()
            time.sleep(HOLD)  # the condition under test: the lock held this long
            assert time.monotonic() - since >= HOLD
            assert proc.poll() is None, "the run gave up while the lock was held"
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result = Completed(proc.returncode, out, err)
    assert result.returncode == 0, out[-3000:] + err
    assert result.result["status"] == "completed" and result.result["output"] == "done after the wait", result.result


def test_a_run_the_disk_fills_under_ends_failed_saying_which_write_failed(fake_env, project: Path) -> None:
    """The disk takes no more writes while the model answers: the run ends `failed`, its error the write that
    failed (it said 'Could not release the slot', a cleanup after it), no traceback reaches the terminal, and
    the run is not left `running`."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "never stored"})], after_requests=1))
    proc = subprocess.Popen(yeetui_argv("run", "--json", "finish the task"), cwd=project, env=yeetui_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGXFSZ, signal.SIG_IGN))
    try:
        fake_env.wait_for_requests(1, timeout=60)
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (0, 0))  # the disk is full from now on
        fake_env.release()
        out, err = proc.communicate(timeout=EXIT_WITHIN)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result = Completed(proc.returncode, out, err)
    assert result.returncode == 1, (out[-2000:], err)
    ended = result.result
    assert ended["status"] == "failed", ended
    assert ended["error"].startswith(f"Could not update run {ended['run_id']} in the store at {_database()}"), ended
    assert "disk" in ended["error"] and "slot" not in ended["error"], ended
    assert "Traceback" not in err, err
    [listed] = _run_all(project, (("agents", "list", "--all", "--json"),))
    [run] = [r for r in json.loads(listed.stdout) if r["id"] == ended["run_id"]]
    assert run["status"] in ("failed", "interrupted"), run
