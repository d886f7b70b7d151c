"""How a stdio MCP server is started: where, with what environment, and — for a project's own — inside the OS
sandbox.

Every server starts outside the project unless its config names a working directory (`settings.pins.neutral_dir`):
`python -m mod` and `npx pkg` then resolve nothing an agent planted in the project. Its environment is the MCP
SDK's safe defaults (`HOME`, `PATH`, …) and what its config gives it; no provider key reaches it unless the
config names that variable.

A server a project's own file defines runs inside the OS sandbox: the whole filesystem read-only (the project
included), yeetui's config and data dirs hidden, a private /tmp (its caches point there), the network allowed.
Before it starts, the project files its command names and the executable it resolves to must be those the user
approved (`yeetui.mcp.consent`). Where no sandbox works here, it does not start unless the user's own config
names it in `project_grants.unconfined_mcp_servers`.

Each server runs in its own session and process group (the SDK starts it so); `sh` notes the group's id in a
private folder, so what the server leaves in its group is stopped with it, and `YEETUI_PROCESS_TAG` marks every
process it starts, so one that left the group with `setsid` is found and ended too (`yeetui.system.processes`).
`sh` stays the server's parent and notes its exit status in the same folder (`exit_status`): a server that
ends before it answers is reported as "exited with status N", which nothing else would tell. As `sh`, not this
process, is then the server's parent (and bubblewrap's, whose `--die-with-parent` follows it), the client
watches the group (`GroupWatcher`) so a kill -9 of yeetui still takes the server along.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from yeetui import paths
from yeetui.mcp.servers import ServerSpec
from yeetui.settings.pins import changes, command_pins, neutral_dir
from yeetui.system import sandbox
from yeetui.system.processes import PROCESS_TAG

_NOTE_PID = 'printf %s "$$" > "$0/pid.new" && /bin/mv "$0/pid.new" "$0/pid" || exit 125; '
"""Note the group's leader (this shell) whole: a reader sees no pid file, or all of it. `mv` by its path: the
server's PATH may name a folder of the project."""
_NOTE_AND_RUN = _NOTE_PID + '"$@"; s=$?; printf %s "$s" > "$0/status"; exit "$s"'
"""`sh -c` around the server: note the group's leader in the start's folder (`$0`), run the server, note its
exit status."""
_NOTE_AND_RUN_FILTERED = _NOTE_PID + 'f=$1; shift; "$@" 3<"$f"; s=$?; printf %s "$s" > "$0/status"; exit "$s"'
"""The same, giving bubblewrap its seccomp program on file descriptor 3 (the SDK passes no descriptors)."""
SANDBOX_TMP = "/tmp"  # noqa: S108 - the sandbox's own private tmpfs, not the host's /tmp
"""bubblewrap's private tmpfs inside the sandbox, not the host's /tmp."""


class LaunchRefused(Exception):
    """The server may not start as it is; the message says why and what to do."""


@dataclass(frozen=True)
class Placement:
    """What a server's start needs to know of the yeetui process that starts it."""

    project_dir: Path
    home: Path
    hidden: tuple[Path, ...] = ()
    """yeetui's config and data dirs: hidden from a sandboxed server."""
    sandbox: Callable[[], sandbox.Sandbox | None] = field(default=sandbox.probe_sandbox)
    auth_dir: Path | None = None
    """Where the tokens of remote servers the user signed in to are kept (`yeetui mcp login`; None: none)."""

    @classmethod
    def here(cls) -> Placement:
        return cls(Path.cwd(), Path.home(), (paths.config_dir(), paths.data_dir()),
                   auth_dir=paths.data_dir() / "mcp-auth")


@dataclass(frozen=True)
class StdioLaunch:
    command: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    confined: sandbox.Sandbox | None = None


