"""When the Landlock sandbox cannot start, `yeetui doctor` and the wrapper name the real cause — the ABI the
kernel has, the system call that failed and its errno — not a guess ("Landlock needs Linux 5.13+" on a kernel
that has Landlock ABI 7). Each cause is made real: the probe runs under a seccomp filter that fails one of
Landlock's system calls with that errno, as a container's filter or a disabled LSM would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from yeetui.system import sandbox

ROOT = Path(__file__).resolve().parents[2]
_CREATE_RULESET, _RESTRICT_SELF = 444, 446
_EPERM, _ENOSYS, _EOPNOTSUPP = 1, 38, 95

_UNDER_FILTER = r"""
import ctypes, os, sys
sys.path.insert(0, {root!r})
from yeetui.system.sandbox import preexec as sandbox
lib = sandbox._libseccomp()
ctx = lib.seccomp_init(0x7FFF0000)
none = (sandbox._ArgCmp * 1)()
assert lib.seccomp_rule_add_array(ctx, 0x00050000 | {errno}, {syscall}, 0, none) == 0
assert lib.seccomp_load(ctx) == 0
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""


def _under_filter(syscall: int, errno: int, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python ARGV…` with `syscall` failing with `errno`, bubblewrap hidden (so Landlock is what is probed)."""
    env = {**os.environ, sandbox.FALLBACK_ENV: "landlock"}
    script = _UNDER_FILTER.format(root=str(ROOT), errno=errno, syscall=syscall)
    return subprocess.run([sys.executable, "-c", script, *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


CAUSES = [
    (_RESTRICT_SELF, _EPERM, ["landlock_restrict_self", "EPERM", f"ABI {sandbox.landlock_abi()}"]),
    (_CREATE_RULESET, _ENOSYS, ["ENOSYS", "5.13", "seccomp"]),
    (_CREATE_RULESET, _EOPNOTSUPP, ["EOPNOTSUPP", "disabled", "lsm="]),
]


@pytest.mark.skipif(not (sandbox.landlock_abi() >= 1 and sandbox.seccomp_available()),
                    reason="needs Landlock and libseccomp to fake a failure of Landlock")
@pytest.mark.parametrize(("syscall", "errno", "said"), CAUSES)
def test_doctor_names_why_landlock_does_not_work(tmp_path: Path, syscall: int, errno: int, said: list[str]) -> None:
    done = _under_filter(syscall, errno, "-P", "-m", "yeetui", "doctor", "--json", cwd=tmp_path)
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    detail = checks["sandbox"]["detail"]
    assert checks["sandbox"]["state"] == "missing", detail
    for words in said:
        assert words in detail, detail
    if syscall == _RESTRICT_SELF:
        assert "5.13" not in detail, detail  # the kernel has Landlock: its version is not the cause


@pytest.mark.skipif(not (sandbox.landlock_abi() >= 1 and sandbox.seccomp_available()),
                    reason="needs Landlock and libseccomp to fake a failure of Landlock")
def test_the_wrapper_says_which_call_failed_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    argv = sandbox.wrap_readonly(["/bin/sh", "-c", f"echo x > {marker}"], tmp_path, private_tmp=tmp_path,
                                 mechanism="landlock")
    done = _under_filter(_RESTRICT_SELF, _EPERM, *argv[1:], cwd=tmp_path)
    assert done.returncode == 126 and not marker.exists()
    assert "landlock_restrict_self" in done.stderr and "EPERM" in done.stderr, done.stderr
