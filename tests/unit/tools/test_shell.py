"""bash: real subprocesses — exit codes, process-group kills, env scrubbing, output cap, read-only sandbox."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest

from tests.processes import gone
from yeetui.errors import ToolError
from yeetui.system import sandbox
from yeetui.tools.base import ToolContext, ToolOutput, ToolSettings
from yeetui.tools.shell import BashTool, scrub_env
from yeetui.workspace import WorkspaceBinding


def live_processes(marker: str) -> list[int]:
    """PIDs of non-zombie processes whose command line contains `marker`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and state != "Z" and "bash -c" not in cmdline:
            pids.append(int(entry.name))
    return pids


def sleeper() -> str:
    """A unique `sleep` duration so the test can find exactly its own processes."""
    return f"1000.{uuid.uuid4().int % 10**6:06d}"


async def bash(command: str, root: Path, *, limit: float | None = None, settings: ToolSettings | None = None,
               env: dict[str, str] | None = None, **binding: object) -> ToolOutput:
    """Run the bash tool once; `limit` is its `timeout` argument. A writable binding accepts whatever sandbox
    works here (the Landlock fallback too: these tests are about bash itself, not the choice of sandbox)."""
    binding.setdefault("bash_sandbox", "unshielded")
    tool = BashTool()
    ctx = ToolContext(binding=WorkspaceBinding(cwd=root, **binding),  # type: ignore[arg-type]
                      settings=settings or ToolSettings(), env=env)
    return await tool.run(tool.Args(command=command, timeout=limit), ctx)


async def test_runs_in_cwd_merges_stderr_and_reports_exit_code(tmp_path: Path) -> None:
    out = await bash("pwd; echo out; echo err >&2; exit 3", tmp_path)
    assert out.content == f"{tmp_path}\nout\nerr\n[exit code 3]"
    assert out.data == {"sandbox": sandbox.probe_sandbox(), "exit_code": 3, "timed_out": False,
                        "output": f"{tmp_path}\nout\nerr"}
    assert not out.is_error
    assert (await bash("true", tmp_path)).content == "[exit code 0]"


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = sleeper()
    out = await bash(f"sleep {marker} & sleep {marker}; wait", tmp_path, limit=1)
    assert out.is_error and "timed out after 1 s" in out.content
    assert out.data is not None and (out.data["exit_code"], out.data["timed_out"]) == (None, True)
    assert live_processes(marker) == []


async def test_cancellation_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = sleeper()
    task = asyncio.create_task(bash(f"sleep {marker} & sleep {marker}; wait", tmp_path))
    for _ in range(100):
        await asyncio.sleep(0.05)
        if len(live_processes(marker)) == 2:
            break
    assert len(live_processes(marker)) == 2  # both sleeps really started
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert live_processes(marker) == []


async def test_background_jobs_do_not_outlive_the_command(tmp_path: Path) -> None:
    marker = sleeper()
    loop = asyncio.get_running_loop()
    started = loop.time()
    out = await bash(f"sleep {marker} & echo started", tmp_path, limit=30)
    assert out.content == "started\n[exit code 0]" and loop.time() - started < 10
    assert live_processes(marker) == []


async def test_timeout_is_capped_by_the_maximum(tmp_path: Path) -> None:
    settings = ToolSettings(bash_timeout=100, bash_max_timeout=1)
    loop = asyncio.get_running_loop()
    started = loop.time()
    out = await bash("sleep 30", tmp_path, limit=500, settings=settings)
    assert out.data is not None and out.data["timed_out"] and loop.time() - started < 10