def stdio_launch(spec: ServerSpec, placement: Placement, folder: Path) -> StdioLaunch:
    """The command that starts `spec`, noting its group's leader in `folder/pid` and its exit status in
    `folder/status` (`folder` is private to this start and removed with it). Raises LaunchRefused."""
    program = shutil.which(spec.command[0], path=spec.env.get("PATH", os.environ.get("PATH")))
    if program is None:
        raise LaunchRefused(f"command not found: {(spec.command_as_written or spec.command)[0]}")
    cwd = spec.cwd or str(neutral_dir(placement.project_dir, placement.home))
    env = {**spec.env, PROCESS_TAG: f"mcp-{spec.name}-{secrets.token_hex(8)}"}
    argv = [program, *spec.command[1:]]
    leader = str(folder)
    if spec.scope != "project":
        return StdioLaunch("/bin/sh", ["-c", _NOTE_AND_RUN, leader, *argv], env, cwd)
    now = command_pins(spec.command, placement.project_dir, cwd=Path(cwd), path=spec.env.get("PATH",
                                                                                              os.environ.get("PATH")))
    if now != dict(spec.pins):
        changed = ", ".join(changes(dict(spec.pins), now)) or "it was not approved"
        raise LaunchRefused(f"what it runs changed since you approved it ({changed}); look at it, then "
                            f"`yeetui mcp approve {spec.name}` if it is still what you want")
    if spec.unconfined:
        return StdioLaunch("/bin/sh", ["-c", _NOTE_AND_RUN, leader, *argv], env, cwd)
    mechanism = placement.sandbox()
    if mechanism is None:
        raise LaunchRefused(unconfinable(spec.name))
    project = Path(placement.project_dir).resolve()
    if mechanism == "bwrap":
        env.update(_caches(SANDBOX_TMP))
        program_bytes = sandbox.seccomp_program(network=True, read_only=True)
        readable = tuple(dict.fromkeys([project, Path(cwd), *_under_private_folders(program, argv)]))
        if program_bytes is None:
            wrapped = sandbox.wrap_confined(argv, cwd, writable=(), readable=readable, network=True,
                                            mechanism="bwrap", hidden=placement.hidden)
            return StdioLaunch("/bin/sh", ["-c", _NOTE_AND_RUN, leader, *wrapped], env, cwd, "bwrap")
        filter_file = folder / "seccomp"
        descriptor = os.open(filter_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with open(descriptor, "wb") as handle:
            handle.write(program_bytes)
        wrapped = sandbox.wrap_confined(argv, cwd, writable=(), readable=readable, network=True,
                                        mechanism="bwrap", hidden=placement.hidden, seccomp=3)
        return StdioLaunch("/bin/sh", ["-c", _NOTE_AND_RUN_FILTERED, leader, str(filter_file), *wrapped], env, cwd,
                           "bwrap")
    private_tmp = folder / "tmp"
    private_tmp.mkdir(mode=0o700)
    env.update(_caches(str(private_tmp)))
    # Its private /tmp is its one writable place (the Landlock wrapper's writable binding needs one).
    wrapped = sandbox.wrap_confined(argv, cwd, writable=(private_tmp,), network=True, private_tmp=private_tmp,
                                    mechanism=mechanism, hidden=placement.hidden)
    return StdioLaunch("/bin/sh", ["-c", _NOTE_AND_RUN, leader, *wrapped], env, cwd, mechanism)


_PRIVATE_IN_SANDBOX = (Path("/tmp"), Path("/run"))  # noqa: S108 - the folders bubblewrap makes private
"""What bubblewrap gives a sandbox of its own: what the server runs from there must be shown to it again."""


def exit_status(folder: Path) -> int | None:
    """The status the server started in `folder` exited with; None while it runs, or when it was killed."""
    try:
        return int((folder / "status").read_text())
    except (OSError, ValueError):
        return None


def _under_private_folders(program: str, argv: list[str]) -> list[Path]:
    """What the server needs that lies under /tmp or /run, which bubblewrap hides: the virtualenv or folder its
    program is in (its real one too) and the absolute paths its arguments name."""
    found: list[Path] = []
    for exe in (Path(program), Path(program).resolve()):
        found.append(exe.parent.parent if (exe.parent.parent / "pyvenv.cfg").is_file() else exe.parent)
    found += [Path(word) for word in argv[1:] if word.startswith("/") and os.path.exists(word)]
    return [path for path in dict.fromkeys(found)
            if any(path == base or base in path.parents for base in _PRIVATE_IN_SANDBOX)]


def _caches(tmp: str) -> dict[str, str]:
    """Where a sandboxed server's tools keep their caches: its private /tmp (npx, uvx and pip write theirs in
    the home folder otherwise, which is read-only to it)."""
    return {"TMPDIR": tmp, "XDG_CACHE_HOME": f"{tmp}/.cache", "XDG_DATA_HOME": f"{tmp}/.local/share",
            "XDG_STATE_HOME": f"{tmp}/.local/state", "npm_config_cache": f"{tmp}/.npm",
            "UV_CACHE_DIR": f"{tmp}/.cache/uv", "PIP_CACHE_DIR": f"{tmp}/.cache/pip"}


def unconfinable(name: str) -> str:
    """Why a project's server `name` does not start where no OS sandbox works, and how to start it anyway."""
    return (f"no OS sandbox (bubblewrap or Landlock) works here to confine it (a project's server could run code "
            f"an agent wrote); to run it unconfined, name it in your own ~/.config/yeetui/config.yaml: "
            f"`project_grants: {{unconfined_mcp_servers: [{name}]}}`")
