"""The Anthropic Messages API wire format (`POST /v1/messages`): JSON replies, SSE streams and errors."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tests.fakellm.script import Reply
from tests.fakellm.wire_common import (
    Exchange,
    Sink,
    arguments_text,
    fault_text,
    pieces,
    retry_after_header,
    split_in,
    stop_reason,
)

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_ERROR_MESSAGES = {
    "invalid_request_error": "fake LLM: invalid request",
    "authentication_error": "invalid x-api-key",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "not_found_error": "fake LLM: not found",
    "request_too_large": "Request exceeds the maximum allowed number of bytes.",
    "rate_limit_error": "This request would exceed the rate limit for your organization (fake LLM).",
    "api_error": "Internal server error",
    "overloaded_error": "Overloaded",
}


def signature_for(thinking: str) -> str:
    """The deterministic signature the fake server attaches to a thinking block."""
    return "fakesig-" + hashlib.sha256(thinking.encode()).hexdigest()[:40]


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message or _ERROR_MESSAGES[kind]}}


def send_error(
    out: Sink, status: int, message: str | None = None, retry_after: float | None = None, param: str | None = None
) -> None:
    """An error response; `param` is accepted for symmetry with OpenAI but Anthropic errors carry none."""
    headers = {"request-id": "req_fake", **retry_after_header(retry_after)}
    out.json(status, error_body(status, message), headers)


def respond(reply: Reply, ex: Exchange, out: Sink) -> None:
    fault = reply.fault
    if fault is not None and fault.kind == "status":
        send_error(out, fault.status, fault.message, retry_after=fault.retry_after)
    elif ex.streaming:
        _stream(reply, ex, out)
    elif fault is None:
        out.json(200, message(reply, ex), {"request-id": f"req_fake_{ex.number}"})
    else:
        _fault_without_stream(reply, ex, out)


def message(reply: Reply, ex: Exchange) -> dict[str, Any]:
    """The complete non-streaming Message object."""
    content: list[dict[str, Any]] = []
    if reply.thinking is not None:
        signature = signature_for(reply.thinking)
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": signature})
    if reply.text or not reply.tool_calls:
        content.append({"type": "text", "text": reply.text})
    for i, call in enumerate(reply.tool_calls):
        raw = arguments_text(call)
        try:
            arguments: object = json.loads(raw)
        except ValueError:
            arguments = raw  # malformed on purpose: hand it over as the bare string
        tool_id = _tool_id(call.id, ex, i)
        content.append({"type": "tool_use", "id": tool_id, "name": call.name, "input": arguments})
    return {
        **_envelope(ex, content),
        "stop_reason": stop_reason(reply, "anthropic"),
        "usage": {**_input_usage(ex), "output_tokens": ex.usage["output_tokens"]},
    }


def _stream(reply: Reply, ex: Exchange, out: Sink) -> None:
    out.begin_stream({"request-id": f"req_fake_{ex.number}"})
    _emit(out, {"type": "message_start", "message": {
        **_envelope(ex, []), "stop_reason": None, "usage": {**_input_usage(ex), "output_tokens": 1},
    }})
    _emit(out, {"type": "ping"})
    if reply.fault is not None:
        _stream_fault(reply, out)
        return
    index = 0
    if reply.thinking is not None:
        thinking = pieces(reply.thinking, reply.chunk_size)
        _block(out, index, {"type": "thinking", "thinking": "", "signature": ""}, reply, [
            *({"type": "thinking_delta", "thinking": piece} for piece in thinking),
            {"type": "signature_delta", "signature": signature_for(reply.thinking)},
        ])
        index += 1
    if reply.text or not reply.tool_calls:
        _block(out, index, {"type": "text", "text": ""}, reply, [
            {"type": "text_delta", "text": piece} for piece in pieces(reply.text, reply.chunk_size)
        ])
        index += 1
    for i, call in enumerate(reply.tool_calls):
        start = {"type": "tool_use", "id": _tool_id(call.id, ex, i), "name": call.name, "input": {}}
        _block(out, index, start, reply, [
            {"type": "input_json_delta", "partial_json": piece} for piece in split_in(arguments_text(call), 3)
        ])
        index += 1
    _emit(out, {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(reply, "anthropic"), "stop_sequence": None},
        "usage": {**_input_usage(ex), "output_tokens": ex.usage["output_tokens"]},
    })
    _emit(out, {"type": "message_stop"})
    out.end_stream()


def _stream_fault(reply: Reply, out: Sink) -> None:
    """Stream `after_chars` of text, then fail the way the fault says."""
    assert reply.fault is not None
    text = fault_text(reply)
    if text:
        _emit(out, {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        for piece in pieces(text, reply.chunk_size):
            delta = {"type": "text_delta", "text": piece}
            _emit(out, {"type": "content_block_delta", "index": 0, "delta": delta})
            out.pause(reply.chunk_delay)
    kind = reply.fault.kind
    if kind == "drop":
        out.drop()
        return
    if kind == "overloaded_in_stream":
        out.event(error_body(529, reply.fault.message), "error")
    else:  # malformed_sse
        out.raw('event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"ty\n\n')
    out.end_stream()


def _fault_without_stream(reply: Reply, ex: Exchange, out: Sink) -> None:
    """An in-stream fault scripted for a non-streaming request: the nearest equivalent."""
    assert reply.fault is not None
    if reply.fault.kind == "overloaded_in_stream":
        send_error(out, 529, reply.fault.message)
        return
    data = json.dumps(message(reply, ex)).encode()
    if reply.fault.kind == "drop":
        out.send_bytes(200, data[: len(data) // 2], "application/json", {"Content-Length": str(len(data))})
        out.drop()
    else:
        out.send_bytes(200, data[: len(data) // 2], "application/json")


def _block(out: Sink, index: int, start: dict[str, Any], reply: Reply, deltas: list[dict[str, Any]]) -> None:
    _emit(out, {"type": "content_block_start", "index": index, "content_block": start})
    for delta in deltas:
        _emit(out, {"type": "content_block_delta", "index": index, "delta": delta})
        out.pause(reply.chunk_delay)
    _emit(out, {"type": "content_block_stop", "index": index})


def _emit(out: Sink, payload: dict[str, Any]) -> None:
    out.event(payload, payload["type"])


def _envelope(ex: Exchange, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{ex.number}",
        "type": "message",
        "role": "assistant",
        "model": ex.model,
        "content": content,
        "stop_sequence": None,
    }


def _input_usage(ex: Exchange) -> dict[str, int]:
    return {
        "input_tokens": ex.usage["input_tokens"],
        "cache_creation_input_tokens": ex.usage["cache_write_tokens"],
        "cache_read_input_tokens": ex.usage["cache_read_tokens"],
    }


def _tool_id(given: str | None, ex: Exchange, i: int) -> str:
    return given or f"toolu_fake_{ex.number}_{i}"
