"""Running hooks: each matching command gets the event's JSON payload on stdin, with `CLAUDE_PROJECT_DIR`,
`YEETUI_RUN_ID`, `YEETUI_SESSION_ID` and `YEETUI_HOOK_EVENT` in its environment, within its timeout (its whole
process group is killed past it). What they answer is folded into one `HookOutcome`; a failing hook is
reported on the bus and changes nothing.

Where and how: every hook starts outside the project unless its config names a folder (`settings.pins.neutral_dir`:
a planted `python -m` module or `npx` package is not found from there), and with no provider key in its
environment unless its config names that variable. A trusted project's hooks (its `.claude/settings.json`) run
inside the writable agents' sandbox, with every secret-named variable removed as for `bash`, and only while the
project files they name and the executables they run are those the user trusted; where no sandbox works here,
not at all unless the user's own config names the command (`project_grants.unconfined_hooks`). What a hook
leaves running — also in a session of its own — ends with the run (`run_ended`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yeetui.bus import Bus
from yeetui.events import Notice
from yeetui.framing import framed
from yeetui.hooks.sources import HookCommand, HookSet
from yeetui.redact import is_secret_name, without_provider_keys
from yeetui.settings.pins import changes, neutral_dir, shell_command_pins
from yeetui.system.confine import ShieldsUnavailable, Unconfinable, confined, project_mechanism
from yeetui.system.processes import PROCESS_TAG, end_tagged
from yeetui.system.sandbox import Sandbox
from yeetui.text import cap, one_line
from yeetui.workspace import BashSandbox, WorkspaceBinding

log = logging.getLogger(__name__)

OUTPUT_CAP = 64 * 1024
"""Bytes of a hook's stdout and stderr kept."""
CONTEXT_EVENTS = frozenset({"UserPromptSubmit", "SessionStart"})
"""Events whose hooks' plain stdout is context for the agent (Claude Code's rule)."""
ENV_FILE_EVENTS = frozenset({"SessionStart"})
"""Events whose hooks get a `CLAUDE_ENV_FILE` to write: what they write there runs before each of the session's
bash commands (Claude Code sources it so: `export NODE_ENV=production`, a `nvm use` captured as exports)."""
ENV_FILE_CAP = 64 * 1024
"""Bytes of a hook's `CLAUDE_ENV_FILE` kept."""
_PERMISSION_ORDER = {"deny": 3, "ask": 2, "allow": 1}

TranscriptWriter = Callable[[str], Awaitable[Path | None]]
"""Writes a session's transcript as JSON lines for the hooks to read (`transcript_path`); its path."""


@dataclass
class HookOutcome:
    blocked: bool = False
    reason: str = ""
    """Why it was blocked (a hook's stderr, or its JSON `reason`)."""
    context: str = ""
    """What the hooks add for the agent to read (stdout of context events, `additionalContext`)."""
    permission: str | None = None
    """`allow`, `deny` or `ask`, when a hook decided a tool call's permission."""
    updated_input: dict[str, Any] | None = None
    """A PreToolUse hook's rewrite of the call's input (`hookSpecificOutput.updatedInput`, Claude Code's keys):
    the call runs with it, the permission rules and the sandbox applying to the rewritten call."""


@dataclass(frozen=True)
class HookConfinement:
    """How a project's hooks are confined: as the project's writable agents' bash (their sandbox mode and
    network), with yeetui's config and data dirs hidden; `unconfined`: commands the user's own config lets run
    outside the sandbox where none works here (`project_grants.unconfined_hooks`)."""

    bash_sandbox: BashSandbox = "auto"
    network: bool = False
    hidden: tuple[Path, ...] = ()
    unconfined: tuple[str, ...] = ()
    home: Path | None = None


