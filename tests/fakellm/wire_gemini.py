"""The Gemini API wire format (`POST /v1beta/models/MODEL:generateContent`, `:streamGenerateContent`,
`:countTokens`): what Gemini CLI speaks, through Google's `@google/genai` SDK.

The model is named in the path, not the body. `streamGenerateContent?alt=sse` streams `GenerateContentResponse`
chunks as SSE `data:` lines; without `alt=sse` the same chunks come as one JSON array. Text is streamed in
deltas, thinking as parts marked `thought: true` (the first part after it carries a `thoughtSignature`, as
Gemini 3 sends), a function call whole in one chunk (Gemini streams no arguments; a `ToolCall.raw` that is not
JSON becomes `{}`). The last chunk has the `finishReason` (`STOP` for text and tool calls alike, `MAX_TOKENS`,
`SAFETY`) and the whole `usageMetadata`; earlier ones carry the prompt count only.

Usage mapping: `promptTokenCount` = input_tokens + cache_read_tokens (cached tokens are inside the prompt),
`cachedContentTokenCount` = cache_read_tokens, `candidatesTokenCount` = output_tokens; no cache-write count.
Errors are Google's `{"error": {"code", "message", "status"}}`; in a stream, that object as a `data:` line.
`:countTokens` is answered from the request's size and uses no scripted reply.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from tests.fakellm.script import Reply, ToolCall
from tests.fakellm.wire_common import Exchange, Sink, fault_text, pieces, retry_after_header, stop_reason

_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 529: "UNAVAILABLE"}
_MESSAGES = {400: "fake LLM: invalid request", 401: "API key not valid. Please pass a valid API key.",
             403: "The caller does not have permission", 404: "fake LLM: the model is not found",
             429: "Resource has been exhausted (e.g. check quota).", 500: "An internal error has occurred.",
             503: "The model is overloaded. Please try again later.",
             529: "The model is overloaded. Please try again later."}
_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY"}


def model_of(path: str) -> str:
    """The model a Gemini path names (`/v1beta/models/gemini-2.5-pro:streamGenerateContent` → gemini-2.5-pro)."""
    name = path.rsplit("/models/", 1)[-1].split(":", 1)[0]
    return name or "fake-model"


def method_of(path: str) -> str:
    """`generateContent`, `streamGenerateContent`, `countTokens` …, from the path."""
    return path.rsplit(":", 1)[-1] if ":" in path.rsplit("/", 1)[-1] else ""


def signature_for(thinking: str) -> str:
    """The deterministic `thoughtSignature` the fake server attaches after thinking."""
    return "fakesig-" + hashlib.sha256(thinking.encode()).hexdigest()[:40]


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    return {"error": {"code": status, "message": message or _MESSAGES.get(status, "fake LLM: error"),
                      "status": _STATUS.get(status, "UNKNOWN")}}


def send_error(
    out: Sink, status: int, message: str | None = None, retry_after: float | None = None, param: str | None = None
) -> None:
    """An error response; `param` is accepted for symmetry with OpenAI but Google's errors carry none."""
    out.json(status, error_body(status, message), retry_after_header(retry_after))


