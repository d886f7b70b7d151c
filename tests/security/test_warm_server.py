"""The warm server (`yeetui/system/warm/`) is no way out of a sandbox, keeps no request's keys and forks no
stale code.

- A command that an agent's sandboxed bash starts (`yeetui agents start …`, whose worker asks the warm server to
  fork it) must run inside that sandbox: the server forks outside any. So it refuses a peer that is confined —
  no_new_privs, a seccomp filter it has not, a pid namespace of its own, capabilities dropped — and the worker
  runs the command itself, in its own sandboxed process. Made real under Landlock without libseccomp (where a
  sandboxed process can reach Unix sockets) and under bubblewrap without its filter, the socket's folder bound
  in; bubblewrap's private /tmp and /run hide the socket in the first place.
- The other way round, a sandboxed process listening in the server's place (it can write the socket's folder)
  is handed nothing: the client checks who listens before it sends anything.
- The request's environment (the provider keys) never passes through the server's own memory: it comes in a
  descriptor that only the forked child reads.
- A dependency edited in place after the server imported it gets a new server: the old one says so and stops
  listening, and the worker is forked from a new one, without a word to the user.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

import yeetui
from tests.fakellm import Reply, ToolCall
from tests.processes import gone
from yeetui.system import sandbox
from yeetui.system.processes import yeetui_command
from yeetui.system.warm.build import build_key
from yeetui.system.warm.client import UntrustedServer, ask
from yeetui.system.warm.files import Place, place, server_alive
from yeetui.system.warm.protocol import Replies

ROOT = Path(__file__).resolve().parents[2]
MECHANISMS = [m for m, works in (("bwrap", sandbox.probe_bwrap), ("landlock", sandbox.probe_landlock)) if works()]

_WITHOUT_SECCOMP = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from yeetui.system.sandbox import preexec as sandbox
sandbox._libseccomp = lambda: None  # as on a machine without libseccomp2: Landlock alone
sys.exit(sandbox._landlock_exec_main(sys.argv[1:]))
"""
"""The real Landlock wrapper, on a machine without libseccomp: no filter, so Unix sockets stay open."""

_CLIENT = f"""
import json, os, sys
sys.path.insert(0, {str(ROOT)!r})
from yeetui.system.warm import client
from yeetui.system.warm.protocol import Replies
client._server_problem = lambda conn: None  # a hostile client hands its request to any server
path, cwd = sys.argv[1:3]
null = os.open(os.devnull, os.O_RDWR)
try:
    conn = client.ask(path, ["agent", "run", "--run-id", "nope"], env={{"YEETUI_PROBE": "1"}},
                      stdio=(null, null, null), cwd=cwd)
except OSError as exc:
    print(json.dumps({{"unreachable": type(exc).__name__}}))
    sys.exit(0)
replies = Replies()
while replies.pid is None and replies.error is None:
    data = conn.recv(4096)
    if not data:
        break
    replies.feed(data)
print(json.dumps({{"pid": replies.pid, "error": replies.error}}))
"""
"""A client that asks the server at ARGV[1] for a worker's command, and prints what it answered. (yeetui's own
client in a sandbox does not ask at all: `client.forward`.)"""


