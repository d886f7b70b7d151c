"""`yeetui agents …` end to end: the real binary, detached worker processes, the fake LLM server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui, start_yeetui, wait_for_stored_status
from tests.processes import running_with, unique_sleep
from tests.waiting import until
from yeetui.errors import YeetuiError
from yeetui.subagents.elsewhere import process_running

ORACLE = "you never change anything"
"""A phrase of the oracle's system prompt: it marks requests made by an oracle run."""
SLOW_TEXT = "".join(f"word{i} " for i in range(2000))


@pytest.fixture
def workers() -> Iterator[list[int]]:
    """Pids of detached workers a test started; any still running at the end is killed."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if process_running(pid):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


def _json(done, code: int = 0):
    assert done.returncode == code, done.stdout + done.stderr
    return json.loads(done.stdout)


def _start(project: Path, workers: list[int], *args: str) -> dict:
    started = _json(run_yeetui("agents", "start", *args, "--json", cwd=project))
    workers.append(started["pid"])
    return started


def _status(project: Path, run_id: str) -> dict:
    return _json(run_yeetui("agents", "status", run_id, "--json", cwd=project))


def _wait_status(project: Path, run_id: str, wanted: set[str], timeout: float = 40.0) -> dict:
    """Wait by reading the store, then return what `agents status --json` says of the run."""
    try:
        wait_for_stored_status(run_id, wanted, timeout)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {_status(project, run_id)}") from None
    return _status(project, run_id)


def test_start_wait_json_prints_the_completed_record(fake_env, project: Path) -> None:
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "The clock is mocked twice."})],
                          when_contains="WAIT-Q"))
    record = _json(run_yeetui("agents", "start", "oracle", "WAIT-Q why does the login test flake?", "--wait",
                              "--json", cwd=project))
    assert record["status"] == "completed"
    assert record["profile"] == "oracle" and record["label"] == "oracle#1"
    assert record["model"] == "anthropic/claude-opus-4-5"
    assert record["result"]["output"] == record["output"] == "The clock is mocked twice."
    assert record["parent_session_id"] is None and record["session_id"]
    assert record["usage"]["input_tokens"] > 0 and record["cost"] is not None
    assert record["created_at"] and record["started_at"] and record["finished_at"]
    (request,) = fake_env.requests
    assert ORACLE in request.text and "WAIT-Q" in request.text

    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "plain answer"})], when_contains="PLAIN-Q"))
    plain = run_yeetui("agents", "start", "oracle", "PLAIN-Q", "--wait", cwd=project)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip() == "plain answer"


def test_detached_start_returns_at_once_and_the_worker_completes_it(fake_env, project: Path, workers,
                                                                   isolated_env: Path) -> None:
    fake_env.script(
        Reply(text="Reading the test first. " * 10, chunk_size=8,
              tool_calls=[ToolCall("complete", {"output": "DETACHED-ANSWER"})], when_contains="DETACHED-Q",
              after_requests=2),  # held until the test has looked (the release below)
    )
    started = _start(project, workers, "oracle", "DETACHED-Q what is flaky?", "--timeout", "120")
    assert started["status"] == "queued" and started["label"] == "oracle#1"
    right_after = _status(project, started["run_id"])
    assert right_after["status"] in ("queued", "running"), right_after
    # The process it started, or already the worker's own pid (a worker forked warm claims its run at once).
    assert right_after["pid"] != os.getpid() and process_running(right_after["pid"])
    assert right_after["options"]["timeout"] == 120
    fake_env.release()

    record = _wait_status(project, started["run_id"], {"completed", "failed", "interrupted", "timeout"})
    assert record["status"] == "completed", record
    assert record["output"] == "DETACHED-ANSWER"
    assert record["session_id"] == started["session_id"]
    assert [r for r in fake_env.requests if "DETACHED-Q" in r.text and ORACLE in r.text]
    log = Path(started["log"])
    assert log.is_relative_to(isolated_env / "data") and log.exists()
    until("the process to end", lambda: not process_running(started["pid"]), timeout=20)

    plain = run_yeetui("agents", "start", "oracle", "second question", cwd=project)
    assert plain.returncode == 0, plain.stderr
    run_id = plain.stdout.strip()
    assert len(run_id) == 32 and _status(project, run_id)["label"] == "oracle#2"
    workers.append(_status(project, run_id)["pid"])  # no reply is scripted for it; it fails on its own


def test_list_history_and_cancel_of_a_slow_detached_run(fake_env, project: Path, workers) -> None:
    fake_env.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "fast one"})], when_contains="FAST-Q"),
        Reply(text=SLOW_TEXT, chunk_size=4, chunk_delay=0.05, when_contains="SLOW-Q"),
    )
    fast = _json(run_yeetui("agents", "start", "oracle", "FAST-Q", "--wait", "--json", cwd=project))
    slow = _start(project, workers, "oracle", "SLOW-Q think for a long time")
    fake_env.wait_for_requests(2, timeout=30)
    running = _wait_status(project, slow["run_id"], {"running"})
    assert running["finished_at"] is None

    listed = _json(run_yeetui("agents", "list", "--json", cwd=project))
    assert [r["id"] for r in listed] == [slow["run_id"], fast["id"]]  # live first
    assert [r["status"] for r in listed] == ["running", "completed"]
    history = _json(run_yeetui("agents", "history", "--json", cwd=project))
    assert [r["id"] for r in history] == [fast["id"]]
    text = run_yeetui("agents", "list", cwd=project)
    assert text.returncode == 0 and "oracle#2" in text.stdout and "running" in text.stdout
    assert text.stdout.splitlines()[0].split() == ["RUN", "LABEL", "STATUS", "MODEL", "TIME", "COST", "TASK"]

    cancelled = _json(run_yeetui("agents", "cancel", slow["run_id"][:10], "--json", cwd=project))
    assert cancelled["id"] == slow["run_id"] and cancelled["status"] == "cancelled"
    assert _status(project, slow["run_id"])["status"] == "cancelled"
    until("the process to end", lambda: not process_running(slow["pid"]), timeout=20)
    history = _json(run_yeetui("agents", "history", "--json", "--limit", "1", cwd=project))
    assert [(r["id"], r["status"]) for r in history] == [(slow["run_id"], "cancelled")]
    again = run_yeetui("agents", "cancel", slow["run_id"], cwd=project)
    assert again.returncode == 1 and "already ended: cancelled" in again.stderr


def test_killed_worker_shows_interrupted_and_resumes_detached(fake_env, project: Path, workers) -> None:
    fake_env.script(Reply(text=SLOW_TEXT, chunk_size=4, chunk_delay=0.05, when_contains="RESUME-Q"))
    slow = _start(project, workers, "oracle", "RESUME-Q long investigation")
    _wait_status(project, slow["run_id"], {"running"})
    fake_env.wait_for_requests(1, timeout=30)
    time.sleep(1.0)  # past a few checkpoints of the streamed text
    os.killpg(slow["pid"], signal.SIGKILL)
    until("the process to end", lambda: not process_running(slow["pid"]), timeout=20)
    assert _status(project, slow["run_id"])["status"] == "interrupted"

    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "resumed answer"})],
                          when_contains="RESUME-Q"))
    resumed = _json(run_yeetui("agents", "resume", slow["run_id"], "--json", cwd=project))
    workers.append(resumed["pid"])
    assert resumed["run_id"] == slow["run_id"] and resumed["pid"] != slow["pid"]
    record = _wait_status(project, slow["run_id"], {"completed", "failed", "timeout", "cancelled"})
    assert record["status"] == "completed" and record["output"] == "resumed answer", record
    assert record["error"] is None
    last = fake_env.requests[-1].text
    assert last.count("RESUME-Q") == 1 and "word0 " in last  # the conversation went on, the prompt not re-sent
    assert "Continue where you left off" in last
    again = run_yeetui("agents", "resume", slow["run_id"], cwd=project)
    assert again.returncode == 1 and "nothing to resume" in again.stderr


def test_sigterm_cancels_a_waiting_start_which_resume_wait_finishes(fake_env, project: Path) -> None:
    fake_env.script(Reply(text=SLOW_TEXT, chunk_size=4, chunk_delay=0.05, when_contains="TERM-Q"))
    proc = start_yeetui("agents", "start", "oracle", "TERM-Q", "--wait", "--json", cwd=project,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        fake_env.wait_for_requests(1, timeout=30)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    record = json.loads(out)
    assert record["status"] == "cancelled" and record["finished_at"]
    assert _status(project, record["id"])["status"] == "cancelled"

    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "finished after all"})],
                          when_contains="TERM-Q"))
    resumed = _json(run_yeetui("agents", "resume", record["id"][:8], "--wait", "--json", cwd=project))
    assert (resumed["id"], resumed["status"], resumed["output"]) == (record["id"], "completed", "finished after all")


def test_bad_ids_and_bad_flags(project: Path) -> None:
    for args in (("status", "nope"), ("cancel", "nope"), ("resume", "nope")):
        done = run_yeetui("agents", *args, cwd=project)
        assert done.returncode == 1, (args, done.stderr)
        assert done.stderr.strip().splitlines() == ["yeetui: No run has an id starting with 'nope'."]
    unknown = run_yeetui("agents", "start", "no-such-profile", "hello", cwd=project)
    assert unknown.returncode == 1 and "no-such-profile" in unknown.stderr and "Traceback" not in unknown.stderr
    assert _json(run_yeetui("agents", "list", "--all", "--json", cwd=project)) == []
    for bad_args in (("start", "oracle"), ("start", "oracle", "q", "--timeout", "-3"), ("history", "--limit", "0"),
                     ("list", "--bogus"), ("frobnicate",)):
        done = run_yeetui("agents", *bad_args, cwd=project)
        assert done.returncode == 2, (bad_args, done.stderr)
        assert "usage:" in done.stderr


def test_steer_and_cancel_reach_a_subagent_of_another_process(fake_env, project: Path, tmp_path: Path) -> None:
    """`yeetui run` runs an oracle in the background; `agents steer` and `agents cancel` from another shell
    reach it through the store, and the `yeetui run` that waits for it ends."""
    flag = tmp_path / "never"
    fake_env.script(
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "generic", "prompt": "REMOTE-CHILD: work",
                                                      "blocking": False})], when_contains="REMOTE-PARENT"),
        Reply(tool_calls=[ToolCall("complete", {"output": "child started"})], when_contains="accepted"),
        Reply(tool_calls=[ToolCall("bash", {"command": f"until [ -e {flag} ]; do sleep 0.02; done"})],
              when_contains="REMOTE-CHILD"),
    )
    proc = start_yeetui("run", "--yes", "REMOTE-PARENT", cwd=project, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
    try:
        fake_env.wait_for_requests(3, timeout=30)  # parent, parent again, the child's first turn
        child = next(r for r in _json(run_yeetui("agents", "list", "--json", cwd=project))
                     if r["profile"] == "generic" and r["prompt"].startswith("REMOTE-CHILD"))
        _wait_status(project, child["id"], {"running"})
        steered = run_yeetui("agents", "steer", child["id"], "REMOTE-GUIDANCE", cwd=project)
        assert steered.returncode == 0 and "guidance sent" in steered.stdout, steered.stderr
        cancelled = _json(run_yeetui("agents", "cancel", child["id"], "--json", cwd=project))
        assert cancelled["status"] == "cancelled"
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "waiting for 1 subagent" in err


def test_labels_name_runs_and_a_closed_pipe_is_no_error(fake_env, project: Path) -> None:
    """`agents status oracle#1` takes the label `agents list` prints; `… | head` that stops reading early
    ends the command quietly instead of with a BrokenPipeError traceback."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "LABELLED"})]))
    done = _json(run_yeetui("agents", "start", "oracle", "why?", "--wait", "--json", cwd=project))
    status = _json(run_yeetui("agents", "status", done["label"], "--json", cwd=project))
    assert status["id"] == done["id"] and status["output"] == "LABELLED"
    proc = start_yeetui("profiles", "show", "generic", cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "BrokenPipeError" not in err and "Traceback" not in err


@pytest.mark.parametrize("sandbox", ["bwrap", "off"])
def test_a_killed_detached_workers_command_dies_with_it(project: Path, workers: list[int], fake_env,
                                                        sandbox: str) -> None:
    """`agents start` detaches a worker; it runs `sleep` through bash and is killed -9. The sleep goes with it —
    at once, not when some later yeetui command recovers the run (none is run here). With bubblewrap the
    sandbox ends it; unconfined (`bash_sandbox: off`, or no sandbox on the machine) the command's own watcher
    does."""
    if sandbox == "off":
        agents = project / ".yeetui" / "agents"
        agents.mkdir(parents=True)
        (agents / "loose.md").write_text("---\ndescription: unconfined\ncapabilities: [subtask]\n"
                                         "workspace: {bash_sandbox: off}\npermissions: {bash: allow}\n"
                                         "exit_tools: [complete]\n---\nYou run commands.\n")
        assert run_yeetui("trust", cwd=project).returncode == 0
    pause = unique_sleep()
    fake_env.script(Reply(tool_calls=[ToolCall("bash", {"command": f"sleep {pause}; echo done"})],
                          when_contains="SLEEP-TASK"))
    started = _start(project, workers, "loose" if sandbox == "off" else "generic", "SLEEP-TASK", "--yes")
    deadline = time.monotonic() + 40
    while not running_with(pause):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    os.kill(started["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 20
    while running_with(pause):
        assert time.monotonic() < deadline, "the command outlived its killed worker"
        time.sleep(0.05)


def test_agents_send_to_a_finished_subagent_continues_it_with_its_context(fake_env, tmp_path: Path) -> None:
    """`yeetui agents send oracle#1 …` after the oracle finished: it answers in its own session, with its
    earlier conversation, and the answer is printed (and delivered to its parent)."""
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    fake_env.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "SECOND: the cache as well"})], when_contains="FOLLOW-Q"),
        Reply(tool_calls=[ToolCall("complete", {"output": "FIRST: the timer"})], when_contains="ORACLE-TASK"),
        Reply(tool_calls=[ToolCall("complete", {"output": "parent done"})], when_contains="FIRST: the timer"),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "ORACLE-TASK why?",
                                                      "blocking": True})]))
    first = run_yeetui("run", "--json", "PARENT go", cwd=project, timeout=120)
    assert first.result["status"] == "completed", first.result
    sent = run_yeetui("agents", "send", "--json", "oracle#1", "FOLLOW-Q and the cache?", cwd=project, timeout=120)
    assert sent.returncode == 0, sent.stderr
    answer = json.loads(sent.stdout.strip().splitlines()[-1])
    assert answer["status"] == "completed" and answer["output"] == "SECOND: the cache as well"
    assert answer["label"] == "oracle#1"  # the same subagent going on, by the same name
    follow_up = next(r for r in fake_env.requests if "FOLLOW-Q" in r.text)
    assert "ORACLE-TASK" in follow_up.text and "FIRST: the timer" in follow_up.text
    # a running one only gets guidance; a run that is no subagent's cannot be followed up
    refused = run_yeetui("agents", "send", first.result["run_id"], "more?", cwd=project)
    assert refused.returncode != 0 and "top-level conversation" in refused.stderr


