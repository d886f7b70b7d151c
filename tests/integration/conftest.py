"""Fixtures the integration tests share."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from yeetui import paths
from yeetui.system.tmux import TmuxServer, server_name


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project folder (a test file that needs more in it defines its own)."""
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def data(fake_env: object) -> Iterator[Path]:
    """The data dir of a test whose children run in tmux panes; yeetui's tmux server on it is killed at the end,
    whatever the test left (a child's ended window stays there for reading)."""
    yield paths.data_dir()
    asyncio.run(TmuxServer(server_name(paths.data_dir())).kill_server())
