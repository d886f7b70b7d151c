"""Subagents in `tmux` mode, with real tmux on a private server per test: the child is a `yeetui agent run`
worker in a window of yeetui's own tmux server; its ending reaches the parent exactly once, cancel kills its
process group, a timeout still delivers, a parent killed meanwhile finds it running and announced once."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.tmux import tmux_path
from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import ORACLE, result_text, run_yeetui, tool_results, yeetui_argv, yeetui_env
from tests.processes import gone, running_with, unique_sleep
from tests.waiting import until_async
from yeetui import paths
from yeetui.events import PermissionRequested, RunStatus
from yeetui.runtime import FrontEnd, Runtime
from yeetui.store import Store
from yeetui.subagents.spawner import SpawnRefused, SpawnRequest
from yeetui.system.tmux import TmuxServer, server_name

pytestmark = pytest.mark.skipif(tmux_path() is None, reason="tmux is not installed: tmux mode cannot be tested")

WAIT = 60.0


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("YEETUI_RETRY__BASE_DELAY", "0")
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def front_end() -> FrontEnd:
    """As `yeetui run --yes`: a pane's worker has nobody to ask. A test parametrizes it to change that."""
    return FrontEnd(approve_asks=True)


@pytest.fixture
async def runtime(fake_env, project: Path, front_end: FrontEnd) -> AsyncIterator[Runtime]:
    rt = await Runtime.open(cwd=project, front_end=front_end)
    try:
        yield rt
    finally:
        await rt.close()
        await TmuxServer(server_name(paths.data_dir())).kill_server()


def _spawn(prompt: str, **kw) -> ToolCall:
    return ToolCall("spawn_subagent", {"profile": "oracle", "prompt": prompt, "mode": "tmux", **kw})


async def _announcements(store: Store, session_id: str) -> list[str]:
    return [m.message.text for m in await store.messages(session_id) if m.message.meta.get("announcement")]


async def test_an_oracle_in_a_tmux_pane_answers_its_parent_exactly_once(runtime: Runtime, fake_env) -> None:
    fake_env.script(
        Reply(tool_calls=[_spawn("PANE-Q: why?", blocking=False)], when_contains="PARENT-1"),
        Reply(tool_calls=[ToolCall("complete", {"output": "Asked the oracle."})], when_contains="PARENT-1"),
        Reply(text="Working on the answer. ", chunk_delay=0.02, when_contains=ORACLE,
              tool_calls=[ToolCall("complete", {"output": "PANE-ANSWER: because."})]),
    )
    result = await runtime.launcher.run_prompt("PARENT-1: ask an oracle in a pane")
    assert result.status == RunStatus.COMPLETED, result.error
    [run] = [r for r in await runtime.store.list_runs() if r.profile == "oracle"]
    assert run.options["mode"] == "tmux" and run.options["pane"]["window"] == "oracle-1"
    texts = await until_async("the announcement",
                              lambda: _announcements(runtime.store, result.session_id), timeout=WAIT)
    assert len(texts) == 1 and "PANE-ANSWER: because." in texts[0]  # type: ignore[arg-type]
    final = await runtime.store.get_run(run.id)
    assert final is not None and final.status == RunStatus.COMPLETED and final.pid != os.getpid()
    # The worker ran in the pane: the window shows its progress and its streamed answer.
    server = TmuxServer(run.options["pane"]["server"])
    screen = await until_async("the pane's text",
                               lambda: _screen_has(server, run.options["pane"]["pane"], "Working on the answer."),
                               timeout=WAIT)
    assert "oracle#1" in screen  # type: ignore[operator]
    await until_async("the parent to stop following it",
                      lambda: not runtime.spawner.elsewhere.following(run.id), timeout=WAIT)
    assert len(await _announcements(runtime.store, result.session_id)) == 1
    assert len(await runtime.store.inbox.list(result.session_id)) == 1


async def _screen_has(server: TmuxServer, pane: str, text: str) -> str | None:
    screen = await server.capture(pane)
    return screen if text in screen else None


