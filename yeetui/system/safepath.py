"""Race-free path confinement for the tool layer.

Every path a tool touches is first resolved with symlinks (`os.path.realpath`) and must end inside one of
the binding's roots. The resolved path is then *opened relative to a file descriptor of that root*, never by
its absolute name, so a symlink swapped in between the check and the open cannot redirect the open:

- `openat2` (Linux ≥ 5.6): one syscall with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
  RESOLVE_NO_SYMLINKS`. The resolved path contains no symlinks, so any symlink met during the open was
  swapped in after the check and is refused by the kernel.
- `resolve-verify` (fallback): the same walk done in user space, one `O_NOFOLLOW` component at a time from
  the root descriptor, then the opened descriptor is checked against the expected path via /proc.

Writes are also refused into `.git/` and `.yeetui/` anywhere under a root, into `binding.protected`, and
everywhere when `binding.allow_writes` is false. The check runs on the *resolved* path, so `..`, symlinks
and files that do not exist yet are all covered. Hard links are not detectable by path and are out of
scope (making one needs write access that bash in a writable binding already has).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from yeetui.errors import PathEscapeError, ToolError
from yeetui.workspace import PROTECTED_NAMES, WorkspaceBinding

Mechanism = Literal["openat2", "resolve-verify"]

_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE_FLAGS = _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS | _RESOLVE_NO_SYMLINKS
_OPENAT2_NR = {"x86_64": 437, "amd64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437}
"""openat2 has the same number on every architecture using the unified syscall table."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: opening a FIFO must not hang
_EAGAIN_RETRIES = 8


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


@dataclass(frozen=True)
class Target:
    """A path that resolved inside `root`; `rel` holds no `..` and (at check time) no symlinks."""

    root: Path
    rel: PurePosixPath
    real: Path


@functools.cache
def _openat2() -> Callable[..., int] | None:
    """The libc `syscall` entry point if openat2 works here, else None (probed once)."""
    nr = _OPENAT2_NR.get(platform.machine().lower())
    if sys.platform != "linux" or nr is None:
        return None
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long
    syscall.argtypes = (ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t)
    how = _OpenHow(_DIR_FLAGS, 0, _RESOLVE_FLAGS)
    root_fd = os.open("/", _DIR_FLAGS)
    try:
        fd = syscall(nr, root_fd, b".", ctypes.byref(how), ctypes.sizeof(how))
    finally:
        os.close(root_fd)
    if fd < 0:  # ENOSYS (old kernel), EPERM (seccomp), or anything else: use the fallback
        return None
    os.close(fd)
    return functools.partial(syscall, nr)


def confinement_mechanism() -> Mechanism:
    """Which confinement is active on this machine."""
    return "openat2" if _openat2() is not None else "resolve-verify"


# ---------------------------------------------------------------------------------------------- resolve


def _roots_text(binding: WorkspaceBinding) -> str:
    noun = "root" if len(binding.roots) == 1 else "roots"
    return f"{noun} " + ", ".join(str(r) for r in binding.roots)


def locate(binding: WorkspaceBinding, path: str | os.PathLike[str]) -> Target:
    """Resolve `path` (relative to binding.cwd) with symlinks; refuse it unless it ends inside a root."""
    text = os.fspath(path)
    if not text:
        raise ToolError("The path is empty; give a file or directory path relative to the workspace.")
    if "\0" in text:
        raise ToolError(f"The path {text!r} contains a NUL byte.")
    candidate = Path(text)
    real = Path(os.path.realpath(candidate if candidate.is_absolute() else binding.cwd / candidate))
    for root in sorted(binding.roots, key=lambda r: len(r.parts), reverse=True):
        if real == root or root in real.parents:
            return Target(root, PurePosixPath(real.relative_to(root).as_posix()), real)
    raise PathEscapeError(
        f"The path {text!r} resolves to {real}, which is outside the workspace {_roots_text(binding)}. "
        "Tools may only touch files inside the workspace."
    )


def resolve_inside(binding: WorkspaceBinding, path: str | os.PathLike[str]) -> Path:
    """The resolved path, for listing and globbing (open files with the `open_*` helpers)."""
    return locate(binding, path).real


def display_path(binding: WorkspaceBinding, real: Path) -> str:
    """How tools show a path: relative to cwd when inside it, else absolute."""
    if real == binding.cwd:
        return "."
    if binding.cwd in real.parents:
        return real.relative_to(binding.cwd).as_posix()
    return str(real)


_PROTECTED_FOLDED = frozenset(name.casefold() for name in PROTECTED_NAMES)


def check_writable(binding: WorkspaceBinding, target: Target) -> None:
    """Raise unless the binding may write `target` (read-only binding, .git/.yeetui, protected dirs)."""
    if not binding.allow_writes:
        raise ToolError(f"Cannot write {target.real}: this workspace is read-only.")
    # Compared without case: on a case-insensitive filesystem (macOS, Windows) `.GIT/config` is `.git/config`.
    for part in target.rel.parts:
        if part.casefold() in _PROTECTED_FOLDED:
            raise PathEscapeError(
                f"Refusing to write {target.real}: files inside {part}/ are protected and never written by "
                "tools."
            )
    real = str(target.real).casefold()
    for protected in binding.protected:
        if protected in target.root.parents:
            continue  # yeetui put this workspace inside it (a worktree under the data dir): its files are the work
        folded = str(protected).casefold()
        if real == folded or real.startswith(folded.rstrip("/") + "/"):
            raise PathEscapeError(f"Refusing to write {target.real}: {protected} is a protected directory.")


