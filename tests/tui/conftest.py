"""Fixtures shared by the TUI tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tui.deliberate import SettleClock
from yeetui.tui.screens.deliberate import DeliberateScreen
from yeetui.tui.textual_workarounds import release_styles_caches


@pytest.fixture(autouse=True)
def _no_lines_kept_between_apps() -> Iterator[None]:
    """Let go of the lines the test's app drew once it is done. Textual keeps the styles cache of the last
    1,024 widgets drawn, in any app, and through it every line each one last drew (`release_styles_caches`):
    ~20,000 `Strip`s and 130,000 small caches a worker would carry from test to test, and walk in each full
    collection. The app itself frees them the same way (`gc_pacing.collect_fully`)."""
    yield
    release_styles_caches()


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