async def test_a_blocking_spawn_in_a_pane_returns_the_answer_as_its_tool_result(runtime: Runtime, fake_env) -> None:
    fake_env.script(
        Reply(tool_calls=[_spawn("PANE-Q2: what?")], when_contains="PARENT-2"),
        Reply(tool_calls=[ToolCall("complete", {"output": "PANE-ANSWER-2"})], when_contains=ORACLE),
        Reply(tool_calls=[ToolCall("complete", {"output": "It said PANE-ANSWER-2."})], when_contains="PARENT-2"),
    )
    result = await runtime.launcher.run_prompt("PARENT-2: ask and wait")
    assert result.status == RunStatus.COMPLETED, result.error
    parent_requests = [r for r in fake_env.requests if "PARENT-2" in r.text]
    assert "PANE-ANSWER-2" in parent_requests[-1].text
    assert await _announcements(runtime.store, result.session_id) == []  # answered inline, not announced


async def test_abort_kills_the_panes_process_group(runtime: Runtime, fake_env) -> None:
    fake_env.script(Reply(tool_calls=[ToolCall("bash", {"command": "sleep 300"})], when_contains="PANE-SLOW"))
    handle = await runtime.spawner.spawn(SpawnRequest("generic", "PANE-SLOW: run it", requested_by="user",
                                                      mode="tmux"))
    pgid = await until_async("the command to start", lambda: _tool_group(runtime.store, handle.run_id), timeout=WAIT)
    run = await runtime.store.get_run(handle.run_id)
    assert run is not None and run.pid is not None
    worker = run.pid
    await runtime.spawner.cancel(handle.run_id, graceful=False)
    ended = await until_async("the run to end", lambda: _final(runtime.store, handle.run_id), timeout=WAIT)
    assert ended.status in (RunStatus.CANCELLED, RunStatus.INTERRUPTED)  # type: ignore[attr-defined]
    await until_async("the worker and its command to be gone",
                      lambda: gone(pgid) and gone(worker), timeout=WAIT)  # type: ignore[arg-type]


async def test_a_pane_child_is_among_the_running_and_a_cancel_by_its_label_ends_it(runtime: Runtime,
                                                                                   fake_env) -> None:
    """What `/cancel oracle#1` resolves through: the spawner's running runs include the child another process
    executes in its pane (found by label); cancelling it there ends its run cancelled."""
    fake_env.script(Reply(text="pondering " * 2000, chunk_size=30, chunk_delay=1.0, when_contains="PANE-RUNNING",
                          repeat=True))
    parent = await runtime.store.create_session(profile="generic")
    handle = await runtime.spawner.spawn(SpawnRequest("oracle", "PANE-RUNNING: think", mode="tmux",
                                                      parent_session_id=parent.id, requested_by="user"))
    await until_async("the child to run", lambda: _has_run(runtime.store, "oracle", RunStatus.RUNNING), timeout=WAIT)
    assert not runtime.spawner.is_live(handle.run_id)  # not this process's: the worker in the pane runs it
    [run] = await runtime.spawner.running(parent.id)
    assert (run.id, run.label) == (handle.run_id, "oracle#1")
    assert [r.id for r in await runtime.spawner.running()] == [handle.run_id]
    await runtime.spawner.cancel(run.id, graceful=False)
    ended = await until_async("the run to end", lambda: _final(runtime.store, handle.run_id), timeout=WAIT)
    assert ended.status == RunStatus.CANCELLED  # type: ignore[attr-defined]
    assert await runtime.spawner.running() == []


async def _tool_group(store: Store, run_id: str) -> int | None:
    """The process group the run's bash command runs in, as the worker noted it in the store."""
    rows = await store.fetch_all("tool processes", "SELECT pgid FROM tool_processes WHERE run_id = ?", (run_id,))
    return rows[0]["pgid"] if rows else None


async def _final(store: Store, run_id: str):
    run = await store.get_run(run_id)
    return run if run is not None and run.status.is_final else None


async def test_six_pane_children_spawned_at_once_all_start(runtime: Runtime, fake_env) -> None:
    """Six `mode: tmux` spawns in one turn against a fresh tmux server: every one starts in its own window (the
    first ones used to race to create the server's session, and lose with `duplicate session`)."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "ok"})], when_contains=ORACLE, repeat=True))
    parent = await runtime.store.create_session(profile="generic")
    runtime.spawner.max_children = 6
    assert not runtime.spawner.panes.server.running()  # type: ignore[union-attr]
    handles = await asyncio.gather(*(runtime.spawner.spawn(SpawnRequest(
        "oracle", f"AT-ONCE {n}", mode="tmux", parent_session_id=parent.id, requested_by="user"))
        for n in range(6)))
    runs = [await runtime.store.get_run(h.run_id) for h in handles]
    windows = {r.options["pane"]["window"] for r in runs if r is not None and r.options.get("pane")}
    assert windows == {f"oracle-{n}" for n in range(1, 7)}
    await until_async("every child to end",
                      lambda: _all_final(runtime.store, [h.run_id for h in handles]), timeout=WAIT)
    assert [(await runtime.store.get_run(h.run_id)).status for h in handles] == [RunStatus.COMPLETED] * 6  # type: ignore[union-attr]


async def test_a_pane_that_could_not_open_does_not_count_against_the_limit(runtime: Runtime, fake_env) -> None:
    """A spawn whose window tmux refuses is refused, and its run ends failed: it is no live child, so the
    parent's next spawn still has its place."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "ok"})], when_contains=ORACLE, repeat=True))
    parent = await runtime.store.create_session(profile="generic")
    runtime.spawner.max_children = 1
    panes = runtime.spawner.panes
    assert panes is not None and await panes.problem() is None
    real, panes.server.executable = panes.server.executable, "/bin/false"  # tmux refuses every command
    with pytest.raises(SpawnRefused, match="could not start in a tmux pane"):
        await runtime.spawner.spawn(SpawnRequest("oracle", "REFUSED", mode="tmux", parent_session_id=parent.id,
                                                 requested_by="user"))
    [failed] = [r for r in await runtime.store.list_runs() if r.profile == "oracle"]
    assert failed.status == RunStatus.FAILED
    panes.server.executable = real
    handle = await runtime.spawner.spawn(SpawnRequest("oracle", "STARTS", mode="tmux", parent_session_id=parent.id,
                                                      requested_by="user"))
    ended = await until_async("the second child to end", lambda: _final(runtime.store, handle.run_id), timeout=WAIT)
    assert ended.status == RunStatus.COMPLETED  # type: ignore[attr-defined]


FAILING_TMUX = """#!/bin/sh
# tmux, except that the first window asked for waits for {go} and is then refused
case " $* " in *" new-session "*|*" new-window "*)
  if rm {fail} 2>/dev/null; then
    touch {blocked}
    while [ ! -e {go} ]; do sleep 0.01; done
    echo "refused for the test" >&2
    exit 1
  fi;;
esac
exec {tmux} "$@"
"""


async def test_a_spawn_at_the_limit_waits_for_a_sibling_whose_pane_tmux_refuses(runtime: Runtime, fake_env,
                                                                                tmp_path: Path) -> None:
    """At the parent's limit while a sibling is still opening its pane: the spawn is not refused for the limit
    at once; the sibling's window is refused (its run ends failed), and the spawn takes the place it frees."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "ok"})], when_contains=ORACLE, repeat=True))
    parent = await runtime.store.create_session(profile="generic")
    runtime.spawner.max_children = 1
    panes = runtime.spawner.panes
    assert panes is not None and await panes.problem() is None
    fail, blocked, go, wrapper = (tmp_path / n for n in ("fail", "blocked", "go", "tmux"))
    fail.touch()
    wrapper.write_text(FAILING_TMUX.format(fail=fail, blocked=blocked, go=go, tmux=panes.server.executable))
    wrapper.chmod(0o755)
    panes.server.executable = str(wrapper)

    def spawn(prompt: str) -> asyncio.Task:
        return asyncio.create_task(runtime.spawner.spawn(SpawnRequest(
            "oracle", prompt, mode="tmux", parent_session_id=parent.id, requested_by="user")))

    first = spawn("REFUSED-PANE")
    await until_async("the first pane to be opening", blocked.exists, timeout=WAIT)
    second = spawn("AT-THE-LIMIT")
    await until_async("the second spawn to reach the limit",
                      lambda: _children(runtime.store, parent.id, 2), timeout=WAIT)
    go.touch()
    with pytest.raises(SpawnRefused, match="could not start in a tmux pane"):
        await first
    handle = await second
    ended = await until_async("the second child to end", lambda: _final(runtime.store, handle.run_id), timeout=WAIT)
    assert ended.status == RunStatus.COMPLETED  # type: ignore[attr-defined]


async def _children(store: Store, parent_id: str, count: int) -> bool:
    return len(await store.children(parent_id)) >= count


async def test_a_timeout_in_a_pane_still_delivers(runtime: Runtime, fake_env) -> None:
    fake_env.script(Reply(text="thinking " * 400, chunk_size=4, chunk_delay=0.05, when_contains="PANE-TIMEOUT"))
    parent = await runtime.store.create_session(profile="generic")
    handle = await runtime.spawner.spawn(SpawnRequest("oracle", "PANE-TIMEOUT: think long", mode="tmux",
                                                      parent_session_id=parent.id, requested_by="user",
                                                      timeout=2))
    ended = await until_async("the timeout", lambda: _final(runtime.store, handle.run_id), timeout=WAIT)
    assert ended.status == RunStatus.TIMEOUT  # type: ignore[attr-defined]
    texts = await until_async("the announcement", lambda: _announcements(runtime.store, parent.id), timeout=WAIT)
    assert len(texts) == 1 and "Timed out" in texts[0]  # type: ignore[arg-type]


def test_a_killed_parent_finds_its_pane_child_running_and_hears_of_it_once(fake_env, project: Path) -> None:
    """`yeetui run` spawns an oracle in a pane and is killed -9 while it runs. The next yeetui process leaves
    the child alone (its worker lives on in tmux: no `interrupted`), and its ending is announced once."""
    release, nap = project / "release", f"0.05{unique_sleep()[4:]}"  # a sleep of its own, seen from outside
    fake_env.script(
        Reply(tool_calls=[_spawn("PANE-LONG: think", blocking=False)], when_contains="PARENT-K"),
        Reply(tool_calls=[ToolCall("bash", {"command": "sleep 300"})], when_contains="PARENT-K"),
        Reply(tool_calls=[ToolCall("bash", {"command": f"until [ -e {release} ]; do sleep {nap}; done"})],
              when_contains=ORACLE),
        Reply(tool_calls=[ToolCall("complete", {"output": "PANE-LONG-ANSWER"})], when_contains=ORACLE),
    )
    env = yeetui_env()
    parent = subprocess.Popen(yeetui_argv("run", "--yes", "--json", "PARENT-K: spawn and wait"), cwd=project,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              start_new_session=True)
    try:
        # The child's command running means its permission was answered (the parent answers it, `--yes`): a
        # kill before that leaves the question for the user and the child rightly waiting on it.
        asyncio.run(until_async("the oracle's command to start", lambda: running_with(nap), timeout=WAIT))
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        listed = run_yeetui("agents", "list", "--json", cwd=project)
        runs = {r["label"]: r for r in json.loads(listed.stdout)}
        assert runs["oracle#1"]["status"] == "running", runs  # reattached to, not marked interrupted
        release.touch()
        asyncio.run(_wait_for_run("oracle", RunStatus.COMPLETED))
        for _ in range(2):  # any command recovers: the pending announcement is made, once
            run_yeetui("agents", "list", cwd=project)
        texts = asyncio.run(_parent_announcements())
        assert len(texts) == 1 and "PANE-LONG-ANSWER" in texts[0]
    finally:
        with_suppressed_kill(parent.pid)
        asyncio.run(TmuxServer(server_name(paths.data_dir())).kill_server())


def with_suppressed_kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


async def _wait_for_run(profile: str, status: RunStatus) -> None:
    async with await Store.open(paths.database_path()) as store:
        await until_async(f"{profile} to be {status.value}", lambda: _has_run(store, profile, status), timeout=WAIT)


async def _has_run(store: Store, profile: str, status: RunStatus) -> bool:
    return any(r.profile == profile and r.status == status for r in await store.list_runs())


async def _parent_announcements() -> list[str]:
    async with await Store.open(paths.database_path()) as store:
        [parent] = [r for r in await store.list_runs() if r.profile == "generic"]
        return await _announcements(store, parent.session_id)


CHILDREN = 8
WAVE = 4
"""Two waves of four, two children to each of four parents: a descriptor kept per child, per wave or per parent
shows as more at the end."""


@pytest.mark.timeout(900)
async def test_waves_of_pane_children_leave_no_descriptor_open(runtime: Runtime, fake_env) -> None:
    """Spawn and finish 8 tmux-mode children: the parent's open file descriptors return to where they were
    (pipes to tmux, env files, store reads are all closed on every path)."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "ok"})], when_contains=ORACLE, repeat=True))
    parents = [await runtime.store.create_session(profile="generic") for _ in range(4)]
    await runtime.spawner.panes.problem()  # type: ignore[union-attr]  # the version probe, before the baseline
    await runtime.spawner.panes.hold()  # type: ignore[union-attr]  # its one lock, held while it uses tmux
    baseline = _open_fds()
    spawned = []
    for n in range(CHILDREN):  # in waves (a wave ends before the next starts)
        spawned.append(await runtime.spawner.spawn(SpawnRequest("oracle", f"question {n}", mode="tmux",
                                                                parent_session_id=parents[n % 4].id,
                                                                requested_by="user")))
        if n % WAVE == WAVE - 1:
            await until_async("a wave to end", lambda: _all_final(runtime.store, [h.run_id for h in spawned]), 300)
    await until_async("every child to end", lambda: _all_final(runtime.store, [h.run_id for h in spawned]), 300)
    await until_async("the parent to stop following them",
                      lambda: not runtime.spawner.elsewhere.following(), timeout=WAIT)
    told = [len(await _announcements(runtime.store, p.id)) for p in parents]
    assert told == [CHILDREN // 4] * 4
    # A subprocess's pipes close on the loop's next turns after it ends: waited for, not raced (a descriptor kept
    # for good never comes back below the baseline)
    await until_async("the descriptors back to where they were", lambda: _open_fds() <= baseline, timeout=WAIT)


def _open_fds() -> int:
    return len(os.listdir(f"/proc/{os.getpid()}/fd"))


async def _all_final(store: Store, run_ids: list[str]) -> bool:
    for run_id in run_ids:
        run = await store.get_run(run_id)
        if run is None or not run.status.is_final:
            return False
    return True


async def test_terminal_mode_puts_the_pane_in_front_of_the_user(fake_env, project: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`terminal` mode from inside the user's tmux: the child's window opens as a new window of theirs."""
    base = Path(tempfile.mkdtemp(prefix="yeetui-u-"))
    user = base / "sock"
    monkeypatch.setenv("TMUX", _user_tmux(user))
    fake_env.script(Reply(tool_calls=[ToolCall("grep", {"pattern": "x"})], when_contains=ORACLE),
                    Reply(text="TERMINAL-MODE-TEXT " * 3, when_contains=ORACLE,
                          tool_calls=[ToolCall("complete", {"output": "ok"})]))
    rt = await Runtime.open(cwd=project)
    try:
        parent = await rt.store.create_session(profile="generic")
        handle = await rt.spawner.spawn(SpawnRequest("oracle", "Q", mode="terminal", parent_session_id=parent.id,
                                                     requested_by="user"))
        run = await rt.store.get_run(handle.run_id)
        assert run is not None and run.options["mode"] == "terminal"
        windows = await until_async("the user's tmux to get a second window",
                                    lambda: _user_windows(user, 2), timeout=WAIT)
        assert len(windows) == 2  # type: ignore[arg-type]
        await until_async("the child to end", lambda: _final(rt.store, handle.run_id), timeout=WAIT)
    finally:
        await rt.close()
        _tmux_user(user, "kill-server")
        await TmuxServer(server_name(paths.data_dir())).kill_server()
        shutil.rmtree(base, ignore_errors=True)


def _tmux_user(sock: Path, *args: str) -> str:
    return subprocess.run(["tmux", "-S", str(sock), "-f", "/dev/null", *args], capture_output=True,
                          text=True).stdout


def _user_tmux(sock: Path) -> str:
    """Start the user's own tmux server; the TMUX value a program running inside it sees."""
    _tmux_user(sock, "new-session", "-d", "-s", "u", "sh")
    return f"{sock},{_tmux_user(sock, 'display-message', '-p', '#{pid}').strip()},0"


def _user_windows(sock: Path, count: int) -> list[str] | None:
    out = _tmux_user(sock, "list-windows", "-t", "u", "-F", "#{window_id}").split()
    return out if len(out) >= count else None


async def test_the_window_of_an_ended_run_stays_until_yeetui_next_starts(runtime: Runtime, fake_env,
                                                                         project: Path) -> None:
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "ENDED"})], when_contains=ORACLE))
    handle = await runtime.spawner.spawn(SpawnRequest("oracle", "Q", mode="tmux", requested_by="user"))
    await until_async("the run to end", lambda: _final(runtime.store, handle.run_id), timeout=WAIT)
    server = TmuxServer(server_name(paths.data_dir()))
    pane = (await runtime.store.get_run(handle.run_id)).options["pane"]  # type: ignore[union-attr]
    await until_async("the worker to exit", lambda: _dead(server, pane["pane"]), timeout=WAIT)
    assert pane["window"] in await server.window_names()  # kept, for reading
    again = await Runtime.open(cwd=project)
    await again.close()
    assert pane["window"] not in await server.window_names()


