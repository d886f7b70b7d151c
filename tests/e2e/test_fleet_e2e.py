"""Issue 29's "done when", from outside: three projects on one data dir — a detached run waiting for a
permission answer, a detached run working, and a TUI whose oracle works in a tmux pane — and the real
`yeetui fleet` in tmux shows each in its group and acts on it: it answers the question (the run goes on and its
result waits in its inbox, unread), attaches to the pane and comes back, and cancels the working run."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.tmux import Tmux
from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui
from yeetui.system.tmux import server_name


def _started(project: Path, *args: str) -> dict:
    done = run_yeetui("agents", "start", "--json", *args, cwd=project)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _fleet_json(project: Path) -> dict:
    done = run_yeetui("fleet", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _wait_json(project: Path, check, why: str, timeout: float = 40.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        seen = _fleet_json(project)
        if check(seen):
            return seen
        assert time.monotonic() < deadline, f"timed out waiting for {why}: {json.dumps(seen)[:2000]}"
        time.sleep(0.2)


def _ids(rows: list[dict]) -> dict[str, dict]:
    return {row["run_id"]: row for row in rows}


def test_the_fleet_shows_three_projects_and_acts_on_each(launch, fake_env, project: Path, tmp_path: Path,
                                                         request: pytest.FixtureRequest) -> None:
    panes = server_name(Path(os.environ["YEETUI_DATA_DIR"]))  # the TUI's pane server outlives the TUI: ended here
    request.addfinalizer(lambda: subprocess.run(["tmux", "-L", panes, "kill-server"], capture_output=True,
                                                check=False))
    asks_in, works_in = tmp_path / "deploys", tmp_path / "reads"
    for folder in (asks_in, works_in):
        (folder / ".git").mkdir(parents=True)
    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "touch DEPLOYED"})], when_contains="ASK-TASK"),
        Reply(tool_calls=[ToolCall("complete", {"output": "ASK-DONE: deployed."})], when_contains="DEPLOYED"),
        # Working for minutes, a delta a second: no faster, four runs and a fleet share the machine's two cores
        Reply(text="slow reading " * 400, chunk_size=26, chunk_delay=1.0, when_contains="SLOW-TASK"),
        Reply(text="pane thinking " * 400, chunk_size=28, chunk_delay=1.0, when_contains="PANE-Q"),
    )
    asking = _started(asks_in, "generic", "ASK-TASK deploy it")  # no --yes: its question waits
    working = _started(works_in, "--yes", "generic", "SLOW-TASK read everything")
    seen = _wait_json(project, lambda s: asking["run_id"] in _ids(s["needs_you"]), "the question")
    assert "asks to run bash" in _ids(seen["needs_you"])[asking["run_id"]]["why"]

    tui = launch(width=130, height=34)  # the third project: a TUI whose oracle runs in a tmux pane
    tui.send("/oracle --tmux PANE-Q what is slow here?", "Enter")
    seen = _wait_json(project, lambda s: any(r["mode"] == "tmux" and r["pane"] for r in s["working"]),
                      "the pane child in its window")
    [pane_row] = [r for r in seen["working"] if r["mode"] == "tmux"]
    assert pane_row["project"] == str(project) and pane_row["pane"].startswith("tmux -L ")
    assert working["run_id"] in _ids(seen["working"])

    fleet = launch("fleet", width=150, height=34, ready="NEEDS YOU")
    screen = fleet.wait_for(lambda s: "asks to run bash" in s and "WORKING (2)" in s, timeout=20)
    assert "detached" in screen and "tmux" in screen

    # a: the question (the first run row is highlighted), y: allowed — the run goes on and finishes
    fleet.press("a")
    fleet.wait_for("wants to run bash", why="the permission dialog")
    fleet.press("y")
    fleet.wait_for("allowed once", why="the answer said")
    seen = _wait_json(project, lambda s: _ids(s["needs_you"]).get(asking["run_id"], {}).get("status") == "completed",
                      "the answered run to finish, its result unread")
    assert _ids(seen["needs_you"])[asking["run_id"]]["why"] == "finished: not read yet"
    assert (asks_in / "DEPLOYED").exists()

    # t on the pane child: the terminal is handed to its tmux window; detaching comes back to the fleet
    _highlight(fleet, lambda row: "oracle#1" in row, "the pane child")
    fleet.press("t")
    # the pane server's status line: its client is attached and reads keys (sent sooner, a prefix key can be
    # flushed with the input the client finds when it takes over the terminal)
    fleet.wait_for(lambda s: "NEEDS YOU" not in s and "0:oracle-1" in s, timeout=20,
                   why="the pane's window in the fleet's place")
    fleet.press("C-b", "d")
    fleet.wait_for("Back from oracle", timeout=20, why="the fleet again after detaching")

    # c on the other project's working run: cancelled, wherever it runs
    _highlight(fleet, lambda row: row.endswith("/reads)"), "the other project's working run")
    fleet.press("c")
    fleet.wait_for("cancelled", timeout=30, why="the cancel said")
    _wait_json(project, lambda s: _ids(s["done"]).get(working["run_id"], {}).get("status") == "cancelled",
               "the working run cancelled")


def _highlight(fleet: Tmux, wanted: Callable[[str], bool], what: str) -> None:
    """Move the fleet's highlight down to the row `wanted` finds, a key at a time, each seen drawn before the
    next (on a loaded machine a fixed pause let a key go unseen, and the next one went past the row)."""
    for _ in range(8):
        shown = _highlighted(fleet.screen())
        if wanted(shown):
            return
        fleet.press("Down")

        def highlight_moved(screen: str, before: str = shown) -> bool:
            return _highlighted(screen) != before

        fleet.wait_for(highlight_moved, timeout=10, why=f"a step down to {what}")
    assert wanted(_highlighted(fleet.screen())), f"{what} never highlighted: {fleet.screen()}"


def _highlighted(screen: str) -> str:
    """The fleet's detail line names the highlighted run (`path  (run id, mode, project)`)."""
    lines = [line.strip(" │") for line in screen.splitlines() if ", " in line and line.strip(" │").endswith(")")]
    return lines[-1] if lines else ""

