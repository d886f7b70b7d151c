"""What the wire formats share: the HTTP sink they write through, the request context, and small helpers.

The wire modules (`wire_anthropic`, `wire_openai`, `wire_responses`, `wire_gemini`) turn one `Reply` into bytes on a
`Sink`; the server owns sockets, recording and script selection.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakellm.script import Reply, ToolCall

_FILLER = "The quick brown fox jumps over the lazy dog. "

_TO_OPENAI_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_TO_ANTHROPIC_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


class Aborted(Exception):
    """The fake server is stopping; the response in progress is abandoned."""


@dataclass
class Exchange:
    """One request as a wire module sees it."""

    number: int
    """1-based request number on this server."""
    body: dict[str, Any]
    usage: dict[str, int]
    """input_tokens / output_tokens / cache_read_tokens / cache_write_tokens, already defaulted."""

    @property
    def model(self) -> str:
        model = self.body.get("model")
        return model if isinstance(model, str) and model else "fake-model"

    @property
    def streaming(self) -> bool:
        return self.body.get("stream") is True


class Sink:
    """Writes one HTTP response: either a whole JSON document or a chunked `text/event-stream`."""

    def __init__(
        self,
        handler: BaseHTTPRequestHandler,
        closing: threading.Event,
        on_status: Callable[[int], None] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> None:
        """`on_status` runs before the headers go out, `on_done` before the last bytes (or the drop), so a
        client that has seen the whole response also sees it recorded as finished."""
        self._handler = handler
        self._closing = closing
        self._on_status = on_status
        self._on_done = on_done
        self.status: int | None = None
        self.headers_sent = False
        self._streaming = False

    def json(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        self.send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def send_bytes(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        """A whole response; `headers` may override Content-Length (to promise more than is sent)."""
        length = str(len(data))
        self._head(status, {"Content-Type": content_type, "Content-Length": length, **(headers or {})})
        self._done()
        self._handler.wfile.write(data)

    def begin_stream(self, headers: dict[str, str] | None = None) -> None:
        """Send 200 headers for a server-sent-event stream in chunked transfer encoding."""
        self._head(200, {
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
            **(headers or {}),
        })
        self._streaming = True

    def event(self, data: object, name: str | None = None) -> None:
        """One SSE event; `data` is JSON-encoded unless it is already a string."""
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        self.raw(f"event: {name}\ndata: {text}\n\n" if name else f"data: {text}\n\n")

    def raw(self, text: str) -> None:
        """Write exact text as one chunk of the stream (used for deliberately broken SSE)."""
        data = text.encode()
        if not data:
            return
        self._handler.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))

    def end_stream(self) -> None:
        self._done()
        self._handler.wfile.write(b"0\r\n\r\n")
        self._streaming = False

    def pause(self, seconds: float) -> None:
        if seconds > 0 and self._closing.wait(seconds):
            raise Aborted
        if self._closing.is_set():
            raise Aborted

    def drop(self) -> None:
        """Close the connection abruptly: the client sees a response cut off mid-body."""
        self._handler.close_connection = True
        self._done()
        try:
            self._handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _done(self) -> None:
        if self._on_done is not None:
            self._on_done()

    def _head(self, status: int, headers: dict[str, str]) -> None:
        self.status = status
        if self._on_status is not None:
            self._on_status(status)
        self._handler.send_response(status)
        for key, value in headers.items():
            self._handler.send_header(key, value)
        self._handler.end_headers()
        self.headers_sent = True


def pieces(text: str, size: int) -> list[str]:
    """Split text into `size`-character deltas (at least one piece, possibly empty)."""
    size = max(1, size)
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def split_in(text: str, count: int) -> list[str]:
    """Split text into at most `count` roughly equal, non-empty pieces (one empty piece for "")."""
    if not text:
        return [""]
    size = -(-len(text) // max(1, count))
    return [text[i:i + size] for i in range(0, len(text), size)]


def arguments_text(call: ToolCall) -> str:
    return call.raw if call.raw is not None else json.dumps(call.arguments)


def fault_text(reply: Reply) -> str:
    """The text streamed before an in-stream fault: `after_chars` characters of the reply's text (padded)."""
    assert reply.fault is not None
    want = reply.fault.after_chars
    text = reply.text
    while len(text) < want:
        text += _FILLER
    return text[:want]


def stop_reason(reply: Reply, api: str) -> str:
    """The reply's stop reason in the given API's vocabulary; `Reply.stop` may use either vocabulary."""
    if reply.stop is None:
        if api == "anthropic":
            return "tool_use" if reply.tool_calls else "end_turn"
        return "tool_calls" if reply.tool_calls else "stop"
    table = _TO_ANTHROPIC_STOP if api == "anthropic" else _TO_OPENAI_STOP
    return table.get(reply.stop, reply.stop)


def usage_for(reply: Reply, request_text: str) -> dict[str, int]:
    """`Reply.usage` where given, else plausible counts (about four characters per token)."""
    given = reply.usage or {}
    produced = (reply.text + (reply.thinking or "")
                + "".join(call.name + arguments_text(call) for call in reply.tool_calls))
    return {
        "input_tokens": given.get("input_tokens", max(1, len(request_text) // 4)),
        "output_tokens": given.get("output_tokens", max(1, len(produced) // 4)),
        "cache_read_tokens": given.get("cache_read_tokens", 0),
        "cache_write_tokens": given.get("cache_write_tokens", 0),
    }


def retry_after_header(seconds: float | None) -> dict[str, str]:
    if seconds is None:
        return {}
    return {"retry-after": str(int(seconds)) if float(seconds).is_integer() else str(seconds)}
