"""SECURITY.md proves each claim with a test: every layer of its threat table names at least one, and every test
it names exists (a renamed or deleted test would leave a claim unproved without anyone noticing)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
NAMED = re.compile(r"`(tests/[\w/.]+\.py)(?:::\w+)?`")


def _layers() -> list[tuple[str, str]]:
    """(layer, the rest of its row) for each row of the threat table (the one headed `Layer`)."""
    rows: list[tuple[str, str]] = []
    inside = False
    for line in TEXT.splitlines():
        if line.startswith("| Layer "):
            inside = True
            continue
        if inside and not line.startswith("|"):
            break
        if inside and not line.startswith("|---"):
            cells = line.strip("|").split("|", 1)
            rows.append((cells[0].strip(), cells[1] if len(cells) > 1 else ""))
    return rows


def test_every_test_security_md_names_exists() -> None:
    missing = sorted({path for path in NAMED.findall(TEXT) if not (ROOT / path).is_file()})
    assert not missing, f"SECURITY.md names tests that do not exist: {missing}"


def test_every_layer_of_the_threat_table_names_a_test() -> None:
    layers = _layers()
    assert len(layers) >= 15, "the threat table was not found"
    unproved = [layer for layer, rest in layers if not NAMED.search(rest)]
    assert not unproved, f"SECURITY.md layers without a test: {unproved}"
