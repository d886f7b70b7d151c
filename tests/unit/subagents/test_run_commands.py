"""Control of a run from another yeetui process: cancel, abort and steer go through the store and the
process that executes the run acts on them. Two runtimes on one data dir stand for two processes: each has
its own spawner, and a run is live in only one of them."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.events import RunStatus
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runs.spec import RunOptions
from yeetui.runtime import Runtime
from yeetui.store.coordination import RunCommand
from yeetui.subagents.run_commands import RunCommands
from yeetui.subagents.spawner import SpawnRefused, SpawnRequest


def _until_file(flag: Path) -> ToolCall:
    return ToolCall("bash", {"command": f"until [ -e {flag} ]; do sleep 0.02; done"})


@pytest.fixture
async def other(runtime: Runtime, scripted, project_dir: Path):
    """A second runtime on the same data dir and project: the other yeetui process."""
    second = await Runtime.open(cwd=project_dir, provider_factory=scripted.provider_factory)
    yield second
    await second.close()


async def _running(runtime: Runtime, run_id: str) -> None:
    for _ in range(1000):
        run = await runtime.store.get_run(run_id)
        if run.status == RunStatus.RUNNING:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"run {run_id} never started")


async def test_abort_from_another_process(runtime: Runtime, other: Runtime, scripted, tmp_path: Path) -> None:
    answer_permissions_headless(runtime.bus, approve=True)
    scripted.script(Reply(tool_calls=[_until_file(tmp_path / "never")], when_contains="LONG-JOB"))
    handle = await runtime.spawner.spawn(SpawnRequest("generic", "LONG-JOB", requested_by="user"))
    await scripted.until_requests(1, finished=True)
    await _running(runtime, handle.run_id)
    await other.spawner.cancel(handle.run_id, graceful=False)  # not live there: sent through the store
    for _ in range(3000):
        if (await runtime.store.get_run(handle.run_id)).status.is_final:
            break
        await asyncio.sleep(0.01)
    assert (await runtime.store.get_run(handle.run_id)).status == RunStatus.CANCELLED


async def test_steer_from_another_process_reaches_the_next_turn(runtime: Runtime, other: Runtime, scripted,
                                                                tmp_path: Path) -> None:
    answer_permissions_headless(runtime.bus, approve=True)
    flag = runtime.project_dir / "go-on"  # where the sandboxed command sees it
    scripted.script(
        Reply(tool_calls=[_until_file(flag)], when_contains="STEERED-JOB"),
        Reply(tool_calls=[ToolCall("complete", {"output": "took the advice"})], when_contains="USE-THE-CACHE"),
    )
    handle = await runtime.spawner.spawn(SpawnRequest("generic", "STEERED-JOB", requested_by="user"))
    await scripted.until_requests(1, finished=True)
    await other.spawner.steer(handle.run_id, "USE-THE-CACHE please", sender="the user")
    for _ in range(1000):  # taken by the executing process: its mailbox holds it for the next turn
        if runtime.spawner._live[handle.run_id].mailbox:
            break
        await asyncio.sleep(0.01)
    flag.touch()
    result = await asyncio.wait_for(runtime.spawner.wait(handle.run_id), 30)
    assert result.status == RunStatus.COMPLETED and result.output == "took the advice"
    assert "[Guidance from the user]" in scripted.requests[-1].text


async def test_guidance_sent_before_a_turn_begins_is_in_that_turn(runtime: Runtime, other: Runtime, scripted,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Forced interleaving: the executing process's poller never gets to the command (as on a loaded machine,
    where the tool call ends before its next look). The run itself takes its commands before each turn, so the
    guidance the user sent before the turn began is in that turn, not one later (or never)."""
    monkeypatch.setattr(runtime.spawner.commands, "keep_taking", lambda live, act: None)
    answer_permissions_headless(runtime.bus, approve=True)
    flag = runtime.project_dir / "go-on"
    scripted.script(
        Reply(tool_calls=[_until_file(flag)], when_contains="STEER-BEFORE-TURN"),
        Reply(tool_calls=[ToolCall("complete", {"output": "took the advice"})], when_contains="USE-THE-CACHE"),
    )
    handle = await runtime.spawner.spawn(SpawnRequest("generic", "STEER-BEFORE-TURN", requested_by="user"))
    await scripted.until_requests(1, finished=True)
    await other.spawner.steer(handle.run_id, "USE-THE-CACHE please", sender="the user")
    flag.touch()
    result = await asyncio.wait_for(runtime.spawner.wait(handle.run_id), 30)
    assert result.status == RunStatus.COMPLETED and result.output == "took the advice"
    assert len(scripted.requests) == 2 and "[Guidance from the user]" in scripted.requests[-1].text