# ---------------------------------------------------------------------------------------------- open


def _os_error(exc: OSError, target: Target) -> ToolError:
    code = exc.errno
    if code in (errno.EXDEV, errno.ELOOP):
        return PathEscapeError(
            f"Refusing to open {target.real}: a symlink inside {target.root} changed while it was being "
            "opened, or would lead outside the workspace."
        )
    if code == errno.ENOENT:
        return ToolError(f"No such file or directory: {target.real}.")
    if code == errno.ENOTDIR:
        return ToolError(f"A component of {target.real} is not a directory.")
    if code == errno.EISDIR:
        return ToolError(f"{target.real} is a directory, not a file.")
    if code in (errno.EACCES, errno.EPERM):
        return ToolError(f"Permission denied: {target.real}.")
    return ToolError(f"Cannot open {target.real}: {exc.strerror or exc}.")


def _open_root(root: Path) -> int:
    return os.open(root, _DIR_FLAGS | os.O_NOFOLLOW)


def _openat2_call(dir_fd: int, rel: str, flags: int, mode: int) -> int:
    call = _openat2()
    if call is None:  # pragma: no cover - only reached when a caller forces openat2 where it is absent
        raise ToolError("openat2 is not available on this machine.")
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, _RESOLVE_FLAGS)
    for _ in range(_EAGAIN_RETRIES):  # EAGAIN: a concurrent rename raced the lookup; retrying is safe
        fd = call(dir_fd, os.fsencode(rel), ctypes.byref(how), ctypes.sizeof(how))
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code != errno.EAGAIN:
            raise OSError(code, os.strerror(code))
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))


def _open_component(name: str, flags: int, mode: int, dir_fd: int) -> int:
    """Open one path component without following a symlink (reported as ELOOP, as openat2 does)."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except NotADirectoryError:  # O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
        raise


def _walk_open(dir_fd: int, parts: tuple[str, ...], flags: int, mode: int, create_dirs: bool) -> int:
    """Open `parts` beneath `dir_fd` one O_NOFOLLOW component at a time (creating dirs if asked)."""
    current = os.dup(dir_fd)
    try:
        for part in parts[:-1]:
            try:
                nxt = _open_component(part, _DIR_FLAGS, 0, current)
            except FileNotFoundError:
                if not create_dirs:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=current)
                except FileExistsError:
                    pass
                nxt = _open_component(part, _DIR_FLAGS, 0, current)
            os.close(current)
            current = nxt
        return _open_component(parts[-1] if parts else ".", flags, mode, current)
    finally:
        os.close(current)


def _verify(fd: int, target: Target) -> None:
    """resolve-verify: confirm the opened descriptor is the checked path (when /proc can tell)."""
    try:
        actual = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return
    if actual != str(target.real):
        os.close(fd)
        raise PathEscapeError(
            f"Refusing to open {target.real}: the path changed while it was being opened (got {actual})."
        )


def open_target(target: Target, flags: int, mode: int = 0o666, *, create_dirs: bool = False,
                mechanism: Mechanism | None = None) -> int:
    """Open an already located target beneath its root; raise ToolError/PathEscapeError on failure."""
    mechanism = mechanism or confinement_mechanism()
    parts = target.rel.parts
    try:
        root_fd = _open_root(target.root)
    except OSError as exc:
        raise ToolError(f"Cannot open the workspace root {target.root}: {exc.strerror or exc}.") from exc
    try:
        if mechanism == "openat2" and not create_dirs:
            return _openat2_call(root_fd, target.rel.as_posix() if parts else ".", flags, mode)
        if mechanism == "openat2":
            # Create missing parents safely one component at a time, then open the leaf by name only.
            parent_fd = _walk_open(root_fd, (*parts[:-1], "."), _DIR_FLAGS, 0, True) if parts else \
                os.dup(root_fd)
            try:
                return _openat2_call(parent_fd, parts[-1] if parts else ".", flags, mode)
            finally:
                os.close(parent_fd)
        fd = _walk_open(root_fd, parts, flags, mode, create_dirs)
        _verify(fd, target)
        return fd
    except OSError as exc:
        raise _os_error(exc, target) from exc
    finally:
        os.close(root_fd)


def open_for_read(binding: WorkspaceBinding, path: str | os.PathLike[str]) -> tuple[int, Path]:
    """Open a file (or directory) for reading, confined to the roots. The caller closes the fd."""
    target = locate(binding, path)
    return open_target(target, _READ_FLAGS), target.real


def open_dir(binding: WorkspaceBinding, path: str | os.PathLike[str]) -> tuple[int, Path]:
    """Open a directory, confined to the roots (usable with `os.scandir(fd)` / `os.fwalk(dir_fd=…)`)."""
    target = locate(binding, path)
    return open_target(target, _DIR_FLAGS), target.real


def open_for_write(binding: WorkspaceBinding, path: str | os.PathLike[str], create: bool = True,
                   truncate: bool = True) -> tuple[int, Path]:
    """Open a regular file for writing; missing parent dirs are created beneath the root when `create`."""
    target = locate(binding, path)
    check_writable(binding, target)
    if not target.rel.parts:
        raise ToolError(f"{target.real} is a directory, not a file.")
    flags = os.O_WRONLY | os.O_NONBLOCK | (os.O_CREAT if create else 0) | (os.O_TRUNC if truncate else 0)
    fd = open_target(target, flags, 0o666, create_dirs=create)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f"Refusing to write {target.real}: it is not a regular file.")
    return fd, target.real
