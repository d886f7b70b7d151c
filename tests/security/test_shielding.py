"""Issue 23, items 3, 4 and 6: what agents' bash can no longer reach.

- yeetui's config dir (with `api_key`) and data dir (every project's transcripts) are hidden from every
  agent's bash under bubblewrap (an empty tmpfs over them); a builder's worktree inside the data dir stays
  reachable.
- Under bubblewrap the seccomp filter of the Landlock path is loaded too: a read-only oracle's bash cannot
  connect to a Unix socket that lives outside /tmp and /run (Docker's, ssh ControlMaster's, gpg-agent's live
  in $HOME).
- Under the Landlock fallback (accepted by name), a writable agent's chmod changes nothing outside its workspace
  — by path, through a symlink, from another directory, or on a descriptor — and never sets a setuid, setgid or
  sticky bit (as root it made a system binary setuid), while `chmod +x` in the workspace works.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import result_text, tool_results
from yeetui import paths
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runtime import Runtime
from yeetui.system import sandbox

MECHANISMS = [m for m, works in (("bwrap", sandbox.probe_bwrap), ("landlock", sandbox.probe_landlock)) if works()]
BWRAP = pytest.mark.skipif(not sandbox.probe_bwrap(), reason="bubblewrap does not work on this machine")


@pytest.fixture
def runtime_env(project_dir: Path) -> dict[str, str]:
    """yeetui's dirs where bash could otherwise see them (bubblewrap's private /tmp would hide the tests' usual
    ones under /tmp): beside the project's files, as `~/.config/yeetui` is beside a project in $HOME."""
    (project_dir / "README").write_text("PROJECT-README\n")
    home = project_dir / "home"
    (home / "config").mkdir(parents=True)
    (home / "data").mkdir(parents=True)
    return {"YEETUI_CONFIG_DIR": str(home / "config"), "YEETUI_DATA_DIR": str(home / "data")}


@pytest.mark.skipif(not MECHANISMS, reason="no OS sandbox works on this machine")
@pytest.mark.parametrize("mechanism", MECHANISMS or ["none"])
@pytest.mark.parametrize("profile", ["generic", "oracle"])
async def test_yeetuis_config_and_data_dirs_are_hidden_from_bash(runtime: Runtime, scripted, profile: str,
                                                                 mechanism: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """bubblewrap puts an empty tmpfs over them; Landlock allows reading everything around them."""
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: mechanism)
    monkeypatch.setattr(runtime.launcher.settings.tools, "bash_sandbox", "unshielded")  # (Landlock, `generic`)
    config = paths.config_dir() / "config.yaml"
    config.write_text("providers:\n  anthropic:\n    api_key: CONFIG-KEY-MARKER\n")
    (paths.data_dir() / "transcript.txt").write_text("OTHER-PROJECT-TRANSCRIPT\n")
    answer_permissions_headless(runtime.bus, approve=True)
    command = (f"cat {config}; cat {paths.data_dir()}/transcript.txt; sqlite3 {paths.database_path()} .dump; "
               f"grep -r MARKER {paths.config_dir()}; cp {config} copied.yaml; cat copied.yaml; "
               "cat README 2>/dev/null; echo LOOKED")
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": command})], when_contains="GO"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    await runtime.launcher.run_prompt("GO", profile_name=profile)
    [said] = [result_text(block) for block in tool_results(scripted.requests[-1].body)]
    assert "LOOKED" in said and "PROJECT-README" in said  # the project around them stays readable
    assert "CONFIG-KEY-MARKER" not in said and "api_key" not in said, said
    assert "OTHER-PROJECT-TRANSCRIPT" not in said and "CREATE TABLE" not in said, said


@BWRAP
async def test_an_oracle_cannot_reach_a_unix_socket_outside_tmp_and_run(
        runtime: Runtime, scripted, project_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The socket lives in the project (visible, read-only): only the seccomp filter stops the connect."""
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: "bwrap")
    answer_permissions_headless(runtime.bus, approve=True)
    path = project_dir / "agent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    server.setblocking(False)
    probe = (f"python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{path}')\" "
             "2>/dev/null && echo SOCKET-REACHED || echo SOCKET-BLOCKED")
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": probe})], when_contains="GO"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    try:
        await runtime.launcher.run_prompt("GO", profile_name="oracle")
        assert "SOCKET-BLOCKED" in scripted.requests[-1].text
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()


@pytest.mark.skipif(not (sandbox.probe_landlock() and sandbox.seccomp_available()),
                    reason="the Landlock fallback with its seccomp layer does not work here")
async def test_under_landlock_a_writable_agent_chmods_nothing_outside_its_workspace(
        runtime: Runtime, scripted, project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: "landlock")
    monkeypatch.setattr(runtime.launcher.settings.tools, "bash_sandbox", "unshielded")
    answer_permissions_headless(runtime.bus, approve=True)
    system_file = tmp_path / "system-binary"  # outside the workspace, owned by whoever runs the tests
    system_file.write_text("#!/bin/sh\n")
    system_file.chmod(0o755)
    (project_dir / "build.sh").write_text("#!/bin/sh\n")
    (project_dir / "out-link").symlink_to(system_file)
    command = "; ".join([
        f"chmod u+s {system_file}", f"chmod g+s {system_file}", f"chmod +t {system_file}", f"chmod 777 {system_file}",
        f"chmod 600 {system_file}", "chmod 777 out-link", f"cd {tmp_path} && chmod 777 system-binary; cd {project_dir}",
        f"python3 -c \"import os; os.chmod('{system_file}', 0o4755)\"",
        f"python3 -c \"import os; os.fchmod(os.open('{system_file}', os.O_RDONLY), 0o777)\"",
        "chmod 4755 build.sh", "chmod +x build.sh && echo CHMOD-X-OK",
    ])
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": command})], when_contains="GO"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    await runtime.launcher.run_prompt("GO")
    assert "CHMOD-X-OK" in scripted.requests[-1].text  # builds keep chmod +x
    assert stat.S_IMODE(system_file.stat().st_mode) == 0o755
    assert stat.S_IMODE((project_dir / "build.sh").stat().st_mode) & 0o7000 == 0
    assert os.access(project_dir / "build.sh", os.X_OK)