async def test_commands_to_a_finished_run_are_refused(runtime: Runtime, other: Runtime, scripted) -> None:
    scripted.script(Reply(tool_calls=[ToolCall("complete", {"output": "quick"})]))
    handle = await runtime.spawner.spawn(SpawnRequest("generic", "QUICK", requested_by="user", blocking=True))
    with pytest.raises(SpawnRefused, match="not running"):
        await other.spawner.cancel(handle.run_id)
    with pytest.raises(SpawnRefused, match="not running"):
        await other.spawner.steer(handle.run_id, "too late")


async def test_two_processes_resuming_one_run_start_it_once(runtime: Runtime, other: Runtime, scripted,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Both read the run as ended; the claim is a compare-and-set, so exactly one of them resumes it. The two
    claims are held until both processes have read the run (without that, a fast first resume can finish
    before the second one even looks, and the second then rightly resumes the run again)."""
    scripted.script(Reply(text="half an answer", when_contains="RESUME-ONCE"), Reply.error(400),
                    Reply(tool_calls=[ToolCall("complete", {"output": "finished"})], repeat=True))
    parent = await runtime.launcher.new_session(runtime.profiles.get("generic"))
    handle = await runtime.spawner.spawn(SpawnRequest("oracle", "RESUME-ONCE", parent_session_id=parent.id,
                                                      requested_by="user", blocking=True))
    assert (await runtime.store.get_run(handle.run_id)).status == RunStatus.FAILED
    arrived, both_read = 0, asyncio.Event()
    for store in (runtime.store, other.store):
        claim = store.claim_run

        async def held(*args, _claim=claim, **kwargs):
            nonlocal arrived
            arrived += 1
            if arrived == 2:
                both_read.set()
            await asyncio.wait_for(both_read.wait(), 30)
            return await _claim(*args, **kwargs)

        monkeypatch.setattr(store, "claim_run", held)
    outcomes = await asyncio.gather(runtime.spawner.start_existing(handle.run_id, blocking=True, resume=True),
                                    other.spawner.start_existing(handle.run_id, blocking=True, resume=True),
                                    return_exceptions=True)
    refused = [o for o in outcomes if isinstance(o, SpawnRefused)]
    started = [o for o in outcomes if not isinstance(o, BaseException)]
    assert len(refused) == 1 and len(started) == 1, outcomes
    assert "another process" in str(refused[0])
    assert started[0].result.status == RunStatus.COMPLETED
    assert (await runtime.store.get_run(handle.run_id)).options["attempt"] == 1


async def test_a_run_of_this_process_that_is_not_a_subagent_is_refused(runtime: Runtime) -> None:
    """A command posted for a run this very process executes outside the spawner would never be picked up."""
    session = await runtime.launcher.new_session(runtime.profiles.get("generic"))
    run = await runtime.store.create_run(session_id=session.id, profile="generic", model="anthropic/x",
                                         prompt="primary", status=RunStatus.RUNNING)
    with pytest.raises(SpawnRefused, match="not a subagent"):
        await runtime.spawner.cancel(run.id)


async def test_run_commands_post_for_a_running_subagent_and_take_each_command_once(runtime: Runtime) -> None:
    """RunCommands on its own: a command is posted only for a run some process executes, and taken once,
    whoever looks, in the order it was posted."""
    commands = RunCommands(runtime.store)
    session = await runtime.launcher.new_session(runtime.profiles.get("generic"))
    run = await runtime.store.create_run(session_id=session.id, profile="generic", model="anthropic/x",
                                         prompt="child", status=RunStatus.RUNNING,
                                         options=RunOptions(parent_session_id=session.id).to_json())
    with pytest.raises(SpawnRefused, match="not running"):
        await commands.post("no-such-run", "cancel")
    await commands.post(run.id, "steer", "LOOK-LEFT", sender="the user")
    await commands.post(run.id, "abort")
    taken: list[RunCommand] = []

    async def act(command: RunCommand) -> None:
        taken.append(command)

    await commands.take([run.id], act)
    await RunCommands(runtime.store).take([run.id], act)  # another process's look finds nothing left
    assert [(c.kind, c.body, c.sender) for c in taken] == [("steer", "LOOK-LEFT", "the user"), ("abort", "", "user")]


async def test_run_commands_keep_taking_only_while_runs_are_live(runtime: Runtime,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    commands = RunCommands(runtime.store, poll=0.01)
    live = ["run-a"]
    looks: list[list[str]] = []

    async def act(command: RunCommand) -> None:
        raise AssertionError("no command was posted")

    async def take(run_ids, act):
        looks.append(list(run_ids))
        if len(looks) == 3:
            live.clear()

    monkeypatch.setattr(commands, "take", take)
    commands.keep_taking(lambda: list(live), act)
    commands.keep_taking(lambda: list(live), act)  # one poller at a time
    for _ in range(500):
        if not live and commands._pump is not None and commands._pump.done():
            break
        await asyncio.sleep(0.01)
    assert looks == [["run-a"]] * 3
    await commands.close()


async def test_a_warm_worker_that_reads_its_run_before_its_launcher_records_it_still_starts_it(
        runtime: Runtime, scripted, project_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A detached run is recorded by the process that made it, then handed to the process it started (the
    worker's stand-in, when the worker is forked warm). A warm worker can read the run before that record lands:
    its claim (a compare-and-set on the pid it read) then fails — but the pid that changed is its stand-in's,
    so it claims again (the worker's runtime is opened knowing its stand-in, as a warm worker's is). The launcher's
    record is forced in between the worker's read and its claim."""
    scripted.script(Reply(tool_calls=[ToolCall("complete", {"output": "claimed"})], when_contains="LATE-RECORD"))
    run = await runtime.detached.create(profile_name="oracle", prompt="LATE-RECORD")
    assert run.pid == os.getpid()
    stand_in = os.getppid()  # a live process that is not this one
    other = await Runtime.open(cwd=project_dir, provider_factory=scripted.provider_factory, stand_in=stand_in)
    claim = other.store.claim_run
    claims: list[int] = []

    async def launcher_records_first(*args, **kwargs):
        if not claims:
            assert await runtime.store.hand_over(run.id, stand_in, from_pid=os.getpid())  # landing late
        claims.append(kwargs["pid"])
        return await claim(*args, **kwargs)

    monkeypatch.setattr(other.store, "claim_run", launcher_records_first)
    try:
        handle = await other.spawner.start_existing(run.id, blocking=True)
        assert claims == [os.getpid(), stand_in]
        assert handle.result is not None and handle.result.output == "claimed"
        assert (await other.store.get_run(run.id)).pid == os.getpid()  # the worker's own
    finally:
        await other.close()


async def test_a_launcher_record_landing_after_the_workers_claim_leaves_the_workers_pid(runtime: Runtime) -> None:
    """The other order: the worker claimed first; the launcher's late record of its stand-in changes nothing, so
    the run names the process it lives in (whose death, not its stand-in's, means the run died)."""
    run = await runtime.detached.create(profile_name="oracle", prompt="EARLY-CLAIM")
    worker = os.getppid()
    assert await runtime.store.claim_run(run.id, status=run.status, pid=run.pid, new_pid=worker) is not None
    assert not await runtime.store.hand_over(run.id, 12345, from_pid=os.getpid())
    assert (await runtime.store.get_run(run.id)).pid == worker


async def test_a_run_another_process_claimed_meanwhile_is_still_refused(runtime: Runtime, other: Runtime,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The second claim is only for a pid that is this process's own: another's claim still wins alone."""
    run = await runtime.detached.create(profile_name="oracle", prompt="CLAIMED-ELSEWHERE")
    claim = other.store.claim_run

    async def someone_else_first(*args, **kwargs):
        await runtime.store.update_run(run.id, pid=os.getppid())
        return await claim(*args, **kwargs)

    monkeypatch.setattr(other.store, "claim_run", someone_else_first)
    with pytest.raises(SpawnRefused, match="started by another process meanwhile"):
        await other.spawner.start_existing(run.id, blocking=True)
