"""The OpenAI chat-completions wire format (`POST /v1/chat/completions`): JSON, SSE chunks and errors.

Usage mapping: `prompt_tokens` = input_tokens + cache_read_tokens (OpenAI counts cached tokens inside the
prompt), `prompt_tokens_details.cached_tokens` = cache_read_tokens; OpenAI has no cache-write count, so
cache_write_tokens is not reported. Thinking is streamed as `reasoning_content` deltas (the field litellm
reads for reasoning models); the openai SDK keeps it as an extra attribute.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.fakellm.script import Fault, Reply
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

_CREATED = 1_700_000_000
_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "fake LLM: invalid request"),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Request not allowed."),
    404: ("invalid_request_error", "model_not_found", "fake LLM: the model does not exist."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests (fake LLM)."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", "overloaded", "The engine is currently overloaded, please try again later."),
    529: ("server_error", "overloaded", "The engine is currently overloaded, please try again later."),
}


def error_body(status: int, message: str | None = None, param: str | None = None) -> dict[str, Any]:
    kind, code, default = _ERRORS.get(status, ("server_error", None, "fake LLM: error"))
    return {"error": {"message": message or default, "type": kind, "param": param, "code": code}}


def send_error(
    out: Sink, status: int, message: str | None = None, retry_after: float | None = None, param: str | None = None
) -> None:
    """An error response; `param` names the offending request parameter, as OpenAI's 400s do."""
    headers = {"x-request-id": "req_fake", **retry_after_header(retry_after)}
    out.json(status, error_body(status, message, param), headers)


def respond(reply: Reply, ex: Exchange, out: Sink) -> None:
    respond_with(reply, ex, out, body=completion, stream=_stream)


def respond_with(reply: Reply, ex: Exchange, out: Sink, *, body: Callable[[Reply, Exchange], dict[str, Any]],
                 stream: Callable[[Reply, Exchange, Sink], None]) -> None:
    """OpenAI's way of answering — the body, its stream, or the scripted fault in OpenAI's error shapes — for
    chat completions and the Responses API alike (`body`, `stream`: the API's own)."""
    fault = reply.fault
    if fault is not None and fault.kind == "status":
        send_error(out, fault.status, fault.message, retry_after=fault.retry_after)
    elif ex.streaming:
        stream(reply, ex, out)
    elif fault is None:
        out.json(200, body(reply, ex), {"x-request-id": f"req_fake_{ex.number}"})
    elif fault.kind == "overloaded_in_stream":
        send_error(out, 503, fault.message)
    else:
        data = json.dumps(body(reply, ex)).encode()
        out.send_bytes(200, data[: len(data) // 2], "application/json", {"Content-Length": str(len(data))})
        if fault.kind == "drop":
            out.drop()


def completion(reply: Reply, ex: Exchange) -> dict[str, Any]:
    """The complete non-streaming `chat.completion` object."""
    content = reply.text if reply.text or not reply.tool_calls else None
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if reply.thinking is not None:
        message["reasoning_content"] = reply.thinking
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": _call_id(call.id, ex, i), "type": "function",
             "function": {"name": call.name, "arguments": arguments_text(call)}}
            for i, call in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-fake-{ex.number}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": ex.model,
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": stop_reason(reply, "openai")}],
        "usage": _usage(ex),
    }


def _stream(reply: Reply, ex: Exchange, out: Sink) -> None:
    options = ex.body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    out.begin_stream({"x-request-id": f"req_fake_{ex.number}"})

    sent = 0

    def chunk(delta: dict[str, Any], finish: str | None = None, pause: bool = True) -> None:
        nonlocal sent
        payload = _chunk(ex, delta, finish)
        if reply.usage_every_chunk:
            sent += 1
            so_far = _usage(ex)
            so_far["completion_tokens"] = min(sent, ex.usage["output_tokens"])
            so_far["total_tokens"] = so_far["prompt_tokens"] + so_far["completion_tokens"]
            payload["usage"] = so_far
        elif include_usage:
            payload["usage"] = None
        out.event(payload)
        if pause:
            out.pause(reply.chunk_delay)

    chunk({"role": "assistant", "content": ""}, pause=False)
    if reply.fault is not None:
        _stream_fault(reply, reply.fault, out, chunk)
        return
    if reply.thinking is not None:
        for piece in pieces(reply.thinking, reply.chunk_size):
            chunk({"reasoning_content": piece})
    if reply.text:
        for piece in pieces(reply.text, reply.chunk_size):
            chunk({"content": piece})
    for i, call in enumerate(reply.tool_calls):
        chunk({"tool_calls": [{"index": i, "id": _call_id(call.id, ex, i), "type": "function",
                               "function": {"name": call.name, "arguments": ""}}]})
        for piece in split_in(arguments_text(call), 3):
            chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    last = _chunk(ex, {}, stop_reason(reply, "openai"))
    if include_usage:
        out.event({**last, "usage": None})
        out.event({**_chunk(ex, {}, None), "choices": [], "usage": _usage(ex)})
    else:
        out.event({**last, "usage": _usage(ex)})
    out.event("[DONE]")
    out.end_stream()


def _stream_fault(reply: Reply, fault: Fault, out: Sink, chunk: Callable[[dict[str, Any]], None]) -> None:
    """The stream goes wrong after the text the fault lets through: dropped, an error event, or broken SSE."""
    for piece in pieces(fault_text(reply), reply.chunk_size):
        chunk({"content": piece})
    if fault.kind == "drop":
        out.drop()
        return
    if fault.kind == "overloaded_in_stream":
        out.event(error_body(503, fault.message))
    else:  # malformed_sse
        out.raw('data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","choices":[{"de\n\n')
    out.end_stream()


def _chunk(ex: Exchange, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake-{ex.number}",
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": ex.model,
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def _usage(ex: Exchange) -> dict[str, Any]:
    prompt = ex.usage["input_tokens"] + ex.usage["cache_read_tokens"]
    output = ex.usage["output_tokens"]
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
        "prompt_tokens_details": {"cached_tokens": ex.usage["cache_read_tokens"]},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _call_id(given: str | None, ex: Exchange, i: int) -> str:
    return given or f"call_fake_{ex.number}_{i}"
