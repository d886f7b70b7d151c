"""The warm start (`tests/integration/zygote.py`) behaves as the real binary does: the same output, exit status,
working directory and environment, one process per command, and a timeout that kills."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.fakellm.server import FakeLLM
from tests.integration.helpers import Completed, run_yeetui, start_yeetui, yeetui_env
from tests.integration.zygote import ZYGOTE
from tests.processes import gone
from yeetui.cli.exit_codes import EXIT_CANCELLED


@pytest.mark.parametrize("args", [("--version",), ("no-such-command",), ("agents", "list"), ("profiles", "list"),
                                  ("agents", "show", "nope")])
def test_a_forked_command_answers_as_a_fresh_one(tmp_path: Path, args: tuple[str, ...]) -> None:
    warm = run_yeetui(*args, cwd=tmp_path)
    fresh = run_yeetui(*args, cwd=tmp_path, fresh=True)
    assert (warm.returncode, warm.stdout, warm.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


def test_each_command_gets_its_own_directory_and_environment(tmp_path: Path) -> None:
    """The config directory comes from the environment and the project from the working directory: two
    commands in a row with different ones must not see each other's."""
    for name in ("first", "second"):
        project = tmp_path / name
        config = tmp_path / f"{name}-config"
        (config / "agents").mkdir(parents=True)
        (config / "agents" / f"{name}-only.md").write_text(
            f"---\nname: {name}-only\ndescription: only in the {name} config\n---\nYou help.\n")
        project.mkdir()
        listed = run_yeetui("profiles", "list", cwd=project, YEETUI_CONFIG_DIR=str(config))
        assert listed.returncode == 0, listed.stderr
        assert f"{name}-only" in listed.stdout
        other = "second" if name == "first" else "first"
        assert f"{other}-only" not in listed.stdout


def test_a_command_past_its_timeout_is_killed(tmp_path: Path, fake_env: FakeLLM) -> None:
    """As with `subprocess.run`: TimeoutExpired, once the process has been killed and reaped."""
    fake_env.script(Reply(text="never sent", after_requests=10**6))
    run_yeetui("--version", cwd=tmp_path)  # the server is up
    before = set(_children_of_server())
    with pytest.raises(subprocess.TimeoutExpired):
        run_yeetui("run", "wait for a reply that never comes", cwd=tmp_path, timeout=3)
    assert set(_children_of_server()) <= before


def test_a_command_holds_none_of_the_servers_sockets(tmp_path: Path, fake_env: FakeLLM) -> None:
    """While a command runs it holds stdin, stdout and stderr from the test, and none of the server's sockets
    (its listener, other commands' connections)."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "done"})], after_requests=2))
    run_yeetui("--version", cwd=tmp_path)  # the server is up
    before = set(_children_of_server())
    finished: list[Completed] = []
    waiting = threading.Thread(target=lambda: finished.append(run_yeetui("run", "hold on", cwd=tmp_path)))
    waiting.start()
    fake_env.wait_for_requests(1, timeout=60)  # the command is waiting for its reply
    [child] = set(_children_of_server()) - before
    server_sockets = _sockets(_server_pid())
    assert server_sockets, "the server listens on a socket"
    assert not server_sockets & _sockets(child)
    fake_env.release()
    waiting.join(timeout=60)
    assert [done.returncode for done in finished] == [0], finished


def _children_of_server() -> list[int]:
    pid = _server_pid()
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _server_pid() -> int:
    pid = ZYGOTE.server_pid
    assert pid is not None, "the warm server is not running"
    return pid


def _sockets(pid: int) -> set[str]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:"):
            found.add(target)
    return found


@pytest.mark.parametrize("args", [("--version",), ("no-such-command",)])
def test_the_launcher_answers_as_a_fresh_command(tmp_path: Path, args: tuple[str, ...]) -> None:
    """`ZYGOTE.argv` is for SDKs that spawn a program themselves: its output and status are the command's."""
    launched = subprocess.run(ZYGOTE.argv(*args), cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, env=yeetui_env())
    fresh = run_yeetui(*args, cwd=tmp_path, fresh=True)
    assert (launched.returncode, launched.stdout, launched.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


def test_the_launcher_passes_sigterm_on_and_ends_when_the_command_does(tmp_path: Path, fake_env: FakeLLM) -> None:
    fake_env.script(Reply(text="never sent", after_requests=10**6))
    argv = ZYGOTE.argv("run", "hold on")  # starts the server if this worker has not yet
    before = set(_children_of_server())
    launcher = subprocess.Popen(argv, cwd=tmp_path, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=yeetui_env())
    fake_env.wait_for_requests(1, timeout=60)
    [command] = set(_children_of_server()) - before
    launcher.terminate()
    launcher.communicate(timeout=60)
    assert launcher.returncode != 0
    assert gone(command)


def test_a_started_command_is_the_process_its_pid_names(tmp_path: Path, fake_env: FakeLLM) -> None:
    """`start_yeetui` (`Zygote.start`), for tests that signal or kill yeetui while it runs: `pid` is the forked
    command itself, its pipes bring what it writes, and a signal sent to it ends it as it ends a fresh one."""
    fake_env.script(Reply(text="never sent", after_requests=10**6))
    run_yeetui("--version", cwd=tmp_path)  # the server is up
    before = set(_children_of_server())
    proc = start_yeetui("run", "--json", "hold on", cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True)
    try:
        fake_env.wait_for_requests(1, timeout=60)
        assert set(_children_of_server()) - before == {proc.pid}
        assert proc.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == EXIT_CANCELLED, err
    assert proc.stdout is not None and proc.stdout.closed  # as Popen.communicate leaves them
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["status"] for e in events if e["type"] == "run_status"] == ["running", "cancelled"], out
    assert gone(proc.pid)
