"""The type checker passes: mypy, strict, over the whole package (settings in pyproject.toml).

Run as a test so the README's one test command checks the types too (`mypy` from the project root says the
same). In a subprocess: mypy is a program with its own cache, not a library to import into pytest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(600)
def test_mypy_strict_passes() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=590)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout
