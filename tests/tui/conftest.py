"""Fixtures shared by the TUI tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.deliberate import SettleClock
from yeetui.tui.screens.deliberate import DeliberateScreen


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory for the app; provider retries without back-off delays."""
    monkeypatch.setenv("YEETUI_RETRY__BASE_DELAY", "0")
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def settle_clock(monkeypatch: pytest.MonkeyPatch) -> SettleClock:
    """The clock of the dialogs keys typed ahead cannot answer (trust prompt, confirmations): it stands still
    until the test moves it, so a test gets past their window without sleeping."""
    clock = SettleClock()
    monkeypatch.setattr(DeliberateScreen, "clock", clock)
    return clock
