"""Fixtures the integration tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project folder (a test file that needs more in it defines its own)."""
    root = tmp_path / "project"
    root.mkdir()
    return root
