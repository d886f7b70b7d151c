"""The read-only sandbox really blocks writes (and TCP) on whatever this machine offers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from yeetui.system import sandbox

AVAILABLE = [name for name, probe in (("bwrap", sandbox.probe_bwrap), ("landlock", sandbox.probe_landlock))
             if probe()]


def run(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=30, check=False,
                          env={**os.environ, **env})


def test_probe_is_consistent_with_the_individual_probes() -> None:
    chosen = sandbox.probe_sandbox()
    assert chosen == (AVAILABLE[0] if AVAILABLE else None)
    assert sandbox.probe_sandbox() is sandbox.probe_sandbox()  # cached


def test_no_sandbox_means_wrap_refuses_clearly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: None)
    with pytest.raises(RuntimeError, match="No read-only sandbox"):
        sandbox.wrap_readonly(["true"], tmp_path)


@pytest.fixture(params=["bwrap", "landlock"])
def mechanism(request: pytest.FixtureRequest) -> sandbox.Sandbox:
    if request.param not in AVAILABLE:
        pytest.skip(f"{request.param} does not work on this machine")
    return request.param


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "keep.txt").write_text("original\n")
    return root


def test_writes_fail_and_leave_no_file(mechanism: sandbox.Sandbox, workspace: Path, tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir()
    script = ('touch x; echo "touch=$?"; echo changed > keep.txt; echo "overwrite=$?"; mkdir d; '
              'echo "mkdir=$?"; rm keep.txt; echo "rm=$?"; cat keep.txt; '
              'echo ok > /dev/null && echo devnull-ok')
    argv = sandbox.wrap_readonly(["bash", "-c", script], workspace, roots=(workspace,), private_tmp=private,
                                 mechanism=mechanism)
    done = run(argv, workspace)
    lines = done.stdout.splitlines()
    assert "touch=1" in lines and "mkdir=1" in lines and "rm=1" in lines and "devnull-ok" in lines
    assert not any(line == "overwrite=0" for line in lines) and "original" in lines
    assert sorted(p.name for p in workspace.iterdir()) == ["keep.txt"]
    assert (workspace / "keep.txt").read_text() == "original\n"


def test_private_tmp_is_writable_and_private(mechanism: sandbox.Sandbox, workspace: Path, tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir()
    name = f"yeetui-scratch-{uuid.uuid4().hex}"
    script = f'echo hi > "$TMPDIR/{name}" && cat "$TMPDIR/{name}"'
    argv = sandbox.wrap_readonly(["bash", "-c", script], workspace, roots=(workspace,), private_tmp=private,
                                 mechanism=mechanism)
    done = run(argv, workspace, TMPDIR=str(private) if mechanism == "landlock" else "/tmp")
    assert done.stdout == "hi\n", done.stderr
    assert not (Path("/tmp") / name).exists()  # bwrap's /tmp is a private tmpfs; landlock used `private`


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server.getsockname()[1]
    server.close()


def test_tcp_is_blocked_inside_but_works_outside(mechanism: sandbox.Sandbox, workspace: Path, listener: int) -> None:
    if mechanism == "landlock" and sandbox.landlock_abi() < 4:
        pytest.skip("this kernel's Landlock cannot restrict TCP (ABI < 4)")
    code = ("import socket; "
            f"socket.create_connection(('127.0.0.1', {listener}), timeout=3); print('connected')")
    outside = run([sys.executable, "-c", code], workspace)
    assert outside.stdout == "connected\n"
    inside = run(sandbox.wrap_readonly([sys.executable, "-c", code], workspace, roots=(workspace,),
                                       mechanism=mechanism), workspace)
    assert inside.returncode != 0 and "connected" not in inside.stdout


def test_landlock_wrapper_rejects_bad_usage_and_missing_commands(workspace: Path) -> None:
    script = str(Path(sandbox.preexec.__file__).resolve())
    bad = run([sys.executable, "-I", "-S", script, "--landlock-exec"], workspace)
    assert bad.returncode == 2 and "usage" in bad.stderr
    if "landlock" in AVAILABLE:
        missing = run([sys.executable, "-I", "-S", script, "--landlock-exec", "", "--", "no-such-cmd-xyz"],
                      workspace)
        assert missing.returncode == 127 and "cannot run no-such-cmd-xyz" in missing.stderr
