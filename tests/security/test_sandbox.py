"""Class 6: the sandbox itself does not leak. A read-only agent's bash, run as root (as in containers and CI),
cannot remount the read-only binds and write the project; it holds no capability at all (as root, one would read
yeetui's own environment through /proc: see test_keys). No
agent's bash can send UDP, reach a Unix socket, change an owner or an extended attribute; a read-only one cannot
change a mode or a time either. Run under each sandbox this machine has (bubblewrap, Landlock + seccomp)."""

from __future__ import annotations

import os
import shlex
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runtime import Runtime
from yeetui.system import sandbox

MECHANISMS = [m for m, works in (("bwrap", sandbox.probe_bwrap), ("landlock", sandbox.probe_landlock)) if works()]


@pytest.mark.skipif(not MECHANISMS, reason="no read-only sandbox (bubblewrap or Landlock) works on this machine")
@pytest.mark.parametrize("mechanism", MECHANISMS or ["none"])
async def test_a_read_only_agent_cannot_remount_its_way_to_a_write(runtime: Runtime, scripted, project_dir: Path,
                                                                  mechanism: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: mechanism)
    answer_permissions_headless(runtime.bus, approve=True)  # the user said yes: only the sandbox stands
    attack = (f"mount -o remount,bind,rw {project_dir} ; mount -o remount,rw / ; mount -t tmpfs none {project_dir} ; "
              f"echo x > {project_dir}/PWNED ; grep CapEff /proc/self/status")
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": attack})], when_contains="LOOK"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    result = await runtime.launcher.run_prompt("LOOK", profile_name="oracle")
    assert result.status.value == "completed"
    assert not (project_dir / "PWNED").exists()
    said = scripted.requests[-1].text
    assert "CapEff:\\t0000000000000000" in said  # the command ran, inside the sandbox, with no capability


_LEAKS = r"""
import ctypes, os, socket, sys
project, outside, udp_port, unix_path = sys.argv[1:5]
def attempt(name, action):
    try:
        action()
        print(name, "DONE")
    except OSError as exc:
        print(name, "REFUSED", exc.errno)
def udp():
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"LEAK", ("127.0.0.1", int(udp_port)))
def unix():
    socket.socket(socket.AF_UNIX).connect(unix_path)
def fchmodat2():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(452, -100, project.encode(), 0o777, 0) != 0:
        raise OSError(ctypes.get_errno(), "fchmodat2")
attempt("udp", udp)
attempt("unix", unix)
attempt("chown", lambda: os.chown(outside, 4242, 4242))
attempt("xattr", lambda: os.setxattr(outside, "user.planted", b"1"))
attempt("chmod", lambda: os.chmod(project, 0o777))
attempt("fchmodat2", fchmodat2)
attempt("utime", lambda: os.utime(project, (1, 1)))
print("LEAKS-TRIED")
"""


@pytest.fixture
def udp_listener() -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    server.setblocking(False)
    yield server
    server.close()


@pytest.mark.skipif(not MECHANISMS, reason="no OS sandbox (bubblewrap or Landlock) works on this machine")
@pytest.mark.parametrize("profile", ["oracle", "generic"])
@pytest.mark.parametrize("mechanism", MECHANISMS or ["none"])
async def test_the_sandbox_refuses_udp_unix_sockets_and_metadata_changes(
        runtime: Runtime, scripted, project_dir: Path, tmp_path: Path, udp_listener: socket.socket,
        mechanism: str, profile: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What Landlock alone lets through (UDP, Unix sockets, chown, extended attributes, and for a read-only
    agent chmod — by any syscall — and utime) the sandbox refuses under either mechanism."""
    if mechanism == "landlock" and not sandbox.seccomp_available():
        pytest.skip("libseccomp is not installed: the Landlock fallback lacks its seccomp layer here")
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: mechanism)
    monkeypatch.setattr(runtime.launcher.settings.tools, "bash_sandbox", "unshielded")  # (Landlock for `generic`)
    answer_permissions_headless(runtime.bus, approve=True)
    target = project_dir / "tracked.txt"
    target.write_text("kept\n")
    target.chmod(0o644)
    os.utime(target, (1_000_000_000, 1_000_000_000))
    outside = tmp_path / "outside.txt"
    outside.write_text("theirs\n")
    unix_path = str(tmp_path / "daemon.sock")
    daemon = socket.socket(socket.AF_UNIX)
    daemon.bind(unix_path)
    daemon.listen(1)
    daemon.setblocking(False)
    script = project_dir / "leaks.py"  # bubblewrap hides the rest of /tmp
    script.write_text(_LEAKS)
    command = shlex.join(["python3", str(script), str(target), str(outside), str(udp_listener.getsockname()[1]),
                          unix_path])
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": command})], when_contains="GO"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    try:
        await runtime.launcher.run_prompt("GO", profile_name=profile)
        with pytest.raises(BlockingIOError):
            daemon.accept()
    finally:
        daemon.close()
    said = scripted.requests[-1].text
    assert "LEAKS-TRIED" in said  # the attack ran, inside the sandbox
    for refused in ("unix", "chown", "xattr"):
        assert f"{refused} REFUSED" in said, said
    with pytest.raises(BlockingIOError):  # (under bubblewrap the datagram stays in the sandbox's own network)
        udp_listener.recv(16)
    stat = outside.stat()
    assert (stat.st_uid, stat.st_gid) == (os.getuid(), os.getgid())
    assert "user.planted" not in os.listxattr(outside)
    if profile == "oracle":  # read-only: not even the mode or the times of a project file
        assert "chmod REFUSED" in said and "fchmodat2 REFUSED" in said and "utime REFUSED" in said
        assert target.stat().st_mode & 0o777 == 0o644
        assert target.stat().st_mtime == 1_000_000_000
