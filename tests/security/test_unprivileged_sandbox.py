"""The sandbox as an unprivileged user (the usual desktop case; CI runs as root). The sandbox module is the
standard-library-only file that also serves as the Landlock wrapper, so a copy of it runs under the system's
Python as nobody: it probes which sandbox works for that user, then wraps attacks the way agents' bash is
wrapped — a read-only binding writing, changing a mode, reaching a Unix socket or sending UDP; a writable one
writing outside its workspace and into its shielded `.git/` — and reports what got through."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import UNPRIVILEGED_UID, as_unprivileged_user
from yeetui.system import sandbox

DRIVER = r"""
import json, os, subprocess, sys
from pathlib import Path
base = Path(sys.argv[1])
sys.path.insert(0, str(base))
import yeetui_sandbox as sandbox
ws, outside, private = base / "ws", base / "outside", base / "private"
udp_port, unix_path = sys.argv[2], sys.argv[3]
LEAKS = ("python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('%s')\" 2>/dev/null && echo UNIX-REACHED;"
         " python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', "
         "('127.0.0.1', %s))\" 2>/dev/null; true") % (unix_path, udp_port)
UNIX_LEAK = ("python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('%s')\" 2>/dev/null "
             "&& echo UNIX-REACHED; true") % unix_path
def run(argv, fd):
    done = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60,
                          pass_fds=(fd,) if fd is not None else ())
    if fd is not None:
        os.close(fd)
    return done.stdout + done.stderr
def seccomp(mechanism, read_only):
    return sandbox.seccomp_fd(network=False, read_only=read_only) if mechanism == "bwrap" else None
report = {"uid": os.getuid(), "mechanisms": {}, "bwrap": None}
for mechanism, works in (("bwrap", sandbox.probe_bwrap), ("landlock", sandbox.probe_landlock)):
    if not works():
        continue
    if mechanism == "bwrap":
        report["bwrap"] = sandbox.bwrap_binary()
    fd = seccomp(mechanism, True)
    readonly = run(sandbox.wrap_readonly(["/bin/sh", "-c", "echo x > PWNED; chmod 777 file; " + LEAKS], ws,
                                         roots=(ws,), private_tmp=private, mechanism=mechanism, seccomp=fd), fd)
    fd = seccomp(mechanism, False)
    confined = run(sandbox.wrap_confined(
        ["/bin/sh", "-c", f"echo mine > mine; chmod 700 mine; echo x > {outside}/FLAG; chmod 777 {outside}; "
         "echo x >> .git/config; " + LEAKS], ws,
        writable=(ws,), shielded=(ws / ".git",), private_tmp=private, mechanism=mechanism, seccomp=fd), fd)
    # a project's MCP server: nothing writable but its private /tmp, the network allowed, Unix sockets refused
    fd = sandbox.seccomp_fd(network=True, read_only=True) if mechanism == "bwrap" else None
    served = run(sandbox.wrap_confined(
        ["/bin/sh", "-c", f"echo x > SERVER-PWNED; echo x > {outside}/SERVER-FLAG; " + UNIX_LEAK], ws,
        writable=() if mechanism == "bwrap" else (private,), readable=(ws,), network=True, private_tmp=private,
        mechanism=mechanism, seccomp=fd), fd)
    report["mechanisms"][mechanism] = {
        "server_output": served, "server_wrote": (ws / "SERVER-PWNED").exists() or (outside / "SERVER-FLAG").exists(),
        "readonly_output": readonly, "confined_output": confined,
        "pwned": (ws / "PWNED").exists(), "mode": oct((ws / "file").stat().st_mode & 0o777),
        "mine": (ws / "mine").exists(), "flag": (outside / "FLAG").exists(),
        "mine_mode": oct((ws / "mine").stat().st_mode & 0o777) if (ws / "mine").exists() else None,
        "outside_mode": oct(outside.stat().st_mode & 0o777),
        "git_config": (ws / ".git" / "config").read_text(),
    }
    for leftover in (ws / "mine", ws / "PWNED", outside / "FLAG"):
        leftover.unlink(missing_ok=True)