async def _dead(server: TmuxServer, pane_id: str) -> bool:
    return await server.has_pane(pane_id) and not await server.pane_alive(pane_id)


async def test_an_ending_recorded_after_the_final_status_is_still_announced(runtime: Runtime) -> None:
    """Forced interleaving: the pane's run is already final in the store while its worker (here a process
    the test holds) has not recorded the delivery yet. The parent must keep following it until the worker is
    gone, then announce what it recorded, once."""
    parent = await runtime.store.create_session(profile="generic")
    child = await runtime.store.create_session(profile="oracle", parent_id=parent.id)
    worker = await asyncio.create_subprocess_exec("sleep", "300")
    run = await runtime.store.create_run(session_id=child.id, profile="oracle", model="anthropic/x", prompt="q",
                                         options={"parent_session_id": parent.id, "mode": "tmux"})
    await runtime.store.update_run(run.id, status=RunStatus.COMPLETED, pid=worker.pid,
                                   result={"output": "LATE-ANSWER"})
    elsewhere = runtime.spawner.elsewhere
    elsewhere.follow(run.id, parent.id)
    start = elsewhere.rounds
    await until_async("several looks at the final run whose worker still runs",
                      lambda: elsewhere.rounds >= start + 3, timeout=WAIT)
    assert elsewhere.following(run.id)
    runtime.delivery.hold_for.add(parent.id)  # as the worker does: record, leave the announcement
    await runtime.delivery.completion(recipient_session_id=parent.id, run_id=run.id, child_session_id=child.id,
                                      label="oracle#1", status=RunStatus.COMPLETED, output="LATE-ANSWER",
                                      error=None, result=None)
    runtime.delivery.hold_for.discard(parent.id)
    worker.kill()
    await worker.wait()
    texts = await until_async("the announcement", lambda: _announcements(runtime.store, parent.id), timeout=WAIT)
    assert len(texts) == 1 and "LATE-ANSWER" in texts[0]  # type: ignore[arg-type]
    await until_async("the parent to stop following it", lambda: not elsewhere.following(run.id), timeout=WAIT)


