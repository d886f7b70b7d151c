"""Class 7 (in part): keys stay where agents cannot reach them. Nothing planted in a repository's files
reaches yeetui's environment (litellm loads a `.env` found above its install dir when imported in its default
mode — with the virtualenv inside a cloned repository, the repository's own, whose `OPENAI_BASE_URL` would
then receive the user's key), and an agent's command cannot read yeetui's own environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import as_unprivileged_user

PROBE = ("from yeetui.providers.litellm import _import_litellm; _import_litellm(); import os; "
         "print(os.environ.get('YEETUI_PLANTED', 'absent'), os.environ.get('OPENAI_BASE_URL', 'absent'))")


def test_litellm_never_loads_a_dotenv_above_the_virtualenv() -> None:
    planted = Path(sys.prefix).parent / ".env"  # where a venv inside a cloned repository finds one
    if planted.exists():
        pytest.skip(f"{planted} exists already; not overwriting it")
    try:
        planted.write_text("YEETUI_PLANTED=1\nOPENAI_BASE_URL=http://planted.invalid/v1\n")
    except OSError as exc:
        pytest.skip(f"cannot write {planted}: {exc}")
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("LITELLM_MODE", "OPENAI_BASE_URL")}
        done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120,
                              env=env, cwd=planted.parent)
    finally:
        planted.unlink()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["absent", "absent"]


CHILD = r"""
import os, subprocess, sys
sys.path.insert(0, sys.argv[1])
from yeetui.system.hardening import protect_process
assert protect_process()
read = subprocess.run(["sh", "-c", "cat /proc/$PPID/environ /proc/$PPID/cmdline >/dev/null 2>&1 && "
                       "tr '\\0' '\\n' < /proc/$PPID/environ | grep -c YEETUI_TEST_SECRET || echo unreadable"],
                      capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
print(read.stdout.strip())
"""


def test_a_command_an_agent_runs_cannot_read_yeetui_s_environment() -> None:
    """`cat /proc/$PPID/environ` from an agent's command: yeetui marks itself undumpable, so a process of the
    same (unprivileged) user gets permission denied — the key in yeetui's environment stays out of reach."""
    prefix = as_unprivileged_user()
    if prefix is None:
        pytest.skip("running as root without setpriv and a system python to drop to an unprivileged user")
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([*prefix, "-c", CHILD, root], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ.get("PATH", ""), "YEETUI_TEST_SECRET": "sk-ant-hidden-0123456789"})
    if done.returncode != 0 and "Permission denied" in done.stderr and "yeetui" in done.stderr:
        pytest.skip(f"the unprivileged user cannot read the checkout: {done.stderr[-200:]}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "unreadable"
