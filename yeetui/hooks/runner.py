"""Running hooks: each matching command gets the event's JSON payload on stdin, in the project directory, with
`CLAUDE_PROJECT_DIR`, `YEETUI_RUN_ID`, `YEETUI_SESSION_ID` and `YEETUI_HOOK_EVENT` in its environment, within
its timeout (its whole process group is killed past it). What they answer is folded into one `HookOutcome`;
a failing hook is reported on the bus and changes nothing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yeetui.bus import Bus
from yeetui.events import Notice
from yeetui.hooks.sources import HookCommand, HookSet
from yeetui.text import cap, one_line

log = logging.getLogger(__name__)

OUTPUT_CAP = 64 * 1024
"""Bytes of a hook's stdout and stderr kept."""
CONTEXT_EVENTS = frozenset({"UserPromptSubmit", "SessionStart"})
"""Events whose hooks' plain stdout is context for the agent (Claude Code's rule)."""
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


class HookRunner:
    def __init__(self, hooks: HookSet, *, project_dir: Path, bus: Bus,
                 transcripts: TranscriptWriter | None = None, env: dict[str, str] | None = None) -> None:
        self.hooks, self.project_dir, self.bus = hooks, project_dir, bus
        self.transcripts = transcripts
        self.env = dict(os.environ if env is None else env)

    async def transcript_path(self, session_id: str) -> str:
        """The session's transcript written for hooks to read (`agent_transcript_path` of a subagent)."""
        path = await self.transcripts(session_id) if self.transcripts is not None else None
        return str(path) if path else ""

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
        env = {**self.env, "CLAUDE_PROJECT_DIR": str(self.project_dir), "YEETUI_SESSION_ID": session_id,
               "YEETUI_RUN_ID": run_id or "", "YEETUI_HOOK_EVENT": event}
        contexts = []
        for command in commands:
            answered = await self._run(command, json.dumps(payload, default=str).encode(), env, event)
            if answered is None:
                continue
            code, out, err = answered
            if code == 2:
                outcome.blocked = True
                outcome.reason = outcome.reason or err.strip() or f"blocked by the {event} hook {command.command!r}"
                continue
            if code != 0:
                self._report(command, event, f"exit {code}: {one_line(err)[:300] or 'no message'}")
                continue
            said = _json_answer(out)
            if said is None:
                if event in CONTEXT_EVENTS and out.strip():
                    contexts.append(out.strip())
                continue
            _fold(outcome, said, contexts)
        outcome.context = cap("\n\n".join(contexts), 20_000)
        return outcome

    async def _run(self, command: HookCommand, stdin: bytes, env: dict[str, str],
                   event: str) -> tuple[int, str, str] | None:
        try:
            process = await asyncio.create_subprocess_exec(
                "bash", "-c", command.command, cwd=self.project_dir, env=env, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
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
    extra = specific.get("additionalContext")
    if isinstance(extra, str) and extra.strip():
        contexts.append(extra.strip())
