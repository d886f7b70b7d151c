"""The pre-exec wrapper of the Landlock sandbox, and the seccomp filters both sandboxes load.

Run as a script (`python -I -S preexec.py --landlock-exec …`, see `wrap_readonly` / `wrap_confined` in this
package) it restricts itself — Landlock rules, no capabilities, no_new_privs, a seccomp filter, for writable
bindings a chmod supervisor — then execs the command. It uses only the standard library and imports nothing of
yeetui's, so that it can run so; the package imports its seccomp and Landlock probes from here.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import select
import socket
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

LANDLOCK_FLAG = "--landlock-exec"
LANDLOCK_WRITE_FLAG = "--landlock-write-exec"
LANDLOCK_WRITE_NONET_FLAG = "--landlock-write-exec-nonet"
HIDE_FLAG = "--hide"
WRAPPER_FAILED = "yeetui: could not apply the Landlock "
"""How the wrapper's message starts when it cannot restrict itself (the probe reads the cause after it)."""


# Landlock ABI (include/uapi/linux/landlock.h); syscall numbers are the same on every unified-table arch.
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_WRITE_FILE = 1 << 1
_FS_WRITE_V1 = (_WRITE_FILE | 1 << 4 | 1 << 5 | 1 << 6 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 10 | 1 << 11
                | 1 << 12)  # write, remove dir/file, make char/dir/reg/sock/fifo/block/symlink
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_EXECUTE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 2, 1 << 3
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32))

# seccomp through libseccomp (seccomp.h): it knows each architecture's syscall numbers and refuses other ABIs.
_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_CMP_NE, _SCMP_CMP_MASKED_EQ = 1, 7
_EPERM, _EACCES, _EOPNOTSUPP = 1, 13, 95
_AF_UNIX, _AF_NETLINK = 1, 16
_SOCK_DGRAM, _SOCK_TYPE_MASK = 2, 0xF
_INT_MASK = 0xFFFFFFFF  # an int argument's upper register half is not the caller's to set: compare the low half
_REFUSED_SYSCALLS = ("chown", "fchown", "lchown", "fchownat", "chown32", "fchown32", "lchown32",
                     "io_uring_setup", "io_uring_enter", "io_uring_register")
_XATTR_WRITES = ("setxattr", "lsetxattr", "fsetxattr", "setxattrat", "removexattr", "lremovexattr",
                 "fremovexattr", "removexattrat")
"""Answered "not supported", as a filesystem without extended attributes would: `cp -p` then falls back."""
_READ_ONLY_REFUSED_SYSCALLS = ("chmod", "fchmod", "fchmodat", "fchmodat2", "utime", "utimes", "utimensat",
                               "futimesat")
"""Refused to read-only bindings only: a writable workspace needs them (see the module docstring)."""
_CHMODS = (("chmod", 1), ("fchmod", 1), ("fchmodat", 2), ("fchmodat2", 2))
"""The chmod syscalls and which argument is the mode."""
_SPECIAL_BITS = (0o4000, 0o2000, 0o1000)
"""setuid, setgid, sticky: refused to a writable binding's chmod under Landlock (as root it could otherwise make
a system binary setuid: seccomp cannot tell paths apart, so no chmod may set them)."""
_NEWER_SYSCALLS = {"fchmodat2": 452, "setxattrat": 463, "removexattrat": 466}
"""Numbers from the unified table (x86_64, arm64, riscv64) for syscalls an older libseccomp cannot name."""
_UNIFIED_TABLE_MACHINES = ("x86_64", "aarch64", "arm64", "riscv64")
_REFUSED_IOCTLS = (0x40086602, 0x40046602, 0x401C5820, 0x5412, 0x541C)
"""FS_IOC_SETFLAGS (64- and 32-bit: chattr), FS_IOC_FSSETXATTR, TIOCSTI (typing into a terminal), TIOCLINUX."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = (("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64))


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unsupported or disabled."""
    return landlock_version()[0]


