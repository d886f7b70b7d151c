"""Worker processes forked from the warm server (`yeetui/system/warm/`): the real binary, real detached and pane
workers, the fake LLM server. A worker forked warm is still a process of its own that leads its process group;
its stand-in (the process yeetui started) passes signals on and ends as it ended; killing the stand-in kills it;
and nothing a project holds is imported in place of yeetui's code, warm or cold."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui, start_yeetui, stored_pid, wait_for_stored_status
from tests.processes import gone
from tests.waiting import until
from yeetui.system.warm.build import build_key
from yeetui.system.warm.files import Place, place, server_alive
from yeetui.system.warm.protocol import Replies


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An XDG_RUNTIME_DIR of this test's own, so it gets a warm server of its own (ended afterwards)."""
    folder = Path(tempfile.mkdtemp(prefix="yw-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    for pid in _servers(folder):
        os.kill(pid, signal.SIGKILL)
    for path in sorted(folder.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    folder.rmdir()


@pytest.fixture
def shared_runtime_dir() -> Path:
    """This test process's XDG_RUNTIME_DIR (tests/conftest.py): the warm server its other tests use too — a test
    that needs no server of its own saves starting one."""
    return Path(os.environ["XDG_RUNTIME_DIR"])


def _servers(folder: Path) -> list[int]:
    """Pids of the warm servers that hold their lock under `folder`."""
    found = []
    for lock in folder.glob("yeetui-*/warm-*.lock"):
        text = lock.read_text().split()
        if text and not gone(int(text[0])) and server_alive(Place(lock.with_suffix(".sock"), lock)):
            found.append(int(text[0]))
    return found


def _status(pid: int, field: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return line.split()[1]
    raise AssertionError(f"no {field} for {pid}")


# **env: Any, as it is spread beside run_yeetui's timeout
def _start(project: Path, *args: str, fresh: bool = False, **env: Any) -> dict:
    done = run_yeetui("agents", "start", *args, "--json", cwd=project, fresh=fresh, **env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int(_status(int(entry.name), "PPid")) == pid and not gone(int(entry.name)):
                    found.append(int(entry.name))
            except (OSError, AssertionError, ValueError):
                continue
    return found


def _worker_of(started: dict, folder: Path) -> int:
    """The process the warm server forked for a detached run: the child of the server writing to its log."""
    def find() -> int | None:
        for server in _servers(folder):
            for child in _children(server):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{child}/fd/1") == started["log"]:
                        return child
        return None

    until("no forked worker writes to the run's log", find)
    pid = find()
    assert pid is not None
    return pid


def test_detached_workers_fork_from_one_warm_server_and_lead_their_groups(fake_env, project: Path,
                                                                         shared_runtime_dir: Path) -> None:
    fake_env.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "first answer"})], when_contains="WARM-A", after_requests=3),
        Reply(tool_calls=[ToolCall("complete", {"output": "second answer"})], when_contains="WARM-B",
              after_requests=3),
    )
    first = _start(project, "oracle", "WARM-A look")
    second = _start(project, "oracle", "WARM-B look")
    workers = [_worker_of(first, shared_runtime_dir), _worker_of(second, shared_runtime_dir)]
    (server,) = _servers(shared_runtime_dir)
    for started, worker in zip((first, second), workers, strict=True):
        assert worker != started["pid"]
        assert int(_status(worker, "PPid")) == server  # forked from the warm server, not started afresh
        assert os.getpgid(worker) == worker and os.getsid(worker) == worker  # leads its group, as a detached one
        assert not gone(started["pid"])  # its stand-in waits for it

        def claimed(started: dict = started, worker: int = worker) -> bool:
            return stored_pid(started["run_id"]) == worker

        # Once it claimed its run, the run names the process it lives in (until then, the stand-in).
        until("never claimed", claimed)
        assert os.readlink(f"/proc/{worker}/cwd") == str(project)
        assert Path(f"/proc/{worker}/comm").read_text().strip() == "yeetui-worker"  # what `ps`, `top` show
    assert b"warm-server" in Path(f"/proc/{server}/cmdline").read_bytes()
    fake_env.release()
    for started, answer in zip((first, second), ("first answer", "second answer"), strict=True):
        assert wait_for_stored_status(started["run_id"]) == "completed"
        status = run_yeetui("agents", "status", started["run_id"], "--json", cwd=project)
        assert json.loads(status.stdout)["output"] == answer

        def stand_in_gone(started: dict = started) -> bool:
            return gone(started["pid"])

        until("the stand-in outlived its worker", stand_in_gone)
    log = Path(first["log"]).read_text()
    assert "warm server" not in log  # no complaint from the stand-in


