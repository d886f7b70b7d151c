"""Showing a tmux window of yeetui's private server to the user (or a shell in a subagent's worktree): a split
of the user's own tmux when yeetui runs inside it, else a new terminal window, else the command to type.

One small table says how each emulator runs a command; `$TERMINAL` wins, then the first one installed.
Nothing here waits for the window: the emulator is started detached, in its own session.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Which = Callable[[str], "str | None"]
"""`shutil.which`, or a test's stand-in."""
Run = Callable[..., "subprocess.CompletedProcess[Any]"]
"""`subprocess.run`, or a test's stand-in."""
Popen = Callable[..., Any]
"""`subprocess.Popen`, or a test's stand-in."""

Opened = Literal["tmux-split", "tmux-window", "terminal", "command"]

_EMULATORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("x-terminal-emulator", ("-e",)),
    ("kitty", ()),
    ("wezterm", ("start", "--")),
    ("alacritty", ("-e",)),
    ("gnome-terminal", ("--",)),
    ("konsole", ("-e",)),
    ("xterm", ("-e",)),
)
"""Emulator → the arguments before the command it runs (`sh -c COMMAND` follows)."""


@dataclass(frozen=True)
class Shown:
    how: Opened
    detail: str
    """What was started (the emulator), or the command for the user to type."""


def attach_argv(server: str, target: str) -> list[str]:
    """`tmux -L SERVER attach -t TARGET`, runnable from inside another tmux (TMUX unset for it)."""
    return ["env", "-u", "TMUX", "tmux", "-L", server, "attach-session", "-t", target]


def emulator_argv(command: str, env: Mapping[str, str] | None = None, *,
                  which: Which = shutil.which, platform: str = sys.platform) -> list[str] | None:
    """How to open a terminal window running `command` here, or None when no emulator is found."""
    env = os.environ if env is None else env
    wrapped = ["sh", "-c", command]
    chosen = env.get("TERMINAL", "").strip()
    if chosen and which(shlex.split(chosen)[0]):
        name = os.path.basename(shlex.split(chosen)[0])
        extra = dict(_EMULATORS).get(name, ("-e",))
        return [*shlex.split(chosen), *extra, *wrapped]
    if platform == "darwin":
        app = "iTerm" if env.get("TERM_PROGRAM") == "iTerm.app" else "Terminal"
        script = command.replace("\\", "\\\\").replace('"', '\\"')
        if app == "iTerm":
            return ["osascript", "-e", f'tell application "iTerm" to create window with default profile command '
                    f'"{script}"']
        return ["osascript", "-e", f'tell application "Terminal" to do script "{script}"']
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        return None  # no graphical session: a terminal window cannot open
    for name, extra in _EMULATORS:
        if which(name):
            return [name, *extra, *wrapped]
    return None


def show_window(server: str, target: str, *, env: Mapping[str, str] | None = None, prefer: str = "split",
                run: Run = subprocess.run, popen: Popen = subprocess.Popen, which: Which = shutil.which,
                platform: str = sys.platform) -> Shown:
    """Put the window `target` of tmux server `server` in front of the user, the best way available."""
    env = dict(os.environ if env is None else env)
    attach = attach_argv(server, target)
    command = shlex.join(attach)
    if env.get("TMUX") and which("tmux"):
        how: Opened = "tmux-split" if prefer == "split" else "tmux-window"
        verb = ["split-window", "-h", *_beside_yeetui(env)] if how == "tmux-split" else ["new-window"]
        done = run(["tmux", *verb, command], env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False)
        if done.returncode == 0:
            return Shown(how, command)
    argv = emulator_argv(command, env, which=which, platform=platform)
    if argv is not None and _start_detached(argv, env, popen):
        return Shown("terminal", argv[0])
    return Shown("command", shlex.join(["tmux", "-L", server, "attach-session", "-t", target]))


def open_shell(path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None, run: Run = subprocess.run,
               popen: Popen = subprocess.Popen, which: Which = shutil.which, platform: str = sys.platform) -> Shown:
    """A shell in `path` (a subagent's worktree) for the user: a split of their tmux, a terminal window, or the
    `cd` to type."""
    env = dict(os.environ if env is None else env)
    where = os.fspath(path)
    cd = f"cd {shlex.quote(where)}"
    if env.get("TMUX") and which("tmux"):
        done = run(["tmux", "split-window", "-h", *_beside_yeetui(env), "-c", where], env=env, stdin=subprocess.DEVNULL,
                   capture_output=True, check=False)
        if done.returncode == 0:
            return Shown("tmux-split", cd)
    argv = emulator_argv(f'{cd} && exec "${{SHELL:-sh}}"', env, which=which, platform=platform)
    if argv is not None and _start_detached(argv, env, popen):
        return Shown("terminal", argv[0])
    return Shown("command", cd)


def _beside_yeetui(env: Mapping[str, str]) -> list[str]:
    """`-t` yeetui's own tmux pane: without it tmux splits whichever window is active, which is another one when
    the user switched windows while yeetui runs."""
    pane = env.get("TMUX_PANE")
    return ["-t", pane] if pane else []


def _start_detached(argv: list[str], env: Mapping[str, str], popen: Popen) -> bool:
    try:
        popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
              start_new_session=True)
    except OSError:
        return False
    return True
