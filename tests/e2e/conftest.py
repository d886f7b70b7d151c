"""Fixtures for the tmux end-to-end tests: a temp project dir and a launcher for the real `yeetui` binary.

The app inherits this test's environment as it is when `launch()` is called: the private YEETUI_CONFIG_DIR /
YEETUI_DATA_DIR from tests/conftest.py, the fake server's base URLs and keys when the test asked for
`fake_env`, and PYTHONPATH with the network guard (tests/netguard.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.tmux import Tmux, tmux_path

Launch = Callable[..., Tmux]


_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Remember whether the test body failed, so `launch` can print the app's screen and log then."""
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The app's working directory: a small project with one file."""
    monkeypatch.setenv("YEETUI_RETRY__BASE_DELAY", "0")
    root = tmp_path / "project"
    root.mkdir()
    (root / "test_login.py").write_text("def test_login():\n    assert True\n", encoding="utf-8")
    return root


@pytest.fixture
def launch(project: Path, request: pytest.FixtureRequest) -> Iterator[Launch]:
    """`launch(*args, width=110, height=32)` starts `<venv python> -m yeetui *args` in a private tmux server
    and waits for the main screen (the composer); every server is killed at teardown."""
    if tmux_path() is None:
        pytest.skip("tmux is not installed (not found on PATH); the e2e tests drive the real app inside it")
    started: list[Tmux] = []

    def start(*args: str, width: int = 110, height: int = 32, ready: str | None = "Message yeetui") -> Tmux:
        tmux = Tmux(width, height)
        started.append(tmux)
        tmux.start([sys.executable, "-m", "yeetui", *args], cwd=project, env=dict(os.environ))
        if ready:
            tmux.wait_for(ready, timeout=20, why="the main screen with its composer")
        return tmux

    yield start
    for tmux in started:
        if request.node.stash.get(_FAILED, False):
            _report(tmux)
        tmux.kill()


def _report(tmux: Tmux) -> None:
    """On failure: print the final screen and the app's log tail (shown in pytest's captured output)."""
    try:
        screen = tmux.screen()
    except RuntimeError as exc:
        screen = f"(no screen: {exc})"
    print(f"--- final screen ({tmux.width}×{tmux.height}) ---\n{screen}")
    log = Path(os.environ.get("YEETUI_DATA_DIR", "")) / "logs" / "yeetui.log"
    if log.is_file():
        print("--- yeetui.log (tail) ---\n" + "\n".join(log.read_text(errors="replace").splitlines()[-40:]))