def test_a_killed_stand_in_takes_its_worker_with_it(fake_env, project: Path, shared_runtime_dir: Path) -> None:
    fake_env.script(Reply(text="never sent", when_contains="KILL-STANDIN", after_requests=10**6))
    started = _start(project, "oracle", "KILL-STANDIN hold on")
    worker = _worker_of(started, shared_runtime_dir)
    fake_env.wait_for_requests(1, timeout=60)
    os.kill(started["pid"], signal.SIGKILL)
    until("the worker outlived its killed stand-in", lambda: gone(worker), timeout=20)
    status = run_yeetui("agents", "status", started["run_id"], "--json", cwd=project)  # which recovers it
    assert json.loads(status.stdout)["status"] == "interrupted"


def test_sigterm_to_the_stand_in_cancels_the_run_as_it_did_a_cold_worker(fake_env, project: Path,
                                                                         shared_runtime_dir: Path) -> None:
    fake_env.script(Reply(text="never sent", when_contains="TERM-STANDIN", after_requests=10**6))
    started = _start(project, "oracle", "TERM-STANDIN hold on")
    worker = _worker_of(started, shared_runtime_dir)
    fake_env.wait_for_requests(1, timeout=60)
    os.kill(started["pid"], signal.SIGTERM)
    assert wait_for_stored_status(started["run_id"]) == "cancelled"
    until("the worker or its stand-in stayed", lambda: gone(worker) and gone(started["pid"]))


def test_the_server_ends_when_idle_and_a_new_one_starts_after_a_kill(fake_env, project: Path, runtime_dir: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("YEETUI_WARM_IDLE", "1")
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "one"})], when_contains="IDLE-ONE"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "two"})], when_contains="IDLE-TWO"))
    first = _start(project, "oracle", "IDLE-ONE")
    _worker_of(first, runtime_dir)
    (server,) = _servers(runtime_dir)
    assert wait_for_stored_status(first["run_id"]) == "completed"
    until("the idle server did not end", lambda: gone(server))
    assert not list(runtime_dir.glob("yeetui-*/warm-*.sock"))  # it took its socket with it

    second = _start(project, "oracle", "IDLE-TWO")
    worker = _worker_of(second, runtime_dir)
    (again,) = _servers(runtime_dir)
    assert again != server and int(_status(worker, "PPid")) == again
    assert wait_for_stored_status(second["run_id"]) == "completed"


def test_a_server_killed_outright_is_replaced(fake_env, project: Path, runtime_dir: Path) -> None:
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "one"})], when_contains="DEAD-ONE"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "two"})], when_contains="DEAD-TWO"))
    first = _start(project, "oracle", "DEAD-ONE")
    assert wait_for_stored_status(first["run_id"]) == "completed"
    (server,) = _servers(runtime_dir)
    os.kill(server, signal.SIGKILL)
    until("the server did not die", lambda: gone(server))
    second = _start(project, "oracle", "DEAD-TWO")  # its socket is still there; the lock says nobody serves it
    assert wait_for_stored_status(second["run_id"]) == "completed"
    (again,) = _servers(runtime_dir)
    assert again != server


