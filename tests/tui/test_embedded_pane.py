"""The embedded pane: a real tmux window shown inside a Textual app through `tmux attach` on a pty and pyte;
keys go to it while it has focus, ctrl+] gives the focus back, closing it leaves no process or descriptor."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input

from tests.processes import gone
from tests.waiting import pilot_until
from yeetui.system.terminals import attach_argv
from yeetui.tui.widgets.embedded_pane import EmbeddedPane, key_bytes

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_keys_become_what_a_terminal_sends() -> None:
    assert key_bytes("enter", "\r") == b"\r" and key_bytes("up", None) == b"\x1b[A"
    assert key_bytes("ctrl+c", None) == b"\x03" and key_bytes("a", "a") == b"a" and key_bytes("é", "é") == "é".encode()
    assert key_bytes("f13", None) is None


class PaneApp(App[None]):
    def __init__(self, argv: list[str]) -> None:
        super().__init__()
        self.argv = argv
        self.released = 0

    def compose(self) -> ComposeResult:
        yield Input(id="composer")
        yield EmbeddedPane(self.argv, env={k: v for k, v in os.environ.items() if k != "TMUX"}, title="w")

    def on_embedded_pane_released(self) -> None:
        self.released += 1
        self.query_one(Input).focus()


@pytest.fixture
def window() -> Iterator[str]:
    """A private tmux server with one window running `cat`: its name."""
    name = f"yeetui-embed-{os.getpid()}"
    subprocess.run(["tmux", "-L", name, "-f", "/dev/null", "new-session", "-d", "-s", "yeetui", "-n", "w",
                    "sh", "-c", "echo EMBED-READY; exec cat"], check=True)
    yield name
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True)


async def test_a_tmux_window_lives_in_the_pane(window: str) -> None:
    fds = len(os.listdir(f"/proc/{os.getpid()}/fd"))
    app = PaneApp(attach_argv(window, "yeetui:w"))
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(EmbeddedPane)
        await pilot_until(pilot, lambda: "EMBED-READY" in pane.text(), timeout=20)
        pane.focus()
        await pilot.press("h", "i", "enter")
        await pilot_until(pilot, lambda: pane.text().count("hi") >= 2, timeout=20)  # typed, then cat's echo
        await pilot.press("ctrl+right_square_bracket")
        await pilot_until(pilot, lambda: app.released == 1 and app.focused is app.query_one(Input))
        await pilot.press("x")  # the composer has the keys again
        assert app.query_one(Input).value == "x" and pane.text().count("x") == 0
        client = pane.client
        assert client is not None and client.process is not None
        pid = client.process.pid
        await pane.remove()
        assert gone(pid)
    assert len(os.listdir(f"/proc/{os.getpid()}/fd")) <= fds
