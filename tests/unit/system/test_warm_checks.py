"""The warm server's checks, one by one (`yeetui/system/warm/`, `yeetui/system/peers.py`): which peers count as
confined — compared with the server's own status, so that in a container, where every process has the
container's seccomp filter, workers still fork warm — and which loaded files make a server stale."""

from __future__ import annotations

import fcntl
import importlib
import os
import sys
from pathlib import Path

import pytest

from yeetui.system import peers
from yeetui.system.warm.build import changed_file, loaded_files
from yeetui.system.warm.files import Place, listen, remove_stale, server_alive

PLAIN = {"NoNewPrivs": "0", "Seccomp": "0", "Seccomp_filters": "0", "NSpid": "4242", "CapBnd": "000001ffffffffff"}
IN_A_CONTAINER = {**PLAIN, "Seccomp": "2", "Seccomp_filters": "1"}


@pytest.mark.parametrize(("theirs", "own", "said"), [
    ({**PLAIN, "NoNewPrivs": "1"}, PLAIN, "no_new_privs"),
    ({**PLAIN, "NoNewPrivs": "1"}, {**PLAIN, "NoNewPrivs": "1"}, "no_new_privs"),  # refused even then
    ({**PLAIN, "Seccomp": "2", "Seccomp_filters": "1"}, PLAIN, "seccomp"),
    ({**IN_A_CONTAINER, "Seccomp_filters": "2"}, IN_A_CONTAINER, "seccomp"),  # the container's and one more
    ({**IN_A_CONTAINER, "Seccomp": "1"}, IN_A_CONTAINER, "seccomp"),  # strict mode
    ({k: v for k, v in IN_A_CONTAINER.items() if k != "Seccomp_filters"},
     {k: v for k, v in IN_A_CONTAINER.items() if k != "Seccomp_filters"}, "seccomp"),  # counts unknown (< 5.9)
    ({**PLAIN, "NSpid": "4242 2"}, PLAIN, "pid namespace"),
    ({**PLAIN, "CapBnd": "0000000000000000"}, PLAIN, "capabilities"),
])
def test_a_confined_peer_is_named_with_the_reason(theirs: dict[str, str], own: dict[str, str], said: str) -> None:
    reason = peers.confinement(theirs, own)
    assert reason is not None and said in reason


@pytest.mark.parametrize(("theirs", "own"), [
    (PLAIN, PLAIN),
    (IN_A_CONTAINER, IN_A_CONTAINER),  # Docker's default profile: every process has it, the server too
    ({**PLAIN, "CapBnd": "000001ffffffffff"}, {**PLAIN, "CapBnd": "00000000a80425fb"}),  # holds more than it
])
def test_a_peer_as_free_as_the_server_is_served(theirs: dict[str, str], own: dict[str, str]) -> None:
    assert peers.confinement(theirs, own) is None


def test_this_process_status_is_read() -> None:
    status = peers.process_status("self")
    assert status["Pid"] == str(os.getpid()) and "NoNewPrivs" in status


def test_a_loaded_file_changed_in_place_or_gone_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "yeetui_test_loaded.py").write_text("A = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("yeetui_test_loaded")
    try:
        files = loaded_files()
    finally:
        del sys.modules["yeetui_test_loaded"]
    module = str(tmp_path / "yeetui_test_loaded.py")
    assert peers.__file__ in files and os.__file__ in files  # yeetui's own, the standard library's, site-packages'
    assert module in files
    ours = {module: files[module]}
    assert changed_file(ours) is None
    os.utime(module, ns=(1, 1))
    assert changed_file(ours) == module
    os.unlink(module)
    assert changed_file(ours) == module


def _build_files(folder: Path, key: str) -> list[Path]:
    files = [folder / f"warm-{key}.{suffix}" for suffix in ("sock", "lock", "log")]
    for path in files:
        path.write_text("")
    return files


def test_only_files_of_ended_builds_servers_are_removed(tmp_path: Path) -> None:
    """Another build's ended server: its socket, lock and log go. This build's stay, so do those of a server
    whose lock is held (it lives), and a link in a server file's place is removed as a link, never followed."""
    ended = _build_files(tmp_path, "1" * 16)
    mine = _build_files(tmp_path, "2" * 16)
    living = _build_files(tmp_path, "3" * 16)
    linked = tmp_path / f"warm-{'4' * 16}.log"
    target = tmp_path / "elsewhere"
    target.write_text("someone's")
    (tmp_path / f"warm-{'4' * 16}.lock").write_text("")
    linked.symlink_to(target)
    other = tmp_path / "warm-server-notes.txt"
    other.write_text("")
    held = os.open(living[1], os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        removed = remove_stale(tmp_path, keep="2" * 16)
    finally:
        os.close(held)
    assert sorted(removed) == sorted([p.name for p in ended] + [f"warm-{'4' * 16}.lock"])
    assert not any(p.exists() for p in ended)
    assert all(p.exists() for p in (*mine, *living, other, target)) and linked.is_symlink()


def test_a_server_whose_lock_file_was_removed_as_it_took_it_takes_the_new_one(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The interleaving forced: a server opens its build's lock as `remove_stale` removes it. Locking the removed
    file would let a second server take a new one: it opens the lock again and holds the one at the path."""
    where = Place(tmp_path / "warm-k.sock", tmp_path / "warm-k.lock")
    real_flock = fcntl.flock
    removed: list[int] = []

    def flock(fd: int, operation: int) -> None:
        if not removed:
            removed.append(fd)
            os.unlink(where.lock)  # what a remover does once the lock is free
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    held = listen(where)
    assert held is not None
    listener, lock = held
    try:
        assert os.fstat(lock).st_ino == os.stat(where.lock).st_ino
        assert server_alive(where)
    finally:
        listener.close()
        os.close(lock)