class HookRunner:
    def __init__(self, hooks: HookSet, *, project_dir: Path, bus: Bus,
                 transcripts: TranscriptWriter | None = None, env: dict[str, str] | None = None,
                 confinement: HookConfinement | None = None) -> None:
        self.hooks, self.project_dir, self.bus = hooks, project_dir, bus
        self.transcripts = transcripts
        self.env = dict(os.environ if env is None else env)
        self.confinement = confinement or HookConfinement()
        self._tag = secrets.token_hex(8)
        self._runs_tagged: set[str] = set()
        self._env_files: dict[str, dict[str, str]] = {}
        """Per session, what each of its SessionStart hooks wrote in `CLAUDE_ENV_FILE` (by the hook's place)."""

    def env_script(self, session_ids: list[str]) -> str:
        """What the SessionStart hooks of these sessions (a run's own, then its parents') wrote in their
        `CLAUDE_ENV_FILE`, the outermost first: run before each bash command, as Claude Code sources it."""
        return "\n".join(text for session_id in reversed(session_ids)
                         for text in self._env_files.get(session_id, {}).values() if text.strip())

    async def transcript_path(self, session_id: str) -> str:
        """The session's transcript written for hooks to read (`agent_transcript_path` of a subagent)."""
        path = await self.transcripts(session_id) if self.transcripts is not None else None
        return str(path) if path else ""

    def unconfinable(self) -> list[str]:
        """The start-up notice for a project's hooks that will not run here for want of an OS sandbox (and no
        grant of the user's): one line naming them and how to run them anyway. Probes the sandbox: call it off
        the event loop."""
        commands = sorted({c.command for groups in self.hooks.groups.values() for group in groups
                           for c in group.commands
                           if c.scope == "project" and c.command not in self.confinement.unconfined})
        if not commands:
            return []
        try:
            project_mechanism(self.confinement.bash_sandbox)
        except Unconfinable as exc:
            named = ", ".join(f"`{cap(one_line(command), 80)}`" for command in commands)
            which = f"hook {named}" if len(commands) == 1 else f"hooks {named}"
            return [f"The project's {which} will not run: {unconfined_hook(commands[0], str(exc))}."]
        return []

    def has(self, event: str, target: str | None = None) -> bool:
        return bool(self.hooks.commands(event, target))

    async def fire(self, event: str, *, session_id: str, run_id: str | None = None, target: str | None = None,
                   **fields: Any) -> HookOutcome:
        """Run the hooks of `event` (those whose matcher takes `target`, a tool's name) with Claude Code's payload
        plus `fields`; what they decided together."""
        outcome = HookOutcome()
        commands = self.hooks.commands(event, target)
        if not commands:
            return outcome
        transcript = await self.transcripts(session_id) if self.transcripts is not None else None
        payload = {"session_id": session_id, "transcript_path": str(transcript) if transcript else "",
                   "cwd": str(self.project_dir), "hook_event_name": event, "permission_mode": "default",
                   "yeetui_run_id": run_id or "", **fields}
        base = {**self.env, "CLAUDE_PROJECT_DIR": str(self.project_dir), "YEETUI_SESSION_ID": session_id,
                "YEETUI_RUN_ID": run_id or "", "YEETUI_HOOK_EVENT": event}
        contexts: list[str] = []
        with contextlib.ExitStack() as held:
            env_folder = (Path(held.enter_context(tempfile.TemporaryDirectory(prefix="yeetui-hook-env-")))
                          if event in ENV_FILE_EVENTS else None)
            for n, command in enumerate(commands):
                env = self._environment(command, base, run_id)
                env_file = None
                if env_folder is not None:
                    env_file = env_folder / f"{event.lower()}-hook-{n}.sh"
                    env_file.touch(mode=0o600)
                    env["CLAUDE_ENV_FILE"] = str(env_file)
                answered = await self._run(command, payload, env, event,
                                           writable=(env_folder,) if env_folder is not None else ())
                if env_file is not None:
                    self._env_files.setdefault(session_id, {})[command.source] = self._env_file(env_file, command,
                                                                                                event)
                if answered is not None:
                    self._fold_answer(answered, command, event, outcome, contexts)
        outcome.context = cap("\n\n".join(contexts), 20_000)
        return outcome

    def _env_file(self, path: Path, command: HookCommand, event: str) -> str:
        """What a hook wrote in its `CLAUDE_ENV_FILE` (capped; a link or anything but a file is not read)."""
        try:
            with open(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NOFOLLOW)) as written:
                data = written.read(ENV_FILE_CAP + 1)
        except OSError:
            return ""
        if len(data) > ENV_FILE_CAP:
            self._report(command, event, f"its CLAUDE_ENV_FILE is over {ENV_FILE_CAP // 1024} KB; what follows "
                         "is left out")
            data = data[:ENV_FILE_CAP].rsplit(b"\n", 1)[0]
        return data.decode(errors="replace")

    def _fold_answer(self, answered: tuple[int, str, str], command: HookCommand, event: str,
                     outcome: HookOutcome, contexts: list[str]) -> None:
        """One hook's exit code and output, in Claude Code's terms, added to what the hooks decided so far."""
        code, out, err = answered
        if code == 2:
            outcome.blocked = True
            outcome.reason = outcome.reason or err.strip() or f"blocked by the {event} hook {command.command!r}"
            return
        if code != 0:
            self._report(command, event, f"exit {code}: {one_line(err)[:300] or 'no message'}")
            return
        said = _json_answer(out)
        if said is None:
            if event in CONTEXT_EVENTS and out.strip():
                contexts.append(out.strip())
            return
        _fold(outcome, said, contexts)

    async def compacting(self, session_id: str, run_id: str | None, trigger: str) -> None:
        """The conversation is about to be compacted (`trigger`: `manual` for /compact, `auto` near the context
        limit): its PreCompact hooks run."""
        if self.has("PreCompact", trigger):
            await self.fire("PreCompact", session_id=session_id, run_id=run_id, target=trigger, trigger=trigger,
                            custom_instructions="")

    async def compacted(self, session_id: str, run_id: str | None) -> str:
        """The conversation was compacted: its SessionStart hooks run again (`source: compact`, as in Claude
        Code); what they add for the agent, framed as their output (empty: nothing)."""
        if not self.has("SessionStart", "compact"):
            return ""
        started = await self.fire("SessionStart", session_id=session_id, run_id=run_id, target="compact",
                                  source="compact")
        if not started.context:
            return ""
        return f"[Context from your hooks]\n{framed('hook-output', started.context, writer='your hooks')}"

    def _environment(self, command: HookCommand, base: dict[str, str], run_id: str | None) -> dict[str, str]:
        """A user's hook: the environment less every provider key its config does not name; a project's: less
        every variable named like a secret, as an agent's bash. Tagged with the run, so what it leaves running
        ends with the run (`run_ended`)."""
        if command.scope == "project":
            env = {k: v for k, v in base.items() if not is_secret_name(k)}
        else:
            env = without_provider_keys(base, frozenset(command.env))
        tag = self._run_tag(run_id)
        self._runs_tagged.add(tag)
        return {**env, PROCESS_TAG: tag}

    def _run_tag(self, run_id: str | None) -> str:
        """The `PROCESS_TAG` of what this process's hooks start for the run `run_id`."""
        return f"hook-{self._tag}-{run_id or 'none'}"

    def _cwd(self, command: HookCommand) -> Path:
        return Path(command.cwd) if command.cwd else neutral_dir(self.project_dir, self.confinement.home)

    async def run_ended(self, run_id: str | None) -> None:
        """The run is over: whatever its hooks left running, also in a session of their own, ends."""
        tag = self._run_tag(run_id)
        if tag in self._runs_tagged:
            self._runs_tagged.discard(tag)
            await end_tagged(tag)

    async def close(self) -> None:
        for tag in list(self._runs_tagged):
            await end_tagged(tag)
        self._runs_tagged.clear()

    async def _run(self, command: HookCommand, payload: dict[str, Any], env: dict[str, str],
                   event: str, *, writable: tuple[Path, ...] = ()) -> tuple[int, str, str] | None:
        if command.scope != "project":
            return await self._confined(command, payload, env, event)
        # The transcripts are in yeetui's data dir, which the sandbox hides: a project's hook reads copies.
        with tempfile.TemporaryDirectory(prefix="yeetui-hook-") as shared:
            shown = await asyncio.to_thread(_with_copied_transcripts, payload, Path(shared))
            return await self._confined(command, shown, env, event, readable=(Path(shared),), writable=writable)

    async def _confined(self, command: HookCommand, payload: dict[str, Any], env: dict[str, str], event: str,
                        readable: tuple[Path, ...] = (), writable: tuple[Path, ...] = ()
                        ) -> tuple[int, str, str] | None:
        stdin = json.dumps(payload, default=str).encode()
        cwd = self._cwd(command)
        argv = ["bash", "-c", command.command]
        mechanism: Sandbox | None = None
        if command.scope == "project":
            now = await asyncio.to_thread(shell_command_pins, command.command, self.project_dir,
                                          path=env.get("PATH"))
            if now != dict(command.pins):
                changed = ", ".join(changes(dict(command.pins), now))
                self._report(command, event, f"not run: what it runs changed since you trusted the project "
                             f"({changed}); `yeetui trust` again once you have looked at it")
                return None
            if command.command not in self.confinement.unconfined:
                try:
                    mechanism = await asyncio.to_thread(project_mechanism, self.confinement.bash_sandbox)
                except Unconfinable as exc:
                    self._report(command, event, f"not run: {unconfined_hook(command.command, str(exc))}")
                    return None
        binding = WorkspaceBinding(cwd=cwd, roots=(self.project_dir,), protected=self.confinement.hidden,
                                   bash_sandbox=self.confinement.bash_sandbox, network=self.confinement.network)
        try:
            async with confined(argv, binding, env, mechanism, readable=(cwd, *readable),
                                writable=writable) as (wrapped, pass_fds):
                return await self._spawn(command, wrapped, cwd, stdin, env, event, pass_fds)
        except ShieldsUnavailable as exc:
            self._report(command, event, f"not run: {exc}")
            return None

    async def _spawn(self, command: HookCommand, argv: list[str], cwd: Path, stdin: bytes, env: dict[str, str],
                     event: str, pass_fds: tuple[int, ...]) -> tuple[int, str, str] | None:
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True, pass_fds=pass_fds)
        except OSError as exc:
            self._report(command, event, f"could not start: {exc.strerror or exc}")
            return None
        try:
            out, err = await asyncio.wait_for(process.communicate(stdin), command.timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            self._report(command, event, f"did not finish within {command.timeout:g} s and was stopped")
            return None
        except asyncio.CancelledError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            raise
        return (process.returncode if process.returncode is not None else -1,
                out[:OUTPUT_CAP].decode(errors="replace"), err[:OUTPUT_CAP].decode(errors="replace"))

    def _report(self, command: HookCommand, event: str, what: str) -> None:
        text = f"The {event} hook `{one_line(command.command)[:120]}` ({command.source}) failed: {what}."
        log.warning("%s", text)
        self.bus.publish(Notice("warning", text))


def _json_answer(out: str) -> dict[str, Any] | None:
    text = out.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _fold(outcome: HookOutcome, said: dict[str, Any], contexts: list[str]) -> None:
    """A hook's JSON answer, in Claude Code's terms, added to what the hooks decided so far."""
    reason = said.get("reason") if isinstance(said.get("reason"), str) else ""
    if said.get("decision") == "block" or said.get("continue") is False:
        outcome.blocked = True
        stop = said.get("stopReason") if isinstance(said.get("stopReason"), str) else ""
        outcome.reason = outcome.reason or reason or stop or "blocked by a hook"
    specific = said.get("hookSpecificOutput")
    if not isinstance(specific, dict):
        return
    decision = specific.get("permissionDecision")
    behavior = specific.get("decision", {}).get("behavior") if isinstance(specific.get("decision"), dict) else None
    chosen = decision if decision in _PERMISSION_ORDER else behavior if behavior in ("allow", "deny") else None
    if chosen is not None and _PERMISSION_ORDER[chosen] > _PERMISSION_ORDER.get(outcome.permission or "", 0):
        outcome.permission = chosen
        why = specific.get("permissionDecisionReason")
        if chosen == "deny":
            outcome.reason = outcome.reason or (why if isinstance(why, str) and why else "denied by a hook")
    if isinstance(specific.get("updatedInput"), dict):
        outcome.updated_input = {**(outcome.updated_input or {}), **specific["updatedInput"]}
    extra = specific.get("additionalContext")
    if isinstance(extra, str) and extra.strip():
        contexts.append(extra.strip())


def _with_copied_transcripts(payload: dict[str, Any], folder: Path) -> dict[str, Any]:
    """`payload` with each transcript it names copied into `folder` and named there."""
    shown = dict(payload)
    for key, value in payload.items():
        if key.endswith("transcript_path") and isinstance(value, str) and value and os.path.isfile(value):
            copy = folder / f"{key}-{Path(value).name}"
            shutil.copyfile(value, copy)
            shown[key] = str(copy)
    return shown


def unconfined_hook(command: str, why: str) -> str:
    """Why a project's hook does not run where no OS sandbox confines it, and how to run it anyway."""
    return (f"{why}, so a project's hook (code an agent could write) cannot be confined; to run it unconfined, "
            f"name it in your own ~/.config/yeetui/config.yaml: `project_grants: {{unconfined_hooks: "
            f"[{json.dumps(command)}]}}`")