def landlock_version() -> tuple[int, int]:
    """(the kernel's Landlock ABI version, 0) — or (0, the errno of landlock_create_ruleset) when it has none."""
    if sys.platform != "linux":
        return 0, errno.ENOSYS
    syscall = _libc().syscall
    syscall.restype = ctypes.c_long
    abi = syscall(ctypes.c_long(_SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                  ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return (int(abi), 0) if abi > 0 else (0, ctypes.get_errno() or errno.ENOSYS)


def _errno_text(number: int) -> str:
    """`Operation not permitted (EPERM)`: what an errno means, and its name."""
    return f"{os.strerror(number)} ({errno.errorcode.get(number, f'errno {number}')})"


def _failed(call: str, number: int | None = None) -> OSError:
    """The OSError of system or library call `call` that failed with `number` (default: the C errno now)."""
    number = ctypes.get_errno() if number is None else number
    return OSError(number, f"{call} failed: {_errno_text(number)}")


def no_landlock(number: int) -> str:
    """Why a kernel whose landlock_create_ruleset fails with `number` has no Landlock, in words."""
    if number == errno.ENOSYS:
        return ("the kernel has no Landlock system calls (landlock_create_ruleset: ENOSYS): it is older than "
                "Linux 5.13 or built without Landlock, or a seccomp filter (a container's) refuses them")
    if number == errno.EOPNOTSUPP:
        return ("Landlock is built into this kernel but disabled at boot (landlock_create_ruleset: EOPNOTSUPP): "
                "add landlock to the kernel's lsm= boot parameter")
    return f"the kernel refuses Landlock: landlock_create_ruleset failed: {_errno_text(number)}"


class _ArgCmp(ctypes.Structure):
    _fields_ = (("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64))


def _libseccomp() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        return None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_rule_add_array.argtypes = (ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp))
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_load.argtypes = (ctypes.c_void_p,)
    lib.seccomp_export_bpf.argtypes = (ctypes.c_void_p, ctypes.c_int)
    lib.seccomp_notify_fd.argtypes = (ctypes.c_void_p,)
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    return lib


def seccomp_available() -> bool:
    """True when the Landlock fallback can add its seccomp filter (libseccomp is installed)."""
    return sys.platform == "linux" and _libseccomp() is not None


def _seccomp_filter(lib: ctypes.CDLL, *, network: bool, read_only: bool, notify_chmod: bool = False) -> int:
    """A libseccomp filter context refusing what Landlock leaves open (see the module docstring); the caller
    loads or exports it, then releases it. `notify_chmod`: a writable binding's chmod calls go to a supervisor
    (`_ChmodSupervisor`) instead of running."""
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")

    def refuse(name: str, errno: int = _EPERM, *conditions: tuple[int, int, int, int]) -> None:
        number = _syscall_number(lib, name)
        if number is None:
            return
        args = (_ArgCmp * max(len(conditions), 1))(*(_ArgCmp(*c) for c in conditions))
        if (code := lib.seccomp_rule_add_array(ctx, 0x00050000 | errno, number, len(conditions), args)) < 0:
            raise _failed(f"seccomp_rule_add for {name}", -code)

    try:
        for name in (*_REFUSED_SYSCALLS, *(_READ_ONLY_REFUSED_SYSCALLS if read_only else ())):
            refuse(name)
        if not read_only:
            _chmod_rules(lib, ctx, refuse, notify=notify_chmod)
        for name in _XATTR_WRITES:
            refuse(name, _EOPNOTSUPP)
        for request in _REFUSED_IOCTLS:
            refuse("ioctl", _EPERM, (1, _SCMP_CMP_MASKED_EQ, _INT_MASK, request))
        if network:
            refuse("socket", _EACCES, (0, _SCMP_CMP_MASKED_EQ, _INT_MASK, _AF_UNIX))
        else:
            refuse("socket", _EACCES, (0, _SCMP_CMP_NE, _AF_NETLINK, 0))
        refuse("socketpair", _EACCES, (1, _SCMP_CMP_MASKED_EQ, _SOCK_TYPE_MASK, _SOCK_DGRAM))
    except BaseException:
        lib.seccomp_release(ctx)
        raise
    return int(ctx)


def _chmod_rules(lib: ctypes.CDLL, ctx: int, refuse: Callable[..., None], *, notify: bool) -> None:
    """A writable binding's chmod calls: to the supervisor (`notify`: it does them, inside the workspace only),
    else they stay (builds need them) but never set a setuid, setgid or sticky bit."""
    if notify:
        for name, _ in _CHMODS:
            number = _syscall_number(lib, name)
            if number is not None and lib.seccomp_rule_add_array(ctx, _SCMP_ACT_NOTIFY, number, 0, None) < 0:
                raise OSError(f"seccomp: cannot add the notification rule for {name}")
        return
    for name, mode_arg in _CHMODS:
        for bit in _SPECIAL_BITS:
            refuse(name, _EPERM, (mode_arg, _SCMP_CMP_MASKED_EQ, bit, bit))


def _syscall_number(lib: ctypes.CDLL, name: str) -> int | None:
    """This architecture's number for syscall `name`; None when neither libseccomp nor `_NEWER_SYSCALLS` knows it."""
    number = int(lib.seccomp_syscall_resolve_name(name.encode()))
    if number != -1:
        return number
    if name in _NEWER_SYSCALLS and os.uname().machine in _UNIFIED_TABLE_MACHINES:
        return _NEWER_SYSCALLS[name]
    return None


def _seccomp_restrict(*, network: bool, read_only: bool, notify_chmod: bool = False) -> int | None:
    """Load the filter into this process (and what it execs); with `notify_chmod`, return the file descriptor
    its chmod notifications arrive on."""
    lib = _libseccomp()
    if lib is None:
        return None  # `yeetui doctor` says the fallback lacks this layer here
    ctx = _seccomp_filter(lib, network=network, read_only=read_only, notify_chmod=notify_chmod)
    try:
        if (code := lib.seccomp_load(ctx)) < 0:
            raise _failed("seccomp_load", -code)
        return int(lib.seccomp_notify_fd(ctx)) if notify_chmod else None
    finally:
        lib.seccomp_release(ctx)


@functools.cache
def seccomp_program(*, network: bool, read_only: bool) -> bytes | None:
    """The same filter compiled to classic BPF, as bubblewrap's `--seccomp FD` takes it; None without
    libseccomp."""
    lib = _libseccomp()
    if lib is None:
        return None
    ctx = _seccomp_filter(lib, network=network, read_only=read_only)
    try:
        with tempfile.TemporaryFile() as out:
            if lib.seccomp_export_bpf(ctx, out.fileno()) < 0:
                raise OSError("seccomp_export_bpf failed")
            out.seek(0)
            return out.read()
    finally:
        lib.seccomp_release(ctx)


def seccomp_fd(*, network: bool, read_only: bool) -> int | None:
    """A file descriptor holding `seccomp_program` for one bubblewrap start (pass it in `pass_fds`, close it
    after the start); None without libseccomp."""
    program = seccomp_program(network=network, read_only=read_only)
    if program is None:
        return None
    fd = os.memfd_create("yeetui-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _drop_capabilities() -> None:
    """Leave this process, and what it execs (as root too), no capability — as bubblewrap's `--cap-drop ALL` does.
    Landlock does not stop a process reading its parent's /proc/<pid>/environ and memory, and root's
    CAP_SYS_PTRACE passes yeetui's undumpable mark: `cat /proc/$PPID/environ` would print the provider keys."""
    libc = _libc()
    try:
        last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):  # the bounding set: what a root exec would be given back
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EPERM without CAP_SETPCAP: nothing to drop then
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise _failed("capset (dropping every capability)")
    kept = ("CapEff:", "CapPrm:", "CapAmb:", *(("CapBnd:",) if os.geteuid() == 0 else ()))
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(kept) and int(line.split()[1], 16):
            raise OSError(f"a capability is left after dropping them all ({line})")


def readable_around(hidden: Sequence[str]) -> list[str]:
    """Paths beneath which reading leaves out exactly `hidden` (and what is in them): on the way down from `/` to
    each hidden dir, every other entry of each folder passed. Landlock only allows, never denies beneath an
    allowed path, so hiding a folder means allowing its siblings. Symlinks are skipped (one could lead into a
    hidden dir; the real path it names is allowed on its own way). `["/"]` when nothing is to be hidden."""
    hide = {os.path.realpath(h) for h in hidden if os.path.isdir(h)}
    hide = {h for h in hide if not any(other != h and h.startswith(other.rstrip("/") + "/") for other in hide)}
    if not hide:
        return ["/"]
    passed = {str(parent) for h in hide for parent in Path(h).parents}
    granted: list[str] = []
    for folder in sorted(passed):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            full = os.path.join(folder, entry.name)
            if full not in hide and full not in passed and not entry.is_symlink():
                granted.append(full)
    return granted


def _landlock_restrict(private_tmp: str | None, *, writable: tuple[str, ...] = (), network: bool = False,
                       hidden: tuple[str, ...] = (), notify_chmod: bool = False) -> int | None:
    """Restrict this process (and what it execs) to writing only /dev/null, `private_tmp` and `writable`;
    without `network`, TCP is denied too (ABI 4+); with `hidden`, those folders cannot be read or listed
    either (`readable_around`)."""
    abi, number = landlock_version()
    if abi < 1:
        raise OSError(number, no_landlock(number))
    libc = _libc()
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    fs = _FS_WRITE_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    read = _READ_FILE | _READ_DIR | _EXECUTE if hidden else 0
    attr = _RulesetAttr(fs | read, _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 and not network else 0,
                        _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = syscall(ctypes.c_long(_SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size),
                      ctypes.c_uint32(0))
    if ruleset < 0:
        raise _failed(f"landlock_create_ruleset (ABI {abi})")
    allowed: list[tuple[str, int]] = [("/dev/null", _WRITE_FILE | (_TRUNCATE if abi >= 3 else 0)
                                       | (_READ_FILE if read else 0))]
    if private_tmp:
        allowed.append((private_tmp, fs | read))
    inside = [os.path.realpath(h) for h in hidden]
    for path in writable:  # one holding a hidden dir is read through `readable_around`, which leaves that out
        real = os.path.realpath(path)
        holds = any(h.startswith(real.rstrip("/") + "/") for h in inside)
        allowed.append((path, fs if holds else fs | read))
    if read:  # listing stays open everywhere (`ls /`): a hidden dir shows its names, never its contents
        allowed += [("/", _READ_DIR), *((path, read) for path in readable_around(hidden))]
    for path, rights in allowed:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC | (os.O_NOFOLLOW if read and rights == read else 0))
        except OSError:
            if rights == read:
                continue  # gone since it was listed
            raise
        try:
            if not os.path.isdir(f"/proc/self/fd/{fd}"):
                rights &= _FILE_RIGHTS  # a rule for a file may name file rights only
            rule = _PathBeneath(rights, fd)
            if syscall(ctypes.c_long(_SYS_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                       ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                raise _failed(f"landlock_add_rule for {path}")
        finally:
            os.close(fd)
    _drop_capabilities()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise _failed("prctl(PR_SET_NO_NEW_PRIVS)")
    if syscall(ctypes.c_long(_SYS_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
        raise _failed(f"landlock_restrict_self (ABI {abi})")
    os.close(ruleset)
    return _seccomp_restrict(network=network, read_only=not writable, notify_chmod=notify_chmod)


def _landlock_exec_main(args: list[str]) -> int:
    """`preexec.py --landlock-exec PRIVATE_TMP [--hide DIR:DIR…] -- ARGV…`: restrict, then exec. Never runs
    unsandboxed. `--landlock-write-exec PRIVATE_TMP:DIR:DIR… -- ARGV…` also lets it write beneath each DIR
    (network kept); `--hide` keeps each of its DIRs from being read."""
    hidden: tuple[str, ...] = ()
    if len(args) > 3 and args[2] == HIDE_FLAG:
        hidden = tuple(filter(None, args[3].split(os.pathsep)))
        args = [*args[:2], *args[4:]]
    if len(args) < 4 or args[0] not in (LANDLOCK_FLAG, LANDLOCK_WRITE_FLAG, LANDLOCK_WRITE_NONET_FLAG) \
            or args[2] != "--":
        sys.stderr.write("usage: preexec.py --landlock-exec PRIVATE_TMP [--hide DIR:DIR…] -- COMMAND [ARG…]\n")
        return 2
    places = args[1].split(os.pathsep)
    try:
        if args[0] in (LANDLOCK_WRITE_FLAG, LANDLOCK_WRITE_NONET_FLAG):
            writable = tuple(filter(None, places[1:]))
            restrict = functools.partial(_landlock_restrict, places[0] or None, writable=writable,
                                         network=args[0] == LANDLOCK_WRITE_FLAG, hidden=hidden)
            if chmod_supervision_available():
                return _ChmodSupervisor(tuple(filter(None, places))).run(restrict, args[3:])
            restrict()
        else:
            _landlock_restrict(args[1] or None, hidden=hidden)
    except OSError as exc:
        kind = "read-only" if args[0] == LANDLOCK_FLAG else "writable"
        sys.stderr.write(f"{WRAPPER_FAILED}{kind} sandbox: {exc.strerror or exc}\n")
        return 126
    try:
        os.execvp(args[3], args[3:])  # noqa: S606 - the wrapper becomes the confined command, as intended
    except OSError as exc:
        sys.stderr.write(f"yeetui: cannot run {args[3]}: {exc.strerror}\n")
        return 127


# ------------------------------------------------------------------------------------ chmod supervisor


class _SeccompData(ctypes.Structure):
    _fields_ = (("nr", ctypes.c_int), ("arch", ctypes.c_uint32), ("ip", ctypes.c_uint64),
                ("args", ctypes.c_uint64 * 6))


class _Notification(ctypes.Structure):  # struct seccomp_notif
    _fields_ = (("id", ctypes.c_uint64), ("pid", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("data", _SeccompData))


class _Response(ctypes.Structure):  # struct seccomp_notif_resp
    _fields_ = (("id", ctypes.c_uint64), ("val", ctypes.c_int64), ("error", ctypes.c_int32),
                ("flags", ctypes.c_uint32))


_SCMP_ACT_NOTIFY = 0x7FC00000
_NOTIF_RECV = (3 << 30) | (ctypes.sizeof(_Notification) << 16) | (ord("!") << 8) | 0
_NOTIF_SEND = (3 << 30) | (ctypes.sizeof(_Response) << 16) | (ord("!") << 8) | 1
_NOTIF_ID_VALID = (1 << 30) | (8 << 16) | (ord("!") << 8) | 2
_AT_FDCWD, _AT_EMPTY_PATH = -100, 0x1000
_PATH_MAX = 4096


def chmod_supervision_available() -> bool:
    """Whether a writable binding's chmod can be checked path by path: seccomp user notification (Linux 5.0+,
    libseccomp 2.5+ at API level 5+)."""
    lib = _libseccomp()
    return lib is not None and hasattr(lib, "seccomp_notify_fd") and int(lib.seccomp_api_get()) >= 5


class _ChmodSupervisor:
    """Under Landlock a writable binding's chmod runs nowhere but its workspace: seccomp cannot tell paths apart
    and Landlock does not cover a file's mode, so the command's chmod, fchmod, fchmodat and fchmodat2 calls are
    sent here (seccomp user notification). This process — the wrapper, forked before the command is restricted —
    reads the path the call names, resolves it as the caller would, opens what it names, and changes the mode
    itself only when that file lies in the workspace, belongs to the caller's user and gets no setuid, setgid
    or sticky bit. Otherwise the call fails with EPERM. The file is checked through the descriptor that is then
    changed, so swapping a path or symlink in between changes nothing. Whatever outlives the wrapper gets
    ENOSYS from each chmod."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = tuple(os.path.realpath(r) for r in roots)
        self.ioctl = _libc().ioctl
        self.ioctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)
        lib = _libseccomp()
        assert lib is not None
        self.names = {number: name for name, _ in _CHMODS if (number := _syscall_number(lib, name)) is not None}

    def run(self, restrict: functools.partial[int | None], argv: list[str]) -> int:
        ours, theirs = socket.socketpair()
        child = os.fork()
        if child == 0:
            ours.close()
            try:
                fd = restrict(notify_chmod=True)
                if fd is None:
                    raise OSError("no seccomp notification descriptor")
                socket.send_fds(theirs, [b"n"], [fd])
                os.close(fd)
                theirs.close()
                os.execvp(argv[0], argv)  # noqa: S606 - the restricted child becomes the command
            except OSError as exc:
                os.write(2, f"yeetui: could not run {argv[0]} in the Landlock sandbox: {exc}\n".encode())
            os._exit(126)
        theirs.close()
        _, fds, _, _ = socket.recv_fds(ours, 1, 1)
        ours.close()
        if not fds:  # the child failed before it ran anything
            return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) % 256 or 126
        notices, exited = fds[0], os.pidfd_open(child)
        poller = select.poll()
        poller.register(notices, select.POLLIN)
        poller.register(exited, select.POLLIN)
        while True:
            for fd, event in poller.poll():
                if fd == exited:
                    code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
                    return 128 - code if code < 0 else code
                if event & (select.POLLHUP | select.POLLERR):
                    poller.unregister(notices)  # nothing under the filter is left
                else:
                    self._answer(notices)

    def _answer(self, notices: int) -> None:
        request = _Notification()
        if self.ioctl(notices, _NOTIF_RECV, ctypes.addressof(request)) < 0:
            return  # the caller is gone
        try:
            error = self._chmod(request, notices)
        except OSError as exc:
            error = exc.errno or _EPERM
        reply = _Response(request.id, 0, -error if error else 0, 0)
        self.ioctl(notices, _NOTIF_SEND, ctypes.addressof(reply))

    def _chmod(self, request: _Notification, notices: int) -> int:
        name, args, pid = self.names.get(request.data.nr), request.data.args, request.pid
        if name == "fchmod":
            target, mode = f"/proc/{pid}/fd/{ctypes.c_int32(args[0]).value}", args[1]
        else:
            dirfd, pointer, mode = (_AT_FDCWD, args[0], args[1]) if name == "chmod" else \
                (ctypes.c_int32(args[0]).value, args[1], args[2])
            path = self._string(pid, pointer)
            if self.ioctl(notices, _NOTIF_ID_VALID, ctypes.addressof(ctypes.c_uint64(request.id))) < 0:
                return _EPERM  # the caller is gone, and its memory may be another's
            base = f"/proc/{pid}/cwd" if dirfd == _AT_FDCWD else f"/proc/{pid}/fd/{dirfd}"
            if not path and name == "fchmodat2" and args[3] & _AT_EMPTY_PATH:
                target = base
            elif not path:
                return 2  # ENOENT, as the kernel says for ""
            else:
                target = path if path.startswith("/") else os.path.join(os.readlink(base), path)
        mode &= 0o7777
        if mode & 0o7000:
            return _EPERM
        fd = os.open(target, os.O_PATH | os.O_CLOEXEC)
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
            if not any(where == root or where.startswith(root.rstrip("/") + "/") for root in self.roots):
                return _EPERM
            if os.fstat(fd).st_uid != os.geteuid():
                return _EPERM  # the command has no capability: only its user's files are its to change
            os.chmod(f"/proc/self/fd/{fd}", mode)
        finally:
            os.close(fd)
        return 0

    @staticmethod
    def _string(pid: int, pointer: int) -> str:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
            memory.seek(pointer)
            raw = memory.read(_PATH_MAX)
        return os.fsdecode(raw.split(b"\0", 1)[0])


if __name__ == "__main__":
    sys.exit(_landlock_exec_main(sys.argv[1:]))
