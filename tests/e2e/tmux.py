"""A small driver for end-to-end tests: the real `yeetui` binary in a private tmux server, driven by keys.

Each `Tmux` owns one tmux server on its own socket (`-S <private dir>/sock`) started with an empty config,
so the user's ~/.tmux.conf and other servers are never touched. The app runs in a detached session of fixed
size; tests type with `send` / `press` (tmux key names) and read the screen with `screen()` / `wait_for()`.
`remain-on-exit` keeps the pane after the app exits, so a crash traceback stays readable and `exited()` /
`wait_exit()` can tell that (and how) the process ended.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

POLL = 0.1
"""Seconds between screen captures in `wait_for`."""
_CONFIG = """\
set -g default-terminal xterm-256color
set -g remain-on-exit on
set -g status off
set -g escape-time 0
set -g history-limit 2000
"""


def tmux_path() -> str | None:
    """The tmux executable, or None when it is not installed."""
    return shutil.which("tmux")


def flat(text: str) -> str:
    """The screen with box-drawing borders removed and all whitespace runs collapsed to one space, so a
    phrase that the app wrapped over two lines (or that sits inside a panel border) still matches."""
    return re.sub(r"\s+", " ", re.sub(r"[\u2500-\u259f]", " ", text)).strip()


class Tmux:
    """One private tmux server running one command in a `width`×`height` window."""

    def __init__(self, width: int = 110, height: int = 32) -> None:
        executable = tmux_path()
        if executable is None:
            raise RuntimeError("tmux is not installed (not found on PATH); the e2e tests need it.")
        self.executable = executable
        self.width, self.height = width, height
        # A short private dir: unix socket paths must stay under ~100 bytes, pytest's tmp_path may not.
        self.dir = Path(tempfile.mkdtemp(prefix="yeetui-tmux-"))
        self.socket = self.dir / "sock"
        self.config = self.dir / "tmux.conf"
        self.config.write_text(_CONFIG, encoding="utf-8")
        self.session = "e2e"
        self._env: dict[str, str] = {}
        self.started = False
        self.pid = 0

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> None:
        """Start the server and run `argv` in `cwd` with exactly `env`, plus TERM=xterm-256color and
        PYTHONFAULTHANDLER=1 (a crash or `dump_stacks` prints the Python stacks into the pane)."""
        self._env = {**env, "TERM": "xterm-256color", "PYTHONFAULTHANDLER": "1"}
        self._env.pop("TMUX", None)  # not nested in the tmux the tests may have been started from
        command = "exec " + shlex.join(argv)
        self._tmux("new-session", "-d", "-s", self.session, "-x", str(self.width), "-y", str(self.height),
                   "-c", str(cwd), command)
        self.started = True
        self.pid = int(self.pane("pane_pid")[0])  # the app itself: `exec` replaced the pane's shell
        # A detached session: without a client the window keeps the size it was made with.
        self._tmux("resize-window", "-t", self.session, "-x", str(self.width), "-y", str(self.height))

    def kill(self) -> None:
        """Stop the server (and with it the app) and remove the private dir; safe to call twice."""
        if self.started:
            subprocess.run([self.executable, "-S", str(self.socket), "kill-server"], capture_output=True,
                           timeout=10, check=False)
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Tmux:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()

    # -- input -------------------------------------------------------------------------------------

    def send(self, text: str, *keys: str) -> None:
        """Type `text` literally in one send-keys call; with `keys` (e.g. "Enter") they go in the SAME call,
        as one burst, the way a fast typist or a paste delivers them."""
        if keys:
            # Without -l tmux looks each argument up as a key name first; a phrase with spaces is no key
            # name, so it is typed as is, and the key names after it are pressed.
            if _is_key_name(text):
                raise ValueError(f"send({text!r}, …): the text would be read as a tmux key name; use press().")
            self._tmux("send-keys", "-t", self.session, "--", text, *keys)
        else:
            self._tmux("send-keys", "-t", self.session, "-l", "--", text)

    def press(self, *keys: str) -> None:
        """Press tmux keys by name (Enter, Escape, F2, C-s, C-q …), in one send-keys call."""
        self._tmux("send-keys", "-t", self.session, *keys)

    def resize(self, width: int, height: int) -> None:
        self._tmux("resize-window", "-t", self.session, "-x", str(width), "-y", str(height))
        self.width, self.height = width, height

    # -- output ------------------------------------------------------------------------------------

    def screen(self) -> str:
        """The visible pane as plain text, one line per row."""
        return self._tmux("capture-pane", "-p", "-t", self.session).stdout

    def pane(self, *fields: str) -> list[str]:
        """Format fields of the pane, e.g. `pane_dead`, `pane_dead_status`, `pane_width` ("" when unset)."""
        fmt = "\t".join(f"#{{{field}}}" for field in fields)
        line = self._tmux("list-panes", "-t", self.session, "-F", fmt).stdout.rstrip("\n")
        return line.split("\t")

    def exited(self) -> bool:
        return self.pane("pane_dead") == ["1"]

    def wait_for(self, what: str | Callable[[str], bool], timeout: float = 15.0, *, why: str = "") -> str:
        """Poll the screen every 0.1 s until it shows `what` (a phrase, matched on `flat()` text too) or
        `what(screen)` is true; return that screen. On timeout fail with the last screen in the message."""
        check: Callable[[str], bool]
        if isinstance(what, str):
            phrase = what

            def shows(screen: str) -> bool:
                return phrase in screen or flat(phrase) in flat(screen)

            check, label = shows, repr(phrase)
        else:
            check, label = what, getattr(what, "__name__", "condition")
        deadline = time.monotonic() + timeout
        screen = ""
        while True:
            screen = self.screen()
            if check(screen):
                return screen
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL)
        dead = " (the app has exited)" if self.exited() else ""
        raise AssertionError(f"timed out after {timeout:g}s waiting for {label}{' — ' + why if why else ''}"
                             f"{dead}; last screen ({self.width}×{self.height}):\n{_framed(screen)}")

    def wait_until_gone(self, phrase: str, timeout: float = 10.0) -> str:
        def gone(screen: str) -> bool:
            return phrase not in screen and flat(phrase) not in flat(screen)

        gone.__name__ = f"{phrase!r} to disappear"
        return self.wait_for(gone, timeout)

    def wait_exit(self, timeout: float = 10.0) -> int:
        """Wait for the app's process to end; return its exit status (minus the signal number if killed).

        tmux reports the status once it has reaped the child; tmux 3.3a here sometimes leaves the exited app
        a zombie for good (pane dead, no status), so a zombie's status is read from /proc/<pid>/stat."""
        deadline = time.monotonic() + timeout
        while True:
            dead, status, killed_by = self.pane("pane_dead", "pane_dead_status", "pane_dead_signal")
            if dead == "1" and (status or killed_by):
                return int(status) if status else -int(killed_by)
            if (code := _zombie_status(self.pid)) is not None:
                return code
            if time.monotonic() >= deadline:
                screen = self.screen()
                raise AssertionError(f"the app did not exit within {timeout:g}s; last screen:\n{_framed(screen)}"
                                     f"\n{self.dump_stacks()}")
            time.sleep(POLL)

    def dump_stacks(self) -> str:
        """For a hung app: SIGABRT it so faulthandler (PYTHONFAULTHANDLER=1, set by `start`) prints every
        thread's Python stack into the pane; return that text (the pane's scrollback)."""
        if self.exited() or _zombie_status(self.pid) is not None:
            return "(the app's process has ended)"
        try:
            os.kill(self.pid, signal.SIGABRT)
        except ProcessLookupError:
            return "(the app ended before its stacks could be dumped)"
        deadline = time.monotonic() + 5
        while not self.exited() and time.monotonic() < deadline:
            time.sleep(POLL)
        dump = self._tmux("capture-pane", "-p", "-J", "-S", "-", "-t", self.session).stdout.strip()
        return f"Python stacks of the hung app (pid {self.pid}, after SIGABRT):\n{_framed(dump)}"

    # -- plumbing ----------------------------------------------------------------------------------

    def _tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [self.executable, "-S", str(self.socket), "-f", str(self.config), *args]
        done = subprocess.run(cmd, env=self._env or None, capture_output=True, text=True, timeout=10,
                              check=False)
        if done.returncode != 0:
            raise RuntimeError(f"tmux {args[0]} failed (exit {done.returncode}): {done.stderr.strip()}")
        return done


_KEY_NAME = re.compile(
    r"(?:[CMS]-)+.+|F[0-9]{1,2}|KP.*|Enter|Escape|Tab|BTab|BSpace|Space|Up|Down|Left|Right|Home|End|"
    r"IC|DC|Insert|Delete|PageUp|PgUp|PPage|PageDown|PgDn|NPage|Any",
    re.IGNORECASE,
)


def _is_key_name(text: str) -> bool:
    """Whether tmux would read `text` (as a send-keys argument without -l) as a key name, not as text."""
    return bool(_KEY_NAME.fullmatch(text))


def _zombie_status(pid: int) -> int | None:
    """The exit status of `pid` if it has exited but is not yet reaped (a zombie), else None.
    Field 52 of /proc/<pid>/stat is the wait status (Linux ≥ 3.5)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # fields 3… (the command name may hold spaces)
    if fields[0] != "Z" or len(fields) < 50:
        return None
    return os.waitstatus_to_exitcode(int(fields[49]))


def _framed(screen: str) -> str:
    return "\n".join(f"|{line}" for line in screen.rstrip("\n").split("\n"))
