"""A write the disk would not take is owed, not lost: it lands before the store's next transaction once the disk
takes writes again (or as the store closes). Run in a child interpreter, whose file size limit plays the full
disk (EFBIG, as ENOSPC, fails SQLite's write) without touching the test's own process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import asyncio, json, resource, signal, sys
    from yeetui.errors import StoreError
    from yeetui.events import RunStatus
    from yeetui.store import Store

    async def main(path, at):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        said = {}
        async with await Store.open(path) as store:
            session = await store.create_session(profile="generic", title="t")
            run = await store.create_run(session_id=session.id, profile="generic", model=None, prompt="p",
                                         status=RunStatus.RUNNING)
            resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))  # the disk is full
            ending = lambda: store.update_run(run.id, status=RunStatus.FAILED, error="the disk filled")
            try:
                await ending()
            except StoreError as exc:
                said["failed"] = "disk" in str(exc)
                store.owe(f"end run {run.id}", ending)
            try:
                await store.create_session(profile="generic", title="still full")
            except StoreError:
                said["still_owed"] = store.owing
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            if at == "next":
                await store.create_session(profile="generic", title="room again")
                said["owing_after"] = store.owing
            said["run"] = run.id
        print(json.dumps(said))

    asyncio.run(main(sys.argv[1], sys.argv[2]))
""")


def _status(database: Path, run_id: str) -> tuple[str, str]:
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(database)) as conn:
        return conn.execute("SELECT status, error FROM agent_runs WHERE id = ?", (run_id,)).fetchone()


def _run(tmp_path: Path, at: str) -> tuple[dict, Path]:
    database = tmp_path / "yeetui.db"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(database), at], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), database


def test_an_owed_ending_lands_before_the_next_transaction_once_the_disk_takes_writes(tmp_path: Path) -> None:
    said, database = _run(tmp_path, "next")
    assert said["failed"] and said["still_owed"] == [f"end run {said['run']}"]  # tried again, still full: kept
    assert said["owing_after"] == []
    assert _status(database, said["run"]) == ("failed", "the disk filled")


def test_an_owed_ending_lands_as_the_store_closes(tmp_path: Path) -> None:
    said, database = _run(tmp_path, "close")
    assert _status(database, said["run"]) == ("failed", "the disk filled")
