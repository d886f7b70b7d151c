"""Fixtures shared by the TUI tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory for the app; provider retries without back-off delays."""
    monkeypatch.setenv("YEETUI_RETRY__BASE_DELAY", "0")
    root = tmp_path / "project"
    root.mkdir()
    return root