@pytest.mark.parametrize("front_end", [FrontEnd(answers_asks=True)])
async def test_a_pane_childs_question_is_asked_where_the_user_is(runtime: Runtime, fake_env) -> None:
    """A front end that shows dialogs (the TUI) gets the pane child's `ask` as its own PermissionRequested; the
    worker's window says it waits; an allow lets the command run, and a deny reaches the model as one."""
    asked: list[PermissionRequested] = []
    runtime.bus.add_listener(lambda e: asked.append(e) if isinstance(e, PermissionRequested) else None)
    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "echo PANE-ALLOWED-RAN"})], when_contains="PANE-ASK-1"),
        Reply(tool_calls=[ToolCall("bash", {"command": "echo second"})], when_contains="PANE-ALLOWED-RAN"),
        Reply(tool_calls=[ToolCall("complete", {"output": "done asking"})], when_contains="denied"),
    )
    handle = await runtime.spawner.spawn(SpawnRequest("generic", "PANE-ASK-1: run it", requested_by="user",
                                                      mode="tmux"))
    await until_async("the pane child's question", lambda: asked, timeout=WAIT)
    assert (asked[0].tool, asked[0].subject, asked[0].run_id) == ("bash", "echo PANE-ALLOWED-RAN", handle.run_id)
    run = await runtime.store.get_run(handle.run_id)
    assert run is not None and run.status == RunStatus.WAITING_PERMISSION
    server = TmuxServer(run.options["pane"]["server"])
    await until_async("the window to say it waits",
                      lambda: _screen_has(server, run.options["pane"]["pane"], "waiting for the answer in yeetui"),
                      timeout=WAIT)
    asked[0].reply.set_result("allow_once")
    await until_async("the second question", lambda: len(asked) == 2, timeout=WAIT)
    asked[1].reply.set_result("deny")
    ended = await until_async("the run to end", lambda: _final(runtime.store, handle.run_id), timeout=WAIT)
    assert ended.status == RunStatus.COMPLETED, ended.error  # type: ignore[union-attr]
    texts = [r.text for r in fake_env.requests]
    assert any("PANE-ALLOWED-RAN" in t for t in texts)  # the allowed command ran, its output went back
    assert "denied bash" in texts[-1]