def _ask_raw(path: Path, header: bytes, fds: list[int]) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(str(path))
        socket.send_fds(conn, [struct.pack("!I", len(header))], fds)
        with contextlib.suppress(BrokenPipeError):  # refused before all of it was read
            conn.sendall(header)
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = conn.recv(4096)
            if not chunk:
                break
            reply += chunk
    return json.loads(reply)


def _memfd(data: bytes, *, sealed: bool = True) -> int:
    fd = os.memfd_create("env", os.MFD_ALLOW_SEALING)
    os.write(fd, data)
    if sealed:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
                    | fcntl.F_SEAL_WRITE)
    return fd


def test_hostile_requests_are_refused_and_the_server_goes_on(fake_env, project: Path, shared_runtime_dir: Path) -> None:
    """Only this user can reach the socket (a 0700 folder, the peer's uid checked); still, whatever it reads is
    checked: a request that is not JSON, names another command, or brings the wrong descriptors is refused with
    a reason, and the server serves the next worker. The environment is the forked child's to read: one that is
    not a map of names ends that child, saying so."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "one"})], when_contains="HOSTILE-ONE"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "two"})], when_contains="HOSTILE-TWO"))
    first = _start(project, "oracle", "HOSTILE-ONE")
    assert wait_for_stored_status(first["run_id"]) == "completed"
    where = place(os.environ)  # this build's server (another test of this process may have left another's)
    assert where is not None and where.socket.parent.parent == shared_runtime_dir
    sock = where.socket
    assert sock.stat().st_mode & 0o777 == 0o600 and sock.parent.stat().st_mode & 0o777 == 0o700
    null = os.open(os.devnull, os.O_RDWR)
    here = os.open(project, os.O_RDONLY)
    env, loose = _memfd(b"{}"), _memfd(b"{}", sealed=False)
    try:
        five = [null, null, null, here, env]
        good = {"argv": ["agent", "run", "--run-id", "x"], "umask": 0o22}
        for header, fds, reason in (
                (b"{not json", five, "Expecting"),
                (json.dumps({**good, "argv": ["run", "rm -rf ~"]}).encode(), five, "not a command this server runs"),
                (json.dumps({**good, "argv": "agent run"}).encode(), five, "argv must be"),
                (json.dumps({**good, "argv": []}).encode(), five, "not a command this server runs"),  # the TUI
                (json.dumps({**good, "umask": -1}).encode(), five, "umask must"),
                (json.dumps(good).encode(), [null], "five descriptors"),
                (json.dumps(good).encode(), [null, null, null, here], "five descriptors"),
                (json.dumps(good).encode(), [null, null, null, here, loose], "sealed memfd"),
                (json.dumps(good).encode(), [null, null, null, here, null], "sealed memfd"),
                (b"x" * 10, five, "Expecting value")):
            answer = _ask_raw(sock, header, fds)
            assert reason in answer.get("error", ""), (header, answer)
        errors_read, errors_write = os.pipe()
        bad = _memfd(json.dumps({"A=B": "c"}).encode())
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(30)
                conn.connect(str(sock))
                header = json.dumps(good).encode()
                socket.send_fds(conn, [struct.pack("!I", len(header))], [null, null, errors_write, here, bad])
                conn.sendall(header)
                os.close(errors_write)
                replies = Replies()
                while replies.status is None and (data := conn.recv(4096)):
                    replies.feed(data)
            assert replies.status is not None and os.waitstatus_to_exitcode(replies.status) == 2
            assert "env must map names to strings" in os.read(errors_read, 4096).decode()
        finally:
            os.close(errors_read)
            os.close(bad)
    finally:
        for fd in (null, here, env, loose):
            os.close(fd)
    second = _start(project, "oracle", "HOSTILE-TWO")
    assert wait_for_stored_status(second["run_id"]) == "completed"
    assert len(_servers(shared_runtime_dir)) == 1


@pytest.mark.parametrize("warmth", ["warm", "cold"])
def test_a_projects_own_yeetui_or_sdk_is_never_imported(fake_env, project: Path, warmth: str,
                                                        request: pytest.FixtureRequest,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker runs in the project's folder. `python -m yeetui` would put that folder first on the import path,
    and a cloned repository's `yeetui/` or `anthropic.py` would run in place of ours (it did, before `-P`)."""
    folder = request.getfixturevalue("shared_runtime_dir" if warmth == "warm" else "runtime_dir")
    if warmth == "cold":
        monkeypatch.setenv("YEETUI_WARM", "0")
    marker = project.parent / "pwned"
    (project / "yeetui").mkdir()
    for name in ("yeetui/__init__.py", "yeetui/__main__.py", "anthropic.py", "litellm.py", "aiosqlite.py"):
        (project / name).write_text(f"open({str(marker)!r}, 'a').write({name!r})\n")
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "safe"})], when_contains="SHADOW"))
    started = _start(project, "oracle", "SHADOW look")
    assert wait_for_stored_status(started["run_id"]) == "completed"
    assert not marker.exists(), marker.read_text()
    assert bool(_servers(folder)) == (warmth == "warm")


