"""A program on a pseudo-terminal of our own: what the TUI's embedded pane runs (`tmux attach` to a
subagent's window) and reads back, byte for byte, into its terminal emulator.

The child gets a new session whose controlling terminal is the pty, so resizing the pty (`resize`) reaches
it as SIGWINCH like any terminal. Output is read on the event loop (`add_reader` on the master, non-blocking)
and handed to `on_output`; nothing here blocks. `close` kills the child's process group and closes both ends
on every path — a TUI that opens and closes panes all day must not leak descriptors.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import signal
import struct
import subprocess
import termios
from collections.abc import Callable, Mapping, Sequence

READ_CHUNK = 65536


def _take_terminal() -> None:  # runs in the child between fork and exec
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyClient:
    def __init__(self, argv: Sequence[str], *, cols: int, rows: int, env: Mapping[str, str] | None = None,
                 on_output: Callable[[bytes], None], on_exit: Callable[[], None] | None = None) -> None:
        self.argv = list(argv)
        self.env = dict(os.environ if env is None else env)
        self.on_output = on_output
        self.on_exit = on_exit
        self.cols, self.rows = max(cols, 2), max(rows, 2)
        self.master: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        """Start the program on a new pty and begin reading it (call from the event loop's thread)."""
        master, slave = pty.openpty()
        try:
            self._winsize(master)
            self.process = subprocess.Popen(self.argv, stdin=slave, stdout=slave, stderr=slave, env=self.env,
                                            start_new_session=True, preexec_fn=_take_terminal, close_fds=True)
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        self.master = master
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(master, self._readable)

    def _readable(self) -> None:
        if self.master is None:
            return
        try:
            data = os.read(self.master, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:  # EIO: the program exited and the slave side is gone
            data = b""
        if data:
            self.on_output(data)
            return
        self._stop_reading()
        if self.on_exit is not None:
            self.on_exit()

    def write(self, data: bytes) -> None:
        """Send keys to the program; dropped once it has gone."""
        if self.master is None:
            return
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self.master, data)

    def resize(self, cols: int, rows: int) -> None:
        self.cols, self.rows = max(cols, 2), max(rows, 2)
        if self.master is not None:
            with contextlib.suppress(OSError):
                self._winsize(self.master)

    def _winsize(self, fd: int) -> None:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", self.rows, self.cols, 0, 0))

    def _stop_reading(self) -> None:
        if self.master is not None and self._loop is not None:
            with contextlib.suppress(ValueError, RuntimeError):
                self._loop.remove_reader(self.master)

    def close(self) -> None:
        """Kill the program (its whole process group), reap it and close the pty."""
        self._stop_reading()
        if self.process is not None:
            if self.process.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
        if self.master is not None:
            with contextlib.suppress(OSError):
                os.close(self.master)
            self.master = None