def _wait(predicate: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _server_env(**extra: str) -> dict[str, str]:
    """What `yeetui/application/process.py` starts a server with: no keys."""
    kept = ("PATH", "HOME", "LANG", "LC_ALL", "XDG_RUNTIME_DIR", "TMPDIR", "VIRTUAL_ENV")
    return {**{k: v for k, v in os.environ.items() if k in kept or k.startswith("PYTHON")}, **extra}


def _holder(where: Place) -> int | None:
    """The pid of the server holding the lock of `where`, while one does."""
    try:
        pid = int(where.lock.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if server_alive(where) and not gone(pid) else None


def _listening(where: Place) -> bool:
    null = os.open(os.devnull, os.O_RDWR)
    try:
        conn = ask(where.socket, ["agent", "ping"], env={}, stdio=(null, null, null))  # refused: not a worker
    except OSError:
        return False
    finally:
        os.close(null)
    with conn:
        replies = Replies()
        while replies.error is None and (data := conn.recv(4096)):
            replies.feed(data)
    return replies.error is not None


@dataclass
class Server:
    where: Place
    process: subprocess.Popen[bytes]
    folder: Path


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An XDG_RUNTIME_DIR of this test's own; the warm servers in it are ended afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="ys-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    for lock in folder.glob("yeetui-*/warm-*.lock"):
        pid = _holder(Place(lock.with_suffix(".sock"), lock))
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


def _start_server(runtime_dir: Path) -> Server:
    where = place(os.environ)
    assert where is not None
    process = subprocess.Popen(yeetui_command("agent", "warm-server", build_key()), cwd="/",
                               env=_server_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    _wait(lambda: _listening(where) or process.poll() is not None, "the warm server did not start")
    assert process.poll() is None, "the warm server ended at start"
    return Server(where, process, runtime_dir)


@pytest.fixture
def server(runtime_dir: Path) -> Iterator[Server]:
    """The real `yeetui agent warm-server` for this build, listening in `runtime_dir`."""
    started = _start_server(runtime_dir)
    yield started
    started.process.kill()
    started.process.wait()


_PYTHON = (Path(sys.executable).parent.parent, Path(yeetui.__file__).resolve().parents[1])
"""The virtualenv the tests run in and the checkout yeetui is imported from, shown inside bubblewrap even when
they lie under /tmp (a CI checkout there)."""


def _confined(argv: list[str], cwd: Path, mechanism: sandbox.Sandbox, *, private_tmp: Path,
              bound: tuple[Path, ...] = ()) -> list[str]:
    """`argv` in the read-only sandbox of `mechanism` without its seccomp filter (as without libseccomp)."""
    wrapped = sandbox.wrap_readonly(argv, cwd, roots=(cwd, *bound, *_PYTHON), private_tmp=private_tmp,
                                    mechanism=mechanism)
    if mechanism == "landlock":
        script = wrapped.index(str(Path(sandbox.preexec.__file__).resolve()))
        wrapped[script:script + 1] = ["-c", _WITHOUT_SECCOMP]
    return wrapped


def _ask_from_sandbox(server: Server, mechanism: sandbox.Sandbox, tmp_path: Path, *, bound: bool) -> dict[str, object]:
    private = tmp_path / "private"
    private.mkdir(exist_ok=True)
    argv = _confined([sys.executable, "-I", "-S", "-c", _CLIENT, str(server.where.socket), str(tmp_path)],
                     tmp_path, mechanism, private_tmp=private, bound=(server.where.socket.parent,) if bound else ())
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


@pytest.mark.skipif(not MECHANISMS, reason="no OS sandbox (bubblewrap or Landlock) works on this machine")
@pytest.mark.parametrize("mechanism", MECHANISMS or ["none"])
def test_the_server_refuses_a_sandboxed_peer(server: Server, tmp_path: Path, mechanism: sandbox.Sandbox) -> None:
    answer = _ask_from_sandbox(server, mechanism, tmp_path, bound=True)
    assert answer.get("pid") is None, answer  # nothing forked outside the sandbox
    assert "sandbox" in str(answer.get("error")), answer
    assert _listening(server.where) and server.process.poll() is None  # and it serves on


@pytest.mark.skipif("bwrap" not in MECHANISMS, reason="bubblewrap does not work on this machine")
def test_bubblewraps_private_tmp_and_run_hide_the_socket(server: Server, tmp_path: Path) -> None:
    """The socket is in $XDG_RUNTIME_DIR (/run/user/UID) or /tmp: both are private tmpfs in the sandbox."""
    assert server.where.socket.is_relative_to("/tmp") or server.where.socket.is_relative_to("/run")
    assert _ask_from_sandbox(server, "bwrap", tmp_path, bound=False) == {"unreachable": "FileNotFoundError"}


_FAKE_SERVER = f"""
import json, os, socket, sys
sys.path.insert(0, {str(ROOT)!r})
path, loot = sys.argv[1:3]
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
listener.listen(1)
print("listening", flush=True)
conn, _ = listener.accept()
conn.settimeout(10)
try:
    _, fds, _, _ = socket.recv_fds(conn, 4, 8)
    with open(loot, "wb") as out:
        for fd in fds:
            out.write(os.pread(fd, 1 << 20, 0) if os.path.isfile(f"/proc/self/fd/{{fd}}") else b"")
except OSError:
    pass
"""
"""A warm server's impostor: listens where the server would, and keeps what a client hands it."""


@pytest.mark.skipif(not MECHANISMS, reason="no OS sandbox (bubblewrap or Landlock) works on this machine")
@pytest.mark.parametrize("mechanism", MECHANISMS or ["none"])
def test_a_server_in_a_sandbox_is_handed_nothing(runtime_dir: Path, tmp_path: Path, mechanism: str) -> None:
    """The other way round: a sandboxed command that can write where the socket lives (a workspace holding
    /tmp/yeetui-UID) listens there in the server's place. A worker must not hand it its environment (the
    provider keys) nor its terminal."""
    where = place(os.environ)
    assert where is not None
    loot = where.socket.parent / "loot"
    script = [sys.executable, "-I", "-S", "-c", _FAKE_SERVER, str(where.socket), str(loot)]
    folder = where.socket.parent
    if mechanism == "landlock":
        argv = _confined(script, folder, "landlock", private_tmp=folder)
    else:  # its workspace holds the socket's folder, writable; no seccomp filter (as without libseccomp)
        argv = sandbox.wrap_confined(script, folder, writable=[folder], readable=_PYTHON, mechanism="bwrap")
    impostor = subprocess.Popen(argv, cwd=folder, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert impostor.stdout is not None and impostor.stdout.readline().strip() == b"listening"
        key = f"sk-ant-api03-{secrets.token_hex(24)}"
        null = os.open(os.devnull, os.O_RDWR)
        try:
            with pytest.raises(UntrustedServer, match="sandbox"):
                ask(where.socket, ["agent", "run", "--run-id", "x"], env={"ANTHROPIC_API_KEY": key},
                    stdio=(null, null, null), cwd=str(tmp_path)).close()
        finally:
            os.close(null)
        impostor.wait(timeout=30)  # it saw the connection close
        assert not loot.exists() or key.encode() not in loot.read_bytes()
    finally:
        impostor.kill()
        impostor.wait()


def _stored_run(data: Path, run_id: str) -> tuple[str, int] | None:
    """A run's status and pid as the store under `data` holds them."""
    try:
        with closing(sqlite3.connect(f"file:{data / 'yeetui.db'}?mode=ro", uri=True, timeout=5)) as conn:
            row = conn.execute("SELECT status, pid FROM agent_runs WHERE id = ?", (run_id,)).fetchone()
    except sqlite3.OperationalError:
        return None
    return (row[0], row[1]) if row else None


@pytest.mark.skipif("landlock" not in MECHANISMS, reason="Landlock does not work on this machine")
def test_a_command_started_from_a_sandbox_runs_in_it(server: Server, fake_env, tmp_path: Path) -> None:
    """The attack as it happened: a read-only agent's approved bash, under Landlock without libseccomp, runs
    `yeetui agents start` with a config dir of its own whose `Stop` hook writes outside. The worker is that
    command's child and must stay in the sandbox: it runs the run itself (the run names the process the sandbox
    started) and nothing is written outside."""
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "done"})], when_contains="SANDBOXED"))
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    private = tmp_path / "private"
    config, data = private / "config", private / "data"
    config.mkdir(parents=True)
    data.mkdir()
    outside = project / "PWNED"
    config.joinpath("config.yaml").write_text(json.dumps(
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": f"echo pwned > {outside}"}]}]}}))
    env = {name: os.environ[name] for name in ("PATH", "HOME", "XDG_RUNTIME_DIR", "ANTHROPIC_BASE_URL",
                                               "ANTHROPIC_API_KEY", "PYTHONPATH") if name in os.environ}
    env.update(YEETUI_CONFIG_DIR=str(config), YEETUI_DATA_DIR=str(data), TMPDIR=str(private),
               YEETUI_RETRY__MAX_ATTEMPTS="1")
    argv = _confined([*yeetui_command("agents", "start", "oracle", "SANDBOXED look", "--json")], project,
                     "landlock", private_tmp=private)
    done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    started = json.loads(done.stdout.splitlines()[-1])  # (after a notice: bubblewrap does not work in there)
    _wait(lambda: gone(started["pid"]), "the worker did not end", timeout=120)
    stored = _stored_run(data, started["run_id"])
    assert stored is not None and stored[0] in ("completed", "failed"), stored
    assert not outside.exists(), "the worker's Stop hook wrote outside the sandbox"
    assert stored[1] == started["pid"]  # run by the process the sandbox started, not forked outside it
    assert "warm server" not in Path(started["log"]).read_text()  # it did not even ask


def _readable_memory(pid: int) -> Iterator[bytes]:
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r") or line.rstrip().endswith(("[vvar]", "[vsyscall]", "[vvar_vclock]")):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                memory.seek(start)
                yield memory.read(end - start)
            except OSError:
                continue


def test_the_server_keeps_no_key_of_a_request_it_served(server: Server, tmp_path: Path) -> None:
    pid = _holder(server.where)
    assert pid is not None
    try:
        open(f"/proc/{pid}/mem", "rb").close()
    except PermissionError:
        pytest.skip("reading the undumpable server's memory needs root")
    keys = [f"sk-ant-api03-{secrets.token_hex(24)}" for _ in range(20)]
    env = {**{f"YEETUI_TEST_KEY_{i}": key for i, key in enumerate(keys)}, "ANTHROPIC_API_KEY": keys[0]}
    null = os.open(os.devnull, os.O_RDWR)
    try:
        conn = ask(server.where.socket, ["agent", "run", "--run-id", "nope"], env=env, stdio=(null, null, null),
                   cwd=str(tmp_path))
    finally:
        os.close(null)
    with conn:
        replies = Replies()
        while replies.status is None and (data := conn.recv(4096)):
            replies.feed(data)
    assert replies.pid is not None and replies.status is not None, replies.error  # forked, ran, ended
    found = {key for chunk in _readable_memory(pid) for key in keys if key[13:].encode() in chunk}
    assert not found, f"{len(found)} of the request's {len(keys)} keys are in the server's memory"


SITECUSTOMIZE = "import yeetui_test_dependency  # noqa: F401\n"


def test_a_dependency_edited_in_place_gets_a_new_server(runtime_dir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`yeetui_test_dependency` stands for an installed package the server imported (loaded here at start-up
    from PYTHONPATH, as site-packages are): changed in place, without a version or a folder that changes, it is
    not what the old server runs. The next worker is forked by a new server, and says nothing about it."""
    dependency = tmp_path / "deps"
    dependency.mkdir()
    (dependency / "sitecustomize.py").write_text(SITECUSTOMIZE)
    module = dependency / "yeetui_test_dependency.py"
    module.write_text("VALUE = 1\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, (str(dependency), os.environ.get("PYTHONPATH")))))
    old = _start_server(runtime_dir)
    try:
        with module.open("r+") as edited:  # in place: same inode, same folder
            edited.write("VALUE = 2\n")
        os.utime(module, ns=(time.time_ns(), time.time_ns() + 10**9))
        env = {**os.environ, "YEETUI_WARM_IDLE": "30"}
        done = subprocess.run(yeetui_command("agent", "run", "--run-id", "nope"), cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 1 and "No run has an id starting with 'nope'" in done.stderr, done.stderr
        assert "warm server" not in done.stderr  # no word of it to the user
        _wait(lambda: old.process.poll() is not None, "the stale server did not stop")
        new = _holder(old.where)
        assert new is not None and new != old.process.pid  # a new server took the build's place
        assert re.search(rb"warm-server", Path(f"/proc/{new}/cmdline").read_bytes())
    finally:
        if old.process.poll() is None:
            old.process.kill()
        old.process.wait()
