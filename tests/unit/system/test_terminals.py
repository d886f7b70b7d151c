"""Showing a pane to the user: inside their tmux a split attached to yeetui's server (real tmux), else a
terminal emulator from a small table, else the command to type."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from yeetui.system.terminals import emulator_argv, open_shell, show_window


def _which(*present: str):
    return lambda name: f"/usr/bin/{name}" if name in present else None


def test_terminal_table() -> None:
    graphical = {"DISPLAY": ":0"}
    assert emulator_argv("tmux attach", graphical, which=_which("kitty"), platform="linux") == \
        ["kitty", "sh", "-c", "tmux attach"]
    assert emulator_argv("x", graphical, which=_which("gnome-terminal", "xterm"), platform="linux")[:2] == \
        ["gnome-terminal", "--"]
    assert emulator_argv("x", {**graphical, "TERMINAL": "alacritty"}, which=_which("alacritty", "kitty"),
                         platform="linux") == ["alacritty", "-e", "sh", "-c", "x"]
    assert emulator_argv("x", {}, which=_which("kitty"), platform="linux") is None  # no display: no window
    assert emulator_argv("x", graphical, which=_which(), platform="linux") is None
    mac = emulator_argv('tmux -L s attach -t "a"', {}, which=_which(), platform="darwin")
    assert mac is not None and mac[0] == "osascript" and 'do script "tmux -L s attach -t \\"a\\""' in mac[2]


def test_without_tmux_or_a_terminal_the_command_is_shown() -> None:
    shown = show_window("yeetui-abc", "yeetui:oracle-1", env={}, which=_which(), platform="linux")
    assert shown.how == "command" and shown.detail == "tmux -L yeetui-abc attach-session -t yeetui:oracle-1"


def test_an_emulator_is_started_detached() -> None:
    started: list[list[str]] = []
    shown = show_window("s", "yeetui:w", env={"DISPLAY": ":0"}, which=_which("kitty"), platform="linux",
                        popen=lambda argv, **kw: started.append(argv))
    assert shown.how == "terminal" and started[0][:3] == ["kitty", "sh", "-c"]
    assert "attach-session -t yeetui:w" in started[0][3] and "env -u TMUX" in started[0][3]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_inside_the_users_tmux_the_pane_opens_as_a_split() -> None:
    base = Path(tempfile.mkdtemp(prefix="yeetui-t-"))
    user_sock, ours = base / "user", f"yeetui-test-{base.name}"
    try:
        subprocess.run(["tmux", "-S", str(user_sock), "-f", "/dev/null", "new-session", "-d", "-s", "u", "-x", "120",
                        "-y", "30", "sh"], check=True)
        subprocess.run(["tmux", "-L", ours, "-f", "/dev/null", "new-session", "-d", "-s", "yeetui", "-n", "oracle-1",
                        "sh", "-c", "echo ORACLE-PANE-TEXT; sleep 60"], check=True)
        pid = subprocess.run(["tmux", "-S", str(user_sock), "display-message", "-p", "#{pid}"], check=True,
                             capture_output=True, text=True).stdout.strip()
        shown = show_window(ours, "yeetui:oracle-1", env={"TMUX": f"{user_sock},{pid},0", "PATH": "/usr/bin:/bin"})
        assert shown.how == "tmux-split"
        deadline = time.monotonic() + 20
        while True:
            panes = subprocess.run(["tmux", "-S", str(user_sock), "list-panes", "-t", "u", "-F", "#{pane_id}"],
                                   capture_output=True, text=True).stdout.split()
            screen = subprocess.run(["tmux", "-S", str(user_sock), "capture-pane", "-p", "-t", panes[-1]],
                                    capture_output=True, text=True).stdout
            if len(panes) == 2 and "ORACLE-PANE-TEXT" in screen:
                break
            assert time.monotonic() < deadline, f"the split never showed the pane: {panes} {screen!r}"
            time.sleep(0.1)
    finally:
        subprocess.run(["tmux", "-S", str(user_sock), "kill-server"], capture_output=True)
        subprocess.run(["tmux", "-L", ours, "kill-server"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def test_a_worktree_shell_without_tmux_or_a_terminal_is_the_cd_to_type(tmp_path: Path) -> None:
    odd = tmp_path / "work tree; rm -rf ~"
    shown = open_shell(odd, env={}, which=_which(), platform="linux")
    assert shown.how == "command" and shown.detail == f"cd '{odd}'"
    started: list[list[str]] = []
    shown = open_shell(odd, env={"DISPLAY": ":0"}, which=_which("kitty"), platform="linux",
                       popen=lambda argv, **kw: started.append(argv))
    assert shown.how == "terminal" and started[0][:3] == ["kitty", "sh", "-c"]
    assert started[0][3] == f"cd '{odd}' && exec \"${{SHELL:-sh}}\""  # the path quoted, never run as code


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_inside_the_users_tmux_a_worktree_shell_opens_as_a_split_there(tmp_path: Path) -> None:
    user_sock = Path(tempfile.mkdtemp(prefix="yeetui-t-")) / "user"
    try:
        subprocess.run(["tmux", "-S", str(user_sock), "-f", "/dev/null", "new-session", "-d", "-s", "u", "-x", "120",
                        "-y", "30", "sh"], check=True)
        pid = subprocess.run(["tmux", "-S", str(user_sock), "display-message", "-p", "#{pid}"], check=True,
                             capture_output=True, text=True).stdout.strip()
        shown = open_shell(tmp_path, env={"TMUX": f"{user_sock},{pid},0", "PATH": "/usr/bin:/bin"})
        assert shown.how == "tmux-split"
        paths = subprocess.run(["tmux", "-S", str(user_sock), "list-panes", "-t", "u", "-F", "#{pane_start_path}"],
                               capture_output=True, text=True).stdout.split("\n")
        assert str(tmp_path) in paths
    finally:
        subprocess.run(["tmux", "-S", str(user_sock), "kill-server"], capture_output=True)
        shutil.rmtree(user_sock.parent, ignore_errors=True)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_split_opens_beside_yeetui_when_the_user_has_another_window_in_front(tmp_path: Path) -> None:
    """The user switched to a second window while yeetui runs in the first: the split is of yeetui's window
    (`$TMUX_PANE`), not of whichever window is active."""
    user_sock = Path(tempfile.mkdtemp(prefix="yeetui-t-")) / "user"
    tmux = ["tmux", "-S", str(user_sock)]
    try:
        subprocess.run([*tmux, "-f", "/dev/null", "new-session", "-d", "-s", "u", "-x", "120", "-y", "30", "sh"],
                       check=True)
        ours = subprocess.run([*tmux, "display-message", "-p", "-t", "u:0", "#{pane_id}"], check=True,
                              capture_output=True, text=True).stdout.strip()
        subprocess.run([*tmux, "new-window", "-t", "u", "sh"], check=True)  # now the active window
        pid = subprocess.run([*tmux, "display-message", "-p", "#{pid}"], check=True, capture_output=True,
                             text=True).stdout.strip()
        shown = open_shell(tmp_path, env={"TMUX": f"{user_sock},{pid},0", "TMUX_PANE": ours, "PATH": "/usr/bin:/bin"})
        assert shown.how == "tmux-split"
        counts = subprocess.run([*tmux, "list-windows", "-t", "u", "-F", "#{window_index}:#{window_panes}"],
                                capture_output=True, text=True).stdout.split()
        assert counts == ["0:2", "1:1"], counts
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
        shutil.rmtree(user_sock.parent, ignore_errors=True)
