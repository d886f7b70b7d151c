"""An external agent program speaking the Agent Client Protocol, with yeetui as its client.

The program (Claude Code's ACP adapter, `opencode acp`, Codex's or Gemini CLI's) runs in a session and process
group of its own, so closing it stops whatever it started. Everything it sends is hostile input: the SDK checks
the messages it has models for; `session/update`s are taken as they arrived (`on_update`, before the SDK's
models — which do not know the subagent messages — see them) and the caller checks each field it reads. A
program that does not start, does not answer `initialize`, writes what is not JSON-RPC, or exits in a turn
ends with an `ExternalAgentError` naming the reason, with the tail of what it wrote to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from yeetui.errors import YeetuiError
from yeetui.redact import redact
from yeetui.text import cap, terminal_safe

log = logging.getLogger(__name__)

START_TIMEOUT = 60.0
"""Seconds a program has to answer `initialize` and open a session (an npm package's first start is slow)."""
PROTOCOL_VERSION = 1
STDERR_TAIL = 2000

AskHandler = Callable[[str, dict[str, Any], list[dict[str, Any]]], Awaitable[str | None]]
"""(session id, tool call, options) → the chosen option id, or None for cancelled."""


class ExternalAgentError(YeetuiError):
    pass


class _Client:
    """The client side the SDK calls: permission requests go to yeetui; updates were taken off the wire."""

    def __init__(self, ask: AskHandler) -> None:
        self._ask = ask

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **_: Any) -> Any:
        from acp import schema

        call = tool_call.model_dump(mode="json", by_alias=True, exclude_none=True)
        offered = [o.model_dump(mode="json", by_alias=True, exclude_none=True) for o in options]
        chosen = await self._ask(session_id, call, offered)
        if chosen is None:
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected", option_id=chosen))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        return None  # taken raw by the observer, in order, unknown kinds included

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