def count_tokens(text: str, out: Sink) -> None:
    out.json(200, {"totalTokens": max(1, len(text) // 4)})


def respond(reply: Reply, ex: Exchange, out: Sink, *, path: str, sse: bool) -> None:
    """Answer `generateContent` (whole) or `streamGenerateContent` (SSE when `sse`, else a JSON array)."""
    fault = reply.fault
    streaming = method_of(path) == "streamGenerateContent"
    model = model_of(path)
    if fault is not None and fault.kind == "status":
        send_error(out, fault.status, fault.message, retry_after=fault.retry_after)
    elif streaming and sse:
        _stream(reply, ex, out, model)
    elif fault is None:
        whole = [_chunk(ex, model, _parts(reply), _finish(reply), final=True)]
        out.json(200, whole if streaming else whole[0])
    elif fault.kind == "overloaded_in_stream":
        send_error(out, 503, fault.message)
    else:
        data = json.dumps(_chunk(ex, model, _parts(reply), _finish(reply), final=True)).encode()
        out.send_bytes(200, data[: len(data) // 2], "application/json", {"Content-Length": str(len(data))})
        if fault.kind == "drop":
            out.drop()


def _finish(reply: Reply) -> str:
    reason = stop_reason(reply, "openai")
    return _FINISH.get(reason, reason.upper())


def _parts(reply: Reply) -> list[dict[str, Any]]:
    """The reply's parts, whole: thinking, text, function calls."""
    parts: list[dict[str, Any]] = []
    if reply.thinking is not None:
        parts.append({"text": reply.thinking, "thought": True})
    if reply.text or not reply.tool_calls:
        parts.append({"text": reply.text})
    parts.extend(_function_call(call) for call in reply.tool_calls)
    return _signed(reply, parts)


def _signed(reply: Reply, parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first part after the thinking carries its signature."""
    if reply.thinking is not None:
        for part in parts:
            if not part.get("thought"):
                part["thoughtSignature"] = signature_for(reply.thinking)
                break
    return parts


def _function_call(call: ToolCall) -> dict[str, Any]:
    arguments: Any = call.arguments
    if call.raw is not None:
        try:
            arguments = json.loads(call.raw)
        except ValueError:
            arguments = {}
    named: dict[str, Any] = {"name": call.name, "args": arguments if isinstance(arguments, dict) else {}}
    if call.id:
        named["id"] = call.id
    return {"functionCall": named}


def _stream(reply: Reply, ex: Exchange, out: Sink, model: str) -> None:
    out.begin_stream()

    def chunk(parts: list[dict[str, Any]], pause: bool = True) -> None:
        out.event(_chunk(ex, model, parts, None, final=False))
        if pause:
            out.pause(reply.chunk_delay)

    if reply.fault is not None:
        _stream_fault(reply, ex, out, chunk)
        return
    signature = signature_for(reply.thinking) if reply.thinking is not None else None
    if reply.thinking is not None:
        for piece in pieces(reply.thinking, reply.chunk_size):
            chunk([{"text": piece, "thought": True}])
    first = True
    if reply.text or not reply.tool_calls:
        for piece in pieces(reply.text, reply.chunk_size):
            part: dict[str, Any] = {"text": piece}
            if first and signature:
                part["thoughtSignature"] = signature
            first = False
            chunk([part])
    calls = [_function_call(call) for call in reply.tool_calls]
    if calls and first and signature:
        calls[0]["thoughtSignature"] = signature
    # the last chunk: the calls (or an empty text part), the finish reason and the whole usage
    out.event(_chunk(ex, model, calls or [{"text": ""}], _finish(reply), final=True))
    out.end_stream()


def _stream_fault(reply: Reply, ex: Exchange, out: Sink, chunk: Callable[[list[dict[str, Any]]], None]) -> None:
    assert reply.fault is not None
    for piece in pieces(fault_text(reply), reply.chunk_size):
        if piece:
            chunk([{"text": piece}])
    if reply.fault.kind == "drop":
        out.drop()
        return
    if reply.fault.kind == "overloaded_in_stream":
        out.event(error_body(503, reply.fault.message))
    else:  # malformed_sse
        out.raw('data: {"candidates": [{"content": {"parts": [{"te\n\n')
    out.end_stream()


def _chunk(ex: Exchange, model: str, parts: list[dict[str, Any]], finish: str | None, *,
           final: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "usageMetadata": _usage(ex, final), "modelVersion": model,
            "responseId": f"fake-{ex.number}"}


def _usage(ex: Exchange, final: bool) -> dict[str, Any]:
    prompt = ex.usage["input_tokens"] + ex.usage["cache_read_tokens"]
    if not final:
        return {"promptTokenCount": prompt, "totalTokenCount": prompt}
    output = ex.usage["output_tokens"]
    usage: dict[str, Any] = {"promptTokenCount": prompt, "candidatesTokenCount": output,
                             "totalTokenCount": prompt + output,
                             "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}]}
    if ex.usage["cache_read_tokens"]:
        usage["cachedContentTokenCount"] = ex.usage["cache_read_tokens"]
    return usage