async def test_stopping_a_parent_stops_its_pane_children(runtime: Runtime, fake_env) -> None:
    """As for in-process children: cancelling a session's subtree reaches the children in panes too."""
    fake_env.script(Reply(tool_calls=[ToolCall("bash", {"command": "sleep 300"})], when_contains="PANE-SUBTREE"))
    parent = await runtime.store.create_session(profile="generic")
    handle = await runtime.spawner.spawn(SpawnRequest("generic", "PANE-SUBTREE: run it", requested_by="user",
                                                      mode="tmux", parent_session_id=parent.id))
    pgid = await until_async("the command to start", lambda: _tool_group(runtime.store, handle.run_id), timeout=WAIT)
    await runtime.spawner.cancel_children(parent.id)
    ended = await until_async("the child to end", lambda: _final(runtime.store, handle.run_id), timeout=WAIT)
    assert ended.status in (RunStatus.CANCELLED, RunStatus.INTERRUPTED)  # type: ignore[attr-defined]
    await until_async("its command to be gone", lambda: gone(pgid), timeout=WAIT)  # type: ignore[arg-type]


def test_a_headless_runs_pane_child_refuses_unattended_and_the_summary_counts_it(fake_env, project: Path) -> None:
    """`yeetui run` without --yes: a child in a tmux pane wants to run a command (an `ask`). Nobody can be asked,
    so its worker refuses — telling the model it was refused unasked, and by which rule, never that the user
    denied it — and the run's summary counts that refusal with its own."""
    fake_env.script(
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "generic", "prompt": "PANE-WRITE: write it",
                                                      "mode": "tmux"})], when_contains="PARENT-H"),
        Reply(tool_calls=[ToolCall("bash", {"command": "touch x.txt"})], when_contains="PANE-WRITE"),
        Reply(tool_calls=[ToolCall("complete", {"output": "could not write"})], when_contains="PANE-WRITE"),
        Reply(tool_calls=[ToolCall("complete", {"output": "the child could not write"})], when_contains="PARENT-H"),
    )
    try:
        done = run_yeetui("run", "PARENT-H: have a child write x.txt", cwd=project, timeout=120)
        assert done.returncode == 0, done.stderr
        [refusal] = [r for b in (q.body for q in fake_env.requests if "PANE-WRITE" in q.text)
                     for r in tool_results(b) if "x.txt" in result_text(r)]
        said = result_text(refusal)
        assert said.startswith("Refused without asking: bash") and "nobody to ask" in said, said
        assert "the permission rule for 'bash' says ask" in said and "The user denied" not in said
        assert "refused 1 tool call that needs your permission" in done.stderr, done.stderr
        assert "bash 'touch x.txt' (generic#" in done.stderr
    finally:
        asyncio.run(TmuxServer(server_name(paths.data_dir())).kill_server())


