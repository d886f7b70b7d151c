"""The frames an ACP client writes on stdin, checked before the SDK's connection takes them.

The SDK's receive loop takes every JSON value it parses for a message object, and one that is not ended it: a
frame that is an array, a number or a string (`[]`, `42`, `"x"`), an id that is an array or an object, an answer
whose error is not an object — each raised inside the loop — and `null`, which its transport returns as the end
of the stream; `yeetui acp` exited on any of them. The client is a program, and what it writes is hostile input.
`FrameGuard` reads the lines in the SDK transport's place: a line that is not JSON is answered with Parse error
(-32700), a frame that is not a request, a notification or an answer with Invalid Request (-32600, with the
frame's id when it has a usable one, else null, as JSON-RPC 2.0 says), and the next line is read. An answer that
answers nothing usable (no result, an error that is not an object with a code and a message) fails the one
request it answers with an internal error.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from typing import Any

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603


class FrameGuard:
    """A transport of the SDK (`send`, `receive`, `close`): the lines of `reader`, as messages its connection can
    take; what it sends and closing go through `inner`, the SDK's own newline-delimited transport."""

    def __init__(self, reader: asyncio.StreamReader, inner: Any) -> None:
        self._reader = reader
        self._inner = inner

    async def send(self, message: dict[str, Any]) -> None:
        await self._inner.send(message)

    async def close(self) -> None:
        await self._inner.close()

    async def receive(self) -> dict[str, Any] | None:
        while line := await self._line():
            if not line.strip():
                continue
            try:
                frame = json.loads(line)
            except (ValueError, RecursionError):  # not JSON, or nested too deep to read
                await self._refuse(None, PARSE_ERROR, "Parse error", "the frame is not JSON")
                continue
            problem = _problem(frame)
            if problem is None:
                return _answer_checked(frame)
            given = frame.get("id") if isinstance(frame, dict) else None
            await self._refuse(given if _usable_id(given) else None, INVALID_REQUEST, "Invalid Request", problem)
        return None  # the end of the stream

    async def _refuse(self, frame_id: object, code: int, message: str, reason: str) -> None:
        log.warning("the ACP client sent a frame that is not a JSON-RPC message: %s", reason)
        await self._inner.send({"jsonrpc": "2.0", "id": frame_id,
                                "error": {"code": code, "message": message, "data": {"reason": reason}}})

    async def _line(self) -> bytes:
        """The next line, as the SDK's transport reads it (a line longer than the reader's limit too); empty at
        the end of the stream."""
        chunks: list[bytes] = []
        try:
            while True:
                try:
                    chunks.append(await self._reader.readuntil(b"\n"))
                    return b"".join(chunks)
                except asyncio.LimitOverrunError as exc:
                    chunks.append(await self._reader.readexactly(exc.consumed))
        except asyncio.IncompleteReadError as exc:
            return b"".join([*chunks, exc.partial])


def guard(connection: Any) -> None:
    """Have a FrameGuard read in place of an SDK `AgentSideConnection`'s transport, before it has read anything
    (its `on_connect`). The SDK offers no other way in: its JSON-RPC connection's transport is replaced, and the
    stream reader its newline-delimited transport reads is taken over."""
    inner = connection._conn
    inner._transport = FrameGuard(inner._transport._reader, inner._transport)


def _problem(frame: object) -> str | None:
    """Why `frame` is no JSON-RPC message the connection can take, or None."""
    if not isinstance(frame, dict):
        return f"a frame must be a JSON object, not {_kind(frame)}"
    if "id" in frame and not _usable_id(frame["id"]):
        return f"an id must be a string, a number or null, not {_kind(frame['id'])}"
    if "method" in frame and not isinstance(frame["method"], str):
        return f"a method must be a string, not {_kind(frame['method'])}"
    if "method" not in frame and "id" not in frame:
        return "a frame must carry a method (a request or a notification) or an id (an answer)"
    return None


def _answer_checked(message: dict[str, Any]) -> dict[str, Any]:
    """An answer to one of the agent's requests with neither a result nor an error object the SDK can read (a
    code and a message): made an internal error, so that request fails instead of breaking the connection or
    waiting for good."""
    if "method" in message or "result" in message:
        return message
    error = message.get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), int) and isinstance(error.get("message"), str):
        return message
    return {**message, "error": {"code": INTERNAL_ERROR, "message": "the client's answer was malformed",
                                 "data": {"error": _kind(error)}}}


def _usable_id(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return value is None or isinstance(value, str | int) or (isinstance(value, float) and math.isfinite(value))


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