def test_an_unsafe_runtime_folder_means_no_warm_server(fake_env, project: Path, runtime_dir: Path) -> None:
    """Where the socket's folder is another's or open to others, nothing listens there: workers start cold."""
    folder = runtime_dir / f"yeetui-{os.getuid()}"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    assert place({"XDG_RUNTIME_DIR": str(runtime_dir)}) is None
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "cold"})], when_contains="UNSAFE"))
    started = _start(project, "oracle", "UNSAFE look")
    assert wait_for_stored_status(started["run_id"]) == "completed"
    assert not _servers(runtime_dir) and not list(folder.iterdir())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_server_hands_over_to_a_new_one_and_finishes_its_work(fake_env, project: Path,
                                                                               runtime_dir: Path, signum: int) -> None:
    """An upgrade, a shutdown: SIGTERM makes the server stop taking commands at once (its socket and lock go, so
    the next worker starts a new one) while the command it runs goes on to its end and its stand-in hears of it."""
    fake_env.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "old"})], when_contains="TERM-OLD", after_requests=3),
        Reply(tool_calls=[ToolCall("complete", {"output": "new"})], when_contains="TERM-NEW", after_requests=3))
    first = _start(project, "oracle", "TERM-OLD")
    _worker_of(first, runtime_dir)
    (old,) = _servers(runtime_dir)
    os.kill(old, signum)
    until("the draining server kept its socket", lambda: not list(runtime_dir.glob("yeetui-*/warm-*.sock")))
    assert not gone(old)  # it still runs the first worker
    second = _start(project, "oracle", "TERM-NEW")
    worker = _worker_of(second, runtime_dir)
    assert int(_status(worker, "PPid")) != old
    fake_env.release()
    for started in (first, second):
        assert wait_for_stored_status(started["run_id"]) == "completed"

        def stand_in_gone(started: dict = started) -> bool:
            return gone(started["pid"])

        until("a stand-in stayed", stand_in_gone)
    until("the old server did not end once its command had", lambda: gone(old))
    assert "went away" not in Path(first["log"]).read_text()


def test_the_build_key_follows_the_sources(tmp_path: Path) -> None:
    """An edited or upgraded yeetui gets a server of its own: never a fork of code that is no longer there."""
    package = tmp_path / "yeetui"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "module.py").write_text("A = 1\n")
    before = build_key(package)
    assert build_key(package) == before
    os.utime(package / "sub" / "module.py", ns=(1, 1))
    assert build_key(package) != before
    touched = build_key(package)
    (package / "new.py").write_text("")
    assert build_key(package) != touched


