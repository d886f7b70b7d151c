"""The layers and the UI seam, as written in pyproject.toml's import-linter contracts, hold for the code.

Run as a test so the README's one test command checks them too (`lint-imports` from the project root says
the same with more detail). It runs in a subprocess: import-linter reconfigures logging, which would
silence the loggers later tests capture."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_hold() -> None:
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout
