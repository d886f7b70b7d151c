"""The warm server's checks, one by one (`yeetui/system/warm.py`, `yeetui/system/peers.py`): which peers count as
confined — compared with the server's own status, so that in a container, where every process has the
container's seccomp filter, workers still fork warm — and which loaded files make a server stale."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

from yeetui.system import peers, warm

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
        files = warm.loaded_files()
    finally:
        del sys.modules["yeetui_test_loaded"]
    module = str(tmp_path / "yeetui_test_loaded.py")
    assert warm.__file__ in files and os.__file__ in files  # yeetui's own, the standard library's, site-packages'
    assert module in files
    ours = {module: files[module]}
    assert warm.changed_file(ours) is None
    os.utime(module, ns=(1, 1))
    assert warm.changed_file(ours) == module
    os.unlink(module)
    assert warm.changed_file(ours) == module