async def test_closing_a_childs_pane_cancels_it_saying_so(runtime: Runtime, fake_env) -> None:
    fake_env.script(Reply(text="pondering " * 2000, chunk_size=30, chunk_delay=1.0, when_contains="PANE-CLOSED"))
    parent = await runtime.store.create_session(profile="generic")
    handle = await runtime.spawner.spawn(SpawnRequest("oracle", "PANE-CLOSED: think", mode="tmux",
                                                      parent_session_id=parent.id, requested_by="user"))
    await until_async("the child to run", lambda: _has_run(runtime.store, "oracle", RunStatus.RUNNING), timeout=WAIT)
    run = await runtime.store.get_run(handle.run_id)
    await TmuxServer(run.options["pane"]["server"]).kill_window(run.options["pane"]["window"])  # type: ignore[union-attr]
    ended = await until_async("the run to end", lambda: _final(runtime.store, handle.run_id), timeout=WAIT)
    assert ended.status == RunStatus.CANCELLED  # type: ignore[attr-defined]
    assert ended.error == "cancelled: its tmux pane was closed"  # type: ignore[attr-defined]
    texts = await until_async("the announcement", lambda: _announcements(runtime.store, parent.id), timeout=WAIT)
    assert "its tmux pane was closed" in texts[0]  # type: ignore[index]


async def test_a_panes_window_shows_the_childs_answer(runtime: Runtime, fake_env) -> None:
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "PANE-FINAL-ANSWER: it is the cache."})],
                          when_contains=ORACLE))
    handle = await runtime.spawner.spawn(SpawnRequest("oracle", "Q", mode="tmux", requested_by="user"))
    await until_async("the run to end", lambda: _final(runtime.store, handle.run_id), timeout=WAIT)
    pane = (await runtime.store.get_run(handle.run_id)).options["pane"]  # type: ignore[union-attr]
    screen = await until_async("the window's last line",
                               lambda: _screen_has(TmuxServer(pane["server"]), pane["pane"], "oracle#1 completed"),
                               timeout=WAIT)
    assert "oracle#1's answer:\nPANE-FINAL-ANSWER: it is the cache." in screen  # type: ignore[operator]


async def test_a_pane_child_is_halted_from_its_parents_process_at_the_parents_budget(runtime: Runtime,
                                                                                   fake_env) -> None:
    """The tree's spend is counted across processes (the pane's worker records each request in the store); at
    the parent's token limit, the parent's process halts the pane child through the store (`halt`), and both
    end `budget_exhausted` — the parent's result says what the child produced."""
    from yeetui.runs.budget import Budget

    fake_env.script(
        Reply(tool_calls=[_spawn("LOOPING-PANE read it", blocking=True)], when_contains="PARENT-B",
              usage={"input_tokens": 100, "output_tokens": 5}),
        Reply(text="Reading on.", when_contains=ORACLE, repeat=True, usage={"input_tokens": 1000, "output_tokens": 5},
              tool_calls=[ToolCall("list_dir", {"path": "."})]))
    result = await asyncio.wait_for(runtime.launcher.run_prompt("PARENT-B: loop in a pane",
                                                                budget=Budget(max_tokens=4000)), WAIT)
    assert result.status == RunStatus.BUDGET_EXHAUSTED, (result.status, result.error)
    [child] = [r for r in await runtime.store.list_runs() if r.profile == "oracle"]
    ended = await until_async("the pane child to end", lambda: _final(runtime.store, child.id), timeout=WAIT)
    assert ended.status == RunStatus.BUDGET_EXHAUSTED and ended.pid != os.getpid(), (ended.status, ended.error)  # type: ignore[union-attr]
    assert "halted" in (ended.error or "")  # type: ignore[union-attr]
    assert child.label in result.output and "Reading on." in result.output
    # the child's requests are counted (it records each in the store) and it asked no more once halted
    assert result.result["budget"]["spent"]["tokens"] >= 4000 and result.result["budget"]["limit"] == "max_tokens"
    assert len([r for r in fake_env.requests if ORACLE in r.text]) == ended.turns  # type: ignore[union-attr]