class ExternalAgent:
    """One running program and the ACP connection to it."""

    def __init__(self, command: str, args: Sequence[str], *, env: Mapping[str, str], cwd: Path,
                 on_update: Callable[[str, dict[str, Any]], None], ask: AskHandler,
                 secrets: Sequence[str] = ()) -> None:
        self.command, self.args, self.env, self.cwd = command, list(args), dict(env), cwd
        self._on_update = on_update
        self._client = _Client(ask)
        self._secrets = list(secrets)
        self._process: asyncio.subprocess.Process | None = None
        self._conn: Any = None
        self._stderr = tempfile.TemporaryFile("w+b")
        self.info: dict[str, Any] = {}
        """What it said of itself at `initialize` (agentInfo, agentCapabilities)."""

    async def start(self, *, timeout: float = START_TIMEOUT) -> None:
        from acp.client.connection import ClientSideConnection

        program = shutil.which(self.command, path=self.env.get("PATH", os.environ.get("PATH")))
        if program is None:
            raise ExternalAgentError(f"the agent's command was not found: {self.command}")
        try:
            self._process = await asyncio.create_subprocess_exec(
                program, *self.args, cwd=self.cwd, env=self.env, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=self._stderr, start_new_session=True, limit=50 * 1024 * 1024)
        except OSError as exc:
            raise ExternalAgentError(f"the agent could not be started: {exc.strerror or exc}") from None
        assert self._process.stdin is not None and self._process.stdout is not None
        # The SDK routes only the methods `_Client` has; its protocol class names every client method.
        self._conn = ClientSideConnection(cast(Any, self._client), self._process.stdin, self._process.stdout,
                                          observers=[self._observe])
        answer = await self._request("initialize", {
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False,
                                   "subagents": {}},
            "clientInfo": {"name": "yeetui", "title": "yeetui", "version": _version()}}, timeout, "initialize")
        self.info = answer if isinstance(answer, dict) else {}

    async def new_session(self, *, timeout: float = START_TIMEOUT) -> dict[str, Any]:
        answer = await self._request("session/new", {"cwd": str(self.cwd), "mcpServers": []}, timeout,
                                     "open a session")
        if not isinstance(answer, dict) or not isinstance(answer.get("sessionId"), str):
            raise ExternalAgentError("it answered session/new without a session id")
        return answer

    async def load_session(self, session_id: str, *, timeout: float = START_TIMEOUT) -> None:
        """Have it replay a session's conversation as updates (OpenCode's subagents are read back this way)."""
        await self._request("session/load", {"sessionId": session_id, "cwd": str(self.cwd), "mcpServers": []},
                            timeout, "load a session")

    @property
    def can_load(self) -> bool:
        capabilities = self.info.get("agentCapabilities")
        return isinstance(capabilities, dict) and capabilities.get("loadSession") is True

    async def set_mode(self, session_id: str, mode: str) -> None:
        await self._request("session/set_mode", {"sessionId": session_id, "modeId": mode}, START_TIMEOUT,
                            f"set its mode to {mode}")

    async def prompt(self, session_id: str, text: str) -> dict[str, Any]:
        """A turn, to its end (no timeout here: the run's own bounds it)."""
        answer = await self._request("session/prompt", {"sessionId": session_id, "prompt": [
            {"type": "text", "text": text}]}, None, "run the turn")
        return answer if isinstance(answer, dict) else {}

    async def cancel(self, session_id: str) -> None:
        if self._conn is not None and self.running:
            with contextlib.suppress(Exception):
                await self._conn._conn.send_notification("session/cancel", {"sessionId": session_id})

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    def stderr_tail(self) -> str:
        """The end of what it wrote to stderr, keys redacted, terminal-safe."""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - STDERR_TAIL * 4))
            text = self._stderr.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        return cap(terminal_safe(redact(text, self._secrets)).strip(), STDERR_TAIL, keep="tail")

    async def close(self) -> None:
        """Stop it and everything it started (its process group): TERM, then KILL after a moment."""
        process = self._process
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._conn.close(), 2)
        if process is not None and process.returncode is None:
            for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), wait)
                    break
        elif process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # what it left running in its group
        self._stderr.close()

    # -- inside -------------------------------------------------------------------------------------------

    def _observe(self, event: Any) -> None:
        message = getattr(event, "message", None)
        if getattr(event, "direction", None) != "incoming" or not isinstance(message, dict):
            return
        if message.get("method") != "session/update":
            return
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str) \
                or not isinstance(params.get("update"), dict):
            log.warning("an external agent sent a session/update without a session or an update; ignored")
            return
        try:
            self._on_update(params["sessionId"], params["update"])
        except Exception:  # what it sent must not break the connection's reading
            log.exception("an external agent's update could not be taken")

    async def _request(self, method: str, params: dict[str, Any], timeout: float | None, what: str) -> Any:
        """`method`, answered — or an ExternalAgentError: no answer in time, an error answer, or the program
        gone (its exit ends the wait at once, with its stderr)."""
        from acp import RequestError

        assert self._process is not None
        call = asyncio.ensure_future(self._conn._conn.send_request(method, params))
        exited = asyncio.ensure_future(self._process.wait())
        try:
            done, _ = await asyncio.wait({call, exited}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            call.cancel()
            raise
        finally:
            exited.cancel()
        if call in done:
            try:
                return call.result()
            except RequestError as exc:
                raise ExternalAgentError(f"it refused to {what}: {cap(terminal_safe(str(exc)), 500)}"
                                         f"{self._tail()}") from None
            except Exception as exc:
                raise ExternalAgentError(f"the connection failed while it was to {what}: "
                                         f"{cap(terminal_safe(str(exc) or type(exc).__name__), 500)}{self._tail()}"
                                         ) from None
        call.cancel()
        if exited in done or not self.running:
            raise ExternalAgentError(f"it exited (status {self._process.returncode}) before it could {what}"
                                     f"{self._tail()}")
        raise ExternalAgentError(f"it did not {what} within {timeout:g} s{self._tail()}")

    def _tail(self) -> str:
        tail = self.stderr_tail()
        return f"; it wrote: {tail}" if tail else ""


def _version() -> str:
    from yeetui import __version__

    return __version__
