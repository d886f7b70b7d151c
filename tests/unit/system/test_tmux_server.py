"""yeetui's private tmux server under concurrency (real tmux, a fresh server per test): windows opened at the
same moment — by several tasks of one process, or by two processes — all open, in one session, with names
that do not clash; none fails with `duplicate session`."""

from __future__ import annotations

import asyncio
import re
import sys
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.tmux import tmux_path
from tests.processes import gone
from tests.waiting import until_async
from yeetui.system.tmux import SESSION, TmuxServer, server_name

pytestmark = pytest.mark.skipif(tmux_path() is None, reason="tmux is not installed")

SLEEPER = ["sleep", "300"]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[TmuxServer]:
    tmux = TmuxServer(server_name(tmp_path))
    try:
        yield tmux
    finally:
        await tmux.kill_server()


async def _panes(tmux: TmuxServer) -> list[str]:
    _, out, _ = await tmux._run("list-panes", "-s", "-t", SESSION, "-F", "#{pane_id}")
    return out.split()


async def test_windows_opened_at_once_by_several_tasks_all_open(server: TmuxServer, tmp_path: Path) -> None:
    panes = await asyncio.gather(*(server.open_window(f"oracle#{n}", SLEEPER, cwd=tmp_path) for n in range(6)))
    assert len({p.pane_id for p in panes}) == 6
    assert [await server.pane_alive(p.pane_id) for p in panes] == [True] * 6
    assert await server.window_names() == {f"oracle-{n}" for n in range(6)}
    assert sorted(await _panes(server)) == sorted(p.pane_id for p in panes)  # one session holds them all


async def test_one_label_opened_at_once_gets_distinct_window_names(server: TmuxServer, tmp_path: Path) -> None:
    panes = await asyncio.gather(*(server.open_window("watcher", SLEEPER, cwd=tmp_path) for _ in range(3)))
    assert sorted(p.window for p in panes) == ["watcher", "watcher-2", "watcher-3"]


OPENER = """
import asyncio, sys
from pathlib import Path
from yeetui.system.tmux import TmuxServer

async def main(name, tag, go):
    while not Path(go).exists():  # start together with the other process
        await asyncio.sleep(0.001)
    server = TmuxServer(name)
    panes = await asyncio.gather(*(server.open_window(f"{tag}-{n}", ["sleep", "300"], cwd=Path(go).parent)
                                   for n in range(3)))
    print(" ".join(p.pane_id for p in panes))

asyncio.run(main(*sys.argv[1:]))
"""


async def test_two_processes_opening_windows_at_once_all_succeed(server: TmuxServer, tmp_path: Path) -> None:
    """The session one process makes while the other is making it too is no failure for the other."""
    go = tmp_path / "go"
    procs = [await asyncio.create_subprocess_exec(sys.executable, "-c", OPENER, server.name, tag, str(go),
                                                  stdout=PIPE, stderr=PIPE) for tag in ("a", "b")]
    go.touch()
    outs = await asyncio.wait_for(asyncio.gather(*(p.communicate() for p in procs)), 60)
    assert [p.returncode for p in procs] == [0, 0], [err.decode() for _, err in outs]
    opened = [pane for out, _ in outs for pane in out.decode().split()]
    assert len(set(opened)) == 6
    assert sorted(await _panes(server)) == sorted(opened)
    assert await server.window_names() == {f"{t}-{n}" for t in "ab" for n in range(3)}


async def test_a_window_opens_after_the_sessions_last_window_was_closed(server: TmuxServer, tmp_path: Path) -> None:
    first = await server.open_window("one", SLEEPER, cwd=tmp_path)
    await server.kill_window(first.window)  # the session ends with its last window; the server stays
    second = await server.open_window("two", SLEEPER, cwd=tmp_path)
    assert await server.pane_alive(second.pane_id)


