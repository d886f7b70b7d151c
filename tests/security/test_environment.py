"""Class 7 (in part): nothing planted in a repository's files reaches yeetui's environment. litellm loads a
`.env` found above its install dir when imported in its default mode — with the virtualenv inside a
cloned repository, the repository's own `.env`, whose `OPENAI_BASE_URL` would then receive the user's key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
        env = {k: v for k, v in __import__("os").environ.items() if k not in ("LITELLM_MODE", "OPENAI_BASE_URL")}
        done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120,
                              env=env, cwd=planted.parent)
    finally:
        planted.unlink()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["absent", "absent"]
