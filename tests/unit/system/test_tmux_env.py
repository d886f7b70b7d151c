"""A program in one of yeetui's tmux windows sees the window's own size, not a size exported in the shell
yeetui was started from (COLUMNS / LINES override the real size for Python, curses and less)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e.tmux import tmux_path
from yeetui.system.tmux import TmuxServer, server_name

pytestmark = pytest.mark.skipif(tmux_path() is None, reason="tmux is not installed")


async def test_a_window_does_not_inherit_an_exported_terminal_size(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "80", "LINES": "24", "KEPT": "yes"}
    server = TmuxServer(server_name(tmp_path), env=env)
    try:
        pane = await server.open_window("probe", ["sh", "-c", 'echo "[$COLUMNS|$LINES|$KEPT]"; sleep 300'],
                                        cwd=tmp_path)
        deadline = asyncio.get_running_loop().time() + 20
        while "|" not in (text := await server.capture(pane.pane_id)):
            assert asyncio.get_running_loop().time() < deadline, f"the probe never printed: {text!r}"
            await asyncio.sleep(0.05)
        assert "[||yes]" in text
    finally:
        await server.kill_server()