print(json.dumps(report))
"""


@pytest.fixture
def playground() -> Iterator[Path]:
    """A folder the unprivileged user can reach (pytest's own tmp folders are private to root): the sandbox
    module's copy, a workspace with a `.git/config` and a file, a folder outside it, all owned by that user so
    that only the sandbox stands between it and them."""
    base = Path(tempfile.mkdtemp(prefix="yeetui-unpriv-"))
    base.chmod(0o755)
    shutil.copytree(Path(sandbox.__file__).parent, base / "yeetui_sandbox",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (base / "driver.py").write_text(DRIVER)
    for folder in ("ws/.git", "outside", "private"):
        (base / folder).mkdir(parents=True)
    (base / "ws" / ".git" / "config").write_text("[core]\n")
    (base / "ws" / "file").write_text("kept\n")
    (base / "ws" / "file").chmod(0o644)
    if sandbox.probe_bwrap():  # the bubblewrap that came with yeetui, where that user can run it
        bundled = Path(sandbox.bwrap_binary()).parent.parent
        shutil.copytree(bundled, base / "bwrap" / bundled.name)
        if (bundled.parent / f"{bundled.name}.libs").is_dir():
            shutil.copytree(bundled.parent / f"{bundled.name}.libs", base / "bwrap" / f"{bundled.name}.libs")
    if os.getuid() == 0:
        for path in (base, *base.rglob("*")):
            os.chown(path, UNPRIVILEGED_UID, UNPRIVILEGED_UID)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _bwrap_dir(playground: Path) -> str:
    found = [p.parent for p in (playground / "bwrap").glob("*/_bin/bwrap")]
    return f"{found[0]}:" if found else ""


def test_the_sandbox_holds_for_an_unprivileged_user(playground: Path) -> None:
    prefix = as_unprivileged_user()
    if prefix is None:
        pytest.skip("running as root without setpriv and a system python to drop to an unprivileged user")
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    unix_path = str(playground / "ws" / "daemon.sock")  # visible inside the sandbox: only seccomp refuses it
    daemon = socket.socket(socket.AF_UNIX)
    daemon.bind(unix_path)
    os.chmod(unix_path, 0o777)
    daemon.listen(1)
    daemon.setblocking(False)
    try:
        done = subprocess.run([*prefix, str(playground / "driver.py"), str(playground),
                               str(udp.getsockname()[1]), unix_path], capture_output=True, text=True, timeout=120,
                              cwd=playground, env={"PATH": f"{_bwrap_dir(playground)}/usr/bin:/bin"})
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        with pytest.raises(BlockingIOError):
            udp.recv(16)
        with pytest.raises(BlockingIOError):
            daemon.accept()
    finally:
        udp.close()
        daemon.close()
    assert report["uid"] != 0
    if sandbox.probe_bwrap() and os.environ.get(sandbox.FALLBACK_ENV) != "landlock":
        assert "bwrap" in report["mechanisms"], report  # the bundled bubblewrap works for that user too
    if not report["mechanisms"]:
        pytest.skip("no OS sandbox works for an unprivileged user on this machine")
    for mechanism, seen in report["mechanisms"].items():
        assert not seen["pwned"] and seen["mode"] == "0o644", (mechanism, seen["readonly_output"])
        assert seen["mine"], (mechanism, seen["confined_output"])  # the workspace is writable
        assert not seen["flag"], (mechanism, seen["confined_output"])
        assert seen["mine_mode"] == "0o700", (mechanism, seen["confined_output"])  # chmod in the workspace works
        assert seen["outside_mode"] == "0o755", (mechanism, seen["confined_output"])  # and nowhere else
        assert "UNIX-REACHED" not in seen["readonly_output"] + seen["confined_output"] + seen["server_output"]
        assert not seen["server_wrote"], (mechanism, seen["server_output"])  # a project's MCP server writes nothing
        if mechanism == "bwrap":  # Landlock cannot shield a folder inside the workspace
            assert seen["git_config"] == "[core]\n", seen["confined_output"]