async def test_the_server_exits_once_its_last_window_is_closed(server: TmuxServer, tmp_path: Path) -> None:
    """yeetui's private server does not outlive its windows: closing the last one (here the dead window of an
    ended command, as the next yeetui start does) ends the server process."""
    pane = await server.open_window("oracle#1", ["true"], cwd=tmp_path)
    _, out, _ = await server._run("display-message", "-p", "-t", pane.pane_id, "#{pid}")
    server_pid = int(out.strip())
    for _ in range(500):
        if not await server.pane_alive(pane.pane_id):
            break
        await asyncio.sleep(0.01)
    assert await server.close_dead_windows() == 1
    for _ in range(500):  # it exits as its loop next looks: a command sent at once may still be answered
        if gone(server_pid):
            break
        await asyncio.sleep(0.01)
    assert gone(server_pid)
    rc, _, err = await server._run("list-sessions")
    assert rc != 0 and re.search("no server running|error connecting", err)


async def _dead_count(tmux: TmuxServer, count: int) -> bool:
    _, out, _ = await tmux._run("list-panes", "-s", "-t", SESSION, "-F", "#{pane_dead}")
    return out.split().count("1") == count


async def test_closing_dead_windows_keeps_those_that_ended_last(server: TmuxServer, tmp_path: Path) -> None:
    live = await server.open_window("live", SLEEPER, cwd=tmp_path)
    ended = []
    for n in range(4):  # one after another: each ends before the next opens
        ended.append(await server.open_window(f"ended#{n}", ["true"], cwd=tmp_path))

        async def dead_now(n: int = n) -> bool:
            return await _dead_count(server, n + 1)

        await until_async("the command to end", dead_now)
    assert await server.close_dead_windows(keep=2) == 2
    assert await server.window_names() == {"live", ended[2].window, ended[3].window}
    assert await server.close_dead_windows(keep=2) == 0
    assert await server.pane_alive(live.pane_id)


async def test_winding_down_closes_ended_windows_and_the_server_goes_with_the_last_command(
        server: TmuxServer, tmp_path: Path) -> None:
    """Nobody reads the windows any more: the ended ones close at once, the live one runs on and closes as its
    command ends, and the server exits with it. A window opened afterwards stays for reading again."""
    release = tmp_path / "release"
    live = await server.open_window("live", ["sh", "-c", f"until [ -e {release} ]; do sleep 0.02; done"],
                                    cwd=tmp_path)
    await server.open_window("ended", ["true"], cwd=tmp_path)
    await until_async("the command to end", lambda: _dead_count(server, 1))
    _, out, _ = await server._run("display-message", "-p", "-t", live.pane_id, "#{pid}")
    server_pid = int(out.strip())
    await server.wind_down()
    assert await server.window_names() == {"live"} and await server.pane_alive(live.pane_id)
    later = await server.open_window("later", ["true"], cwd=tmp_path)
    await until_async("the later command to end", lambda: _dead_count(server, 1))
    assert await server.has_pane(later.pane_id)  # kept: remain-on-exit is still on for new windows
    await server.close_dead_windows()
    release.touch()
    async def server_gone() -> bool:
        return gone(server_pid)

    await until_async("the server to exit with its last window", server_gone)


async def test_a_window_opens_when_the_first_try_reached_a_server_that_was_exiting(tmp_path: Path) -> None:
    """The interleaving forced: the session's last window closed a moment ago and its server was still exiting
    when `new-session` reached it (tmux says `server exited unexpectedly`); the next try starts a new server."""
    real = tmux_path()
    marker = tmp_path / "failed-once"
    wrapper = tmp_path / "tmux"
    wrapper.write_text(f"""#!/bin/sh
case "$*" in
  *new-session*) if [ ! -e {marker} ]; then : > {marker}; echo "server exited unexpectedly" >&2; exit 1; fi ;;
esac
exec {real} "$@"
""")
    wrapper.chmod(0o755)
    tmux = TmuxServer(server_name(tmp_path), executable=str(wrapper))
    try:
        pane = await tmux.open_window("oracle#1", SLEEPER, cwd=tmp_path)
        assert marker.exists() and await tmux.pane_alive(pane.pane_id)
    finally:
        await tmux.kill_server()
