"""A command wrapped in the OS sandbox a workspace binding calls for: what agents' `bash` runs in, and a trusted
project's hooks too (they are the project's code, so they get no more than its writable agents).

Read-only bindings run under `sandbox.wrap_readonly`; writable ones under `sandbox.wrap_confined`, whose
bubblewrap mount points for absent shielded folders are held until the command has ended
(`yeetui.system.mount_points`). The caller picks the mechanism (`writable_mechanism`, `sandbox.probe_sandbox`)
and runs what `confined` yields, passing on its file descriptors.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, MutableMapping, Sequence
from pathlib import Path

from yeetui.system import mount_points, sandbox
from yeetui.workspace import BashSandbox, WorkspaceBinding


class Unconfinable(Exception):
    """No sandbox that the binding accepts works here; the message says why."""


class ShieldsUnavailable(Exception):
    """The sandbox's mount points could not be noted, or another yeetui tidies them past the wait: the command
    must not run unshielded. The message says why."""


def writable_mechanism(mode: BashSandbox) -> sandbox.Sandbox | None:
    """The sandbox a writable binding's command runs in: bubblewrap, which keeps `.git/` and the agent config
    folders read-only. Raises Unconfinable where it cannot run — unless `mode` is `unshielded` (then Landlock,
    or None where even that fails); `off`: None (unconfined). Probes (blocking) on first use."""
    if mode == "off":
        return None
    found = sandbox.probe_sandbox()
    if found == "bwrap" or mode == "unshielded":
        return found
    raise Unconfinable("only the Landlock fallback works here, and it cannot keep .git/, .yeetui/, .claude/ and "
                       ".opencode/ read-only" if found == "landlock" else "no OS sandbox works here")


def project_mechanism(mode: BashSandbox) -> sandbox.Sandbox:
    """The sandbox a project's own code (its hooks) runs in: as a writable agent's bash, but never none — where
    `writable_mechanism` would run it unconfined (`unshielded` with no sandbox working, or `off`), raises
    Unconfinable."""
    found = writable_mechanism("auto" if mode == "off" else mode)
    if found is None:
        raise Unconfinable("no OS sandbox works here")
    return found


@contextlib.asynccontextmanager
async def confined(argv: Sequence[str], binding: WorkspaceBinding, env: MutableMapping[str, str],
                   mechanism: sandbox.Sandbox | None, *, readable: Sequence[Path] = (),
                   writable: Sequence[Path] = ()) -> AsyncIterator[tuple[list[str], tuple[int, ...]]]:
    """`argv` wrapped for `mechanism` (None: as it is) as `binding` says — read-only, or writable only in its
    roots — and the file descriptors to pass to it (a seccomp program for bubblewrap); `env` gets its private
    TMPDIR under Landlock. `readable`: folders a writable binding's command must see even under /tmp (which
    bubblewrap makes private), such as its working directory. Its private folder, descriptors and held mount
    points go when the block ends. `writable`: folders besides its roots a writable binding's command may
    change (a hook's `CLAUDE_ENV_FILE`). Raises ShieldsUnavailable."""
    if mechanism is None:
        yield list(argv), ()
        return
    async with contextlib.AsyncExitStack() as held:
        private_tmp: str | None = None
        seccomp: int | None = None
        hidden = binding.protected  # yeetui's config (keys) and data (every project's transcripts) dirs
        writable = (*binding.roots, *binding.git_writable, *writable)
        try:
            if not binding.allow_writes:
                if mechanism == "landlock":
                    private_tmp = tempfile.mkdtemp(prefix="yeetui-bash-")
                    env["TMPDIR"] = private_tmp
                else:
                    seccomp = sandbox.seccomp_fd(network=False, read_only=True)
                wrapped = sandbox.wrap_readonly(argv, binding.cwd, roots=binding.roots, private_tmp=private_tmp,
                                                mechanism=mechanism, hidden=hidden, seccomp=seccomp)
            else:
                if mechanism == "bwrap":  # it makes mount points for absent shielded folders: held until the end
                    try:
                        shields = await held.enter_async_context(mount_points.shields(binding.roots))
                        if shields is not None:  # noted before they are made: a crash leaves the note for the next
                            shields.made(sandbox.shield_binds(binding.shielded(), writable, hidden)[1])
                    except mount_points.MountPointsBusy as exc:
                        raise ShieldsUnavailable(str(exc)) from exc
                    except OSError as exc:  # fail closed
                        raise ShieldsUnavailable(f"the sandbox's mount points could not be noted ({exc})") from exc
                private_tmp = tempfile.mkdtemp(prefix="yeetui-bash-")
                if mechanism == "landlock":
                    env["TMPDIR"] = private_tmp
                else:
                    seccomp = sandbox.seccomp_fd(network=binding.network, read_only=False)
                wrapped = sandbox.wrap_confined(argv, binding.cwd, writable=writable,
                                                readable=(*binding.git_readable, *readable),
                                                shielded=binding.shielded(),
                                                empty_dir=Path(private_tmp), network=binding.network,
                                                private_tmp=private_tmp, mechanism=mechanism, hidden=hidden,
                                                seccomp=seccomp)
            yield wrapped, (seccomp,) if seccomp is not None else ()
        finally:
            if seccomp is not None:
                os.close(seccomp)
            if private_tmp:
                shutil.rmtree(private_tmp, ignore_errors=True)
