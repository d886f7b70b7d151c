"""Running the real `yeetui` command in a subprocess against the fake LLM server."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.integration.zygote import ZYGOTE, Forked
from yeetui.events import RunStatus


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str

    @property
    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    @property
    def result(self) -> dict[str, Any]:
        return self.events[-1]


def yeetui_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("YEETUI_RETRY__BASE_DELAY", "0.01")
    env.setdefault("YEETUI_RETRY__MAX_DELAY", "0.05")
    env.update(extra)
    return env


def yeetui_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "yeetui", *args]


def run_yeetui(*args: str, cwd: Path, timeout: float = 60, fresh: bool = False, **env: str) -> Completed:
    """`yeetui ARGS` in its own process, stdin empty, output captured. The process is forked from the worker's
    warm server (`tests/integration/zygote.py`), which has paid the imports once; `fresh=True` starts a new
    interpreter instead, for a test about start-up itself."""
    if fresh:
        proc = subprocess.run(yeetui_argv(*args), cwd=cwd, env=yeetui_env(**env), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    else:
        proc = ZYGOTE.run(args, cwd=cwd, env=yeetui_env(**env), timeout=timeout)
    return Completed(proc.returncode, proc.stdout, proc.stderr)


def start_yeetui(*args: str, cwd: Path, stdout: int | None = None, stderr: int | None = None, text: bool = False,
                 **env: str) -> Forked:
    """`yeetui ARGS` started and left running, for a test that acts while it runs (signals it, kills it, reads
    its output as it comes): `subprocess.Popen` with stdin empty, forked from the worker's warm server like
    `run_yeetui`. Its `pid` is the command's own."""
    return ZYGOTE.start(args, cwd=cwd, env=yeetui_env(**env), stdout=stdout, stderr=stderr, text=text)


def stored_status(run_id: str) -> str | None:
    """A run's status as the store holds it (read-only; None before the run or the database exists)."""
    database = Path(os.environ["YEETUI_DATA_DIR"]) / "yeetui.db"
    try:
        with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)) as conn:
            row = conn.execute("SELECT status FROM agent_runs WHERE id = ?", (run_id,)).fetchone()
    except sqlite3.OperationalError:  # not created yet
        return None
    return row[0] if row else None


def stored_pid(run_id: str) -> int | None:
    """The pid the store records for a run: the process it lives in (its worker's own, once that claimed it)."""
    database = Path(os.environ["YEETUI_DATA_DIR"]) / "yeetui.db"
    try:
        with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)) as conn:
            row = conn.execute("SELECT pid FROM agent_runs WHERE id = ?", (run_id,)).fetchone()
    except sqlite3.OperationalError:
        return None
    return row[0] if row else None


def wait_for_stored_status(run_id: str, wanted: set[str] | None = None, timeout: float = 60.0) -> str:
    """Wait until the store says the run is in one of `wanted` (None: any final status, `RunStatus.is_final`).
    It reads the store: a `yeetui agents status` each time would cost a Python start-up, and the suite is short
    of CPU, not of waiting."""
    def reached(status: str | None) -> bool:
        if wanted is not None:
            return status in wanted
        return status is not None and RunStatus(status).is_final

    deadline = time.monotonic() + timeout
    while not reached(status := stored_status(run_id)):
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} stayed {status}, wanted {wanted or 'a final status'}")
        time.sleep(0.1)
    assert status is not None
    return status


def tool_results(request_body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tool_result block (Anthropic) or tool message (OpenAI) in a recorded request body."""
    found = []
    for message in request_body.get("messages", []):
        if message.get("role") == "tool":
            found.append({"content": message.get("content"), "tool_use_id": message.get("tool_call_id")})
        content = message.get("content")
        if isinstance(content, list):
            found += [block for block in content if block.get("type") == "tool_result"]
    return found


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return str(content)


def git_project(tmp_path: Path, name: str = "project") -> Path:
    """A new git repository `tmp_path/name`: a project as yeetui finds one."""
    project = tmp_path / name
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


def project_and_home(tmp_path: Path) -> tuple[Path, Path]:
    """A new git repository `tmp_path/project` and an empty home beside it (for `HOME=`): a project whose
    user has no editor's config of their own."""
    home = tmp_path / "userhome"
    home.mkdir()
    return git_project(tmp_path), home


def time_server_unless(flag: Path, *, once: bool = False) -> str:
    """Python code for the real `mcp_server_time` MCP server that exits with an error instead while `flag` exists
    (removing `flag` first when `once`, so only the first start fails)."""
    fail = f"os.remove({str(flag)!r}); sys.exit('first start fails')" if once else "sys.exit('the database is locked')"
    return (f"import os, sys, runpy\n"
            f"if os.path.exists({str(flag)!r}):\n"
            f"    {fail}\n"
            f"sys.argv = ['mcp_server_time']\n"
            f"runpy.run_module('mcp_server_time', run_name='__main__')\n")


def query_store(data: Path, sql: str, *args: object) -> list[sqlite3.Row]:
    """Rows of `sql` in the store of data dir `data`, read-only beside the processes writing it (none before the
    store exists or is migrated)."""
    database = data / "yeetui.db"
    if not database.exists():
        return []
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError:  # not migrated yet
        return []
    finally:
        conn.close()


ORACLE = "You are the oracle"
"""In the oracle's system prompt only (its task is also in its parent's conversation, as the spawn call)."""