def test_a_runtime_folder_that_is_a_link_or_another_users_is_not_used(tmp_path: Path) -> None:
    base = tmp_path / "run"
    base.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (base / f"yeetui-{os.getuid()}").symlink_to(elsewhere)
    assert place({"XDG_RUNTIME_DIR": str(base)}, key="k") is None
    other = tmp_path / "other"
    other.mkdir()
    (other / f"yeetui-{os.getuid()}").mkdir(mode=0o700)
    if os.getuid() == 0:
        os.chown(other / f"yeetui-{os.getuid()}", 65534, 65534)
        assert place({"XDG_RUNTIME_DIR": str(other)}, key="k") is None
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    assert place({"XDG_RUNTIME_DIR": str(deep)}, key="k") is None  # no socket path that long
    fine = tmp_path / "fine"
    fine.mkdir()
    found = place({"XDG_RUNTIME_DIR": str(fine)}, key="k")
    assert found is not None and found.socket.parent.stat().st_mode & 0o777 == 0o700


def test_a_command_the_server_refuses_runs_cold_instead(fake_env, project: Path, runtime_dir: Path) -> None:
    """The server takes a request of up to 1 MB; a worker whose environment is larger is refused, and its
    stand-in runs it itself, as a worker ran before there was a warm server."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "one"})], when_contains="BIG-ONE"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "two"})], when_contains="BIG-TWO",
                          after_requests=3))
    first = _start(project, "oracle", "BIG-ONE")
    assert wait_for_stored_status(first["run_id"]) == "completed"
    (server,) = _servers(runtime_dir)
    bulk = {f"YEETUI_TEST_BULK_{i}": "x" * 120_000 for i in range(9)}
    second = _start(project, "oracle", "BIG-TWO", fresh=True, **bulk)  # the test's own warm start takes 1 MB too
    fake_env.wait_for_requests(2, timeout=60)  # the second worker is waiting for its reply: in its stand-in
    assert not gone(second["pid"]) and not _children(server)
    fake_env.release()
    assert wait_for_stored_status(second["run_id"]) == "completed"
    assert _servers(runtime_dir) == [server]


def test_a_new_builds_server_removes_what_servers_of_ended_builds_left(fake_env, project: Path,
                                                                       runtime_dir: Path) -> None:
    """Each build (an upgrade, an edit) gets a server of its own, and an ended one's socket, lock and log used
    to stay for good. Two servers of other builds run; one is killed -9. The first server of this build
    removes the killed one's files, and leaves the other's, whose server lives, alone."""
    folder = runtime_dir / f"yeetui-{os.getuid()}"
    old = {key: start_yeetui("agent", "warm-server", key, cwd=project)
           for key in ("0123456789abcdef", "fedcba9876543210")}
    try:
        for key in old:
            lock = Place(folder / f"warm-{key}.sock", folder / f"warm-{key}.lock")

            def listening(lock: Place = lock) -> bool:
                return lock.socket.exists() and server_alive(lock)

            until(f"the {key} server to listen", listening)
        killed = old.pop("fedcba9876543210")
        killed.kill()
        killed.wait()
        (folder / "warm-fedcba9876543210.log").write_text("what it said\n")
        (folder / "warm-notes.txt").write_text("not a server's\n")
        left = {p.name for p in folder.glob("warm-fedcba9876543210.*")}
        assert left == {"warm-fedcba9876543210.sock", "warm-fedcba9876543210.lock", "warm-fedcba9876543210.log"}

        fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "ok"})], when_contains="NEW-BUILD"))
        started = _start(project, "oracle", "NEW-BUILD")
        _worker_of(started, runtime_dir)  # forked by this build's server, which has started
        assert not list(folder.glob("warm-fedcba9876543210.*"))
        assert {p.name for p in folder.glob("warm-0123456789abcdef.*")} == {"warm-0123456789abcdef.sock",
                                                                             "warm-0123456789abcdef.lock"}
        assert (folder / "warm-notes.txt").exists()
        assert wait_for_stored_status(started["run_id"]) == "completed"
    finally:
        for server in old.values():
            server.kill()
            server.wait()