def test_a_run_that_gets_nowhere_is_listed_stalled_within_the_configured_time(fake_env, project: Path, workers,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A detached oracle whose model sends one token and then nothing: `agents list` says `stalled` once the
    configured `stall_after` (here 5 s) has passed without progress, and the JSON says how long."""
    monkeypatch.setenv("YEETUI_STALL_AFTER", "5")
    fake_env.script(Reply(text="Hmm" + "." * 3, chunk_size=3, chunk_delay=60.0, when_contains="STALL-Q"))
    started = _start(project, workers, "oracle", "STALL-Q think hard", "--timeout", "300")
    _wait_status(project, started["run_id"], {"running"})
    deadline = time.monotonic() + 60
    while True:
        listed = {r["id"]: r for r in _json(run_yeetui("agents", "list", "--json", cwd=project))}
        row = listed[started["run_id"]]
        if row.get("stalled"):
            break
        assert time.monotonic() < deadline, row
        assert row["status"] == "running"
        time.sleep(max(0.2, 5 - (row.get("idle_seconds") or 0)))  # until it should read stalled, then look again
    assert row["idle_seconds"] >= 5
    table = run_yeetui("agents", "list", cwd=project)
    assert "stalled" in table.stdout
    run_yeetui("agents", "cancel", started["run_id"], cwd=project)


def test_fleet_lists_the_runs_of_every_project_grouped(fake_env, tmp_path: Path) -> None:
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "fine"})], repeat=True))
    projects = [tmp_path / name for name in ("alpha", "beta")]
    for project in projects:
        (project / ".git").mkdir(parents=True)
        assert run_yeetui("run", "--json", f"work in {project.name}", cwd=project).returncode == 0
    seen = _json(run_yeetui("fleet", "--json", cwd=tmp_path))
    done = {row["project"]: row for row in seen["done"]}
    assert set(done) == {str(p) for p in projects} and not seen["working"]
    # finished top-level runs nobody read are not "needs you" here: `yeetui run` printed them
    text = run_yeetui("fleet", cwd=tmp_path).stdout
    assert "NEEDS YOU (0)" in text and "DONE (24 h) (2)" in text


async def test_a_follow_up_sent_from_the_fleet_asks_there_instead_of_being_refused(fake_env, project: Path) -> None:
    """`m` on a finished subagent in the fleet: it goes on in the background (`agents send --ask-anywhere`), and
    its tool call that would ask waits for an answer in the store — given here as the fleet gives it — instead
    of being refused because no terminal is there."""
    from yeetui.application.fleet import FleetDesk
    from yeetui.store import Store

    (project / ".git").mkdir()
    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "touch FOLLOWED"})], when_contains="FOLLOW-Q"),
        Reply(tool_calls=[ToolCall("complete", {"output": "followed up"})], when_contains="FOLLOWED"),
        Reply(tool_calls=[ToolCall("complete", {"output": "FIRST done"})], when_contains="CHILD-TASK"),
        Reply(tool_calls=[ToolCall("complete", {"output": "parent done"})], when_contains="FIRST done"),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "generic", "prompt": "CHILD-TASK go",
                                                      "blocking": True})]))
    first = await asyncio.to_thread(run_yeetui, "run", "--json", "PARENT go", cwd=project, timeout=120)
    assert first.result["status"] == "completed", first.result
    async with await Store.open(Path(os.environ["YEETUI_DATA_DIR"]) / "yeetui.db") as store:
        desk = FleetDesk(store)
        rows = {r.label: r for r in (await desk.look()).done}
        with pytest.raises(YeetuiError, match="conversation of its own"):
            await desk.send(rows["generic#1"], "a top-level run is opened, not followed up")
        child = next(r for r in rows.values() if r.label != "generic#1")
        assert "goes on with your message" in await desk.send(child, "FOLLOW-Q touch it")
        deadline = time.monotonic() + 60
        while not (asks := [r for r in (await desk.look()).needs_you if r.ask is not None]):
            assert time.monotonic() < deadline, "the follow-up's question never reached the fleet"
            await asyncio.sleep(0.1)
        assert asks[0].ask is not None and asks[0].ask.subject == "touch FOLLOWED"
        assert "allowed once" in await desk.answer(asks[0], "allow_once")
        while not (project / "FOLLOWED").exists() or await store.permission_asks.unanswered_any():
            assert time.monotonic() < deadline, "the allowed command never ran"
            await asyncio.sleep(0.1)
        while (runs := [r for r in await store.list_runs(session_id=child.session_id)
                        if not r.status.is_final]):
            assert time.monotonic() < deadline, runs
            await asyncio.sleep(0.1)