async def test_secret_variables_are_invisible_and_values_redacted(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_API_KEY", "sk-live-0123456789abcdef")
    monkeypatch.setenv("db_password", "hunter2hunter2")
    monkeypatch.setenv("MY_VISIBLE", "yes")
    (tmp_path / "leak.txt").write_text("key=sk-live-0123456789abcdef\n")
    command = 'echo "[$MY_API_KEY][$db_password][$MY_VISIBLE]"; env | grep -ci -e api_key -e password'
    out = await bash(command + "; cat leak.txt", tmp_path)
    assert out.content.splitlines() == ["[][][yes]", "0", "key=[REDACTED]", "[exit code 0]"]


async def test_explicit_env_is_scrubbed_too(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "GITHUB_TOKEN": "ghp_x", "Client_Secret": "s", "PLAIN": "p"}
    out = await bash('echo "$GITHUB_TOKEN|$Client_Secret|$PLAIN"', tmp_path, env=env)
    assert out.content == "||p\n[exit code 0]"
    assert scrub_env(env) == {"PATH": os.environ["PATH"], "PLAIN": "p"}


async def test_output_is_capped_with_a_note(tmp_path: Path) -> None:
    settings = ToolSettings(output_cap=1000)
    out = await bash("python3 -c \"print('h' + 'x' * 4998 + 't')\"", tmp_path, settings=settings)
    assert "[output truncated: 4001 characters omitted]" in out.content
    assert out.content.startswith("hxxx") and out.content.endswith("xxt\n[exit code 0]")
    assert len(out.content) < 1200


async def test_read_only_bash_with_sandbox_off_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="read-only and its bash sandbox is off"):
        await bash("ls", tmp_path, allow_writes=False, bash_sandbox="off")


@pytest.mark.parametrize("mode", ["auto", "required"])
async def test_read_only_bash_without_a_sandbox_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           mode: str) -> None:
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: None)  # simulate a machine with neither
    with pytest.raises(ToolError, match="no read-only OS sandbox"):
        await bash("touch x", tmp_path, allow_writes=False, bash_sandbox=mode)
    assert not (tmp_path / "x").exists()


def available_sandboxes() -> list[str]:
    return [name for name, ok in (("bwrap", sandbox.probe_bwrap()), ("landlock", sandbox.probe_landlock()))
            if ok]


@pytest.mark.parametrize("mechanism", ["bwrap", "landlock"])
async def test_read_only_bash_runs_sandboxed_and_cannot_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              mechanism: str) -> None:
    if mechanism not in available_sandboxes():
        pytest.skip(f"{mechanism} does not work on this machine")
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: mechanism)
    (tmp_path / "data.txt").write_text("readable\n")
    out = await bash('cat data.txt; touch x; echo "touch=$?"; echo tmp > "${TMPDIR:-/tmp}/t" && echo tmp-ok',
                     tmp_path, allow_writes=False)
    assert out.data is not None and (out.data["sandbox"], out.data["exit_code"]) == (mechanism, 0)
    lines = out.content.splitlines()
    assert lines[0] == "readable" and "touch=1" in lines and "tmp-ok" in lines
    assert not (tmp_path / "x").exists()


async def test_read_only_bash_timeout_still_kills_everything(tmp_path: Path) -> None:
    if sandbox.probe_sandbox() is None:
        pytest.skip("no read-only sandbox on this machine")
    marker = sleeper()
    out = await bash(f"sleep {marker} & sleep {marker}; wait", tmp_path, limit=1, allow_writes=False)
    assert out.data is not None and out.data["timed_out"] and out.data["sandbox"] == sandbox.probe_sandbox()
    assert live_processes(marker) == []


async def test_cancel_while_the_output_pipe_is_set_up_still_kills_the_command(tmp_path: Path, monkeypatch) -> None:
    """The command runs from the moment it is started; a cancel that lands before the tool has wired up its
    output (a busy event loop makes that window wide) must still end the command's process group."""
    loop = asyncio.get_running_loop()
    wiring = asyncio.Event()

    async def stalled_connect(*args, **kwargs):
        wiring.set()
        await asyncio.Event().wait()  # held here until the cancel arrives

    monkeypatch.setattr(loop, "connect_read_pipe", stalled_connect)
    pidfile = tmp_path / "sleeper.pid"
    task = asyncio.create_task(BashTool._execute(["bash", "-c", f"sleep 60 & echo $! > {pidfile}; wait"], tmp_path,
                                                 scrub_env(dict(os.environ)), 30.0, 10_000))
    await wiring.wait()
    assert await _polled(lambda: pidfile.exists() and bool(pidfile.read_text().strip())), "the command never ran"
    sleeper_pid = int(pidfile.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Killed at once; reaping the orphan is up to init, which a busy machine may take a moment over.
    assert await _polled(lambda: gone(sleeper_pid)), f"`sleep 60` (pid {sleeper_pid}) outlived the cancel"


async def _polled(condition, seconds: float = 30.0) -> bool:
    """Whether `condition()` (state outside this process: a file, another process) holds within `seconds`."""
    for _ in range(int(seconds / 0.01)):
        if condition():
            return True
        await asyncio.sleep(0.01)
    return condition()
