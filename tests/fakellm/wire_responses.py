"""The OpenAI Responses API wire format (`POST /v1/responses`): the JSON response, its SSE events and errors.

What Codex speaks. A stream is `response.created`, `response.in_progress`, then per output item
`response.output_item.added` … its deltas … `response.output_item.done`, then `response.completed` (or
`response.incomplete` for a `max_tokens` stop) carrying the whole response with its usage. Every event has
its `sequence_number`. Thinking is a `reasoning` item with a summary; a tool call a `function_call` item, or
a `custom_tool_call` when the request declared that tool as a custom (freeform) tool, as Codex declares
`apply_patch` (its input is then the call's `raw` text, else its `input` argument); a function the request
declared inside a `namespace` tool is called with that `namespace`.

Usage mapping as in chat completions: `input_tokens` = input_tokens + cache_read_tokens,
`input_tokens_details.cached_tokens` = cache_read_tokens; no cache-write count. Errors have chat completions'
shape; an in-stream fault is a `response.failed` event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.fakellm import wire_openai
from tests.fakellm.script import Reply, ToolCall
from tests.fakellm.wire_common import Exchange, Sink, arguments_text, fault_text, pieces, split_in, stop_reason

_CREATED = 1_700_000_000

send_error = wire_openai.send_error


def respond(reply: Reply, ex: Exchange, out: Sink) -> None:
    wire_openai.respond_with(reply, ex, out, body=response, stream=_stream)


def response(reply: Reply, ex: Exchange, status: str | None = None) -> dict[str, Any]:
    """The complete `response` object (what `response.completed` carries)."""
    status = status or _final_status(reply)
    return {**_envelope(ex, status), "output": _items(reply, ex), "usage": _usage(ex),
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None}


def _final_status(reply: Reply) -> str:
    return "incomplete" if stop_reason(reply, "openai") == "length" else "completed"


def _envelope(ex: Exchange, status: str) -> dict[str, Any]:
    body = ex.body
    return {"id": f"resp_fake_{ex.number}", "object": "response", "created_at": _CREATED, "status": status,
            "model": ex.model, "output": [], "usage": None, "error": None, "incomplete_details": None,
            "instructions": body.get("instructions"), "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": body.get("previous_response_id"), "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []), "temperature": 1.0, "top_p": 1.0, "metadata": {}, "text":
            {"format": {"type": "text"}}, "truncation": "disabled", "store": body.get("store", True)}


def _items(reply: Reply, ex: Exchange) -> list[dict[str, Any]]:
    """The response's output items, done: reasoning, the message, the tool calls."""
    items: list[dict[str, Any]] = []
    if reply.thinking is not None:
        items.append(_reasoning(ex, reply.thinking))
    if reply.text or not reply.tool_calls:
        items.append(_message(ex, reply.text, "completed"))
    items.extend(_call(ex, i, call, "completed") for i, call in enumerate(reply.tool_calls))
    return items


def _reasoning(ex: Exchange, text: str | None) -> dict[str, Any]:
    summary = [] if text is None else [{"type": "summary_text", "text": text}]
    return {"id": f"rs_fake_{ex.number}", "type": "reasoning", "summary": summary}


def _message(ex: Exchange, text: str | None, status: str) -> dict[str, Any]:
    content = [] if text is None else [_text_part(text)]
    return {"id": f"msg_fake_{ex.number}", "type": "message", "status": status, "role": "assistant",
            "content": content}


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _namespace(ex: Exchange, name: str) -> str | None:
    """The namespace a function the request declared only inside a `namespace` tool belongs to (Codex puts
    its subagent tools in `multi_agent_v1`): the real API names it on the call."""
    tools = ex.body.get("tools")
    tools = tools if isinstance(tools, list) else []
    if any(isinstance(t, dict) and t.get("name") == name and t.get("type") != "namespace" for t in tools):
        return None
    for tool in tools:
        inner = tool.get("tools") if isinstance(tool, dict) and tool.get("type") == "namespace" else None
        if isinstance(inner, list) and any(isinstance(t, dict) and t.get("name") == name for t in inner):
            return str(tool.get("name"))
    return None


def _custom_tools(ex: Exchange) -> set[str]:
    tools = ex.body.get("tools")
    return {t["name"] for t in tools if isinstance(t, dict) and t.get("type") == "custom"
            and isinstance(t.get("name"), str)} if isinstance(tools, list) else set()


def _custom_input(call: ToolCall) -> str:
    if call.raw is not None:
        return call.raw
    value = call.arguments.get("input")
    return value if isinstance(value, str) else arguments_text(call)


def _call(ex: Exchange, i: int, call: ToolCall, status: str, *, empty: bool = False) -> dict[str, Any]:
    """A tool call item; `empty`: as first announced, before its arguments streamed."""
    call_id = call.id or f"call_fake_{ex.number}_{i}"
    if call.name in _custom_tools(ex):
        return {"id": f"ctc_fake_{ex.number}_{i}", "type": "custom_tool_call", "status": status,
                "call_id": call_id, "name": call.name, "input": "" if empty else _custom_input(call)}
    item = {"id": f"fc_fake_{ex.number}_{i}", "type": "function_call", "status": status, "call_id": call_id,
            "name": call.name, "arguments": "" if empty else arguments_text(call)}
    if namespace := _namespace(ex, call.name):
        item["namespace"] = namespace
    return item


def _stream(reply: Reply, ex: Exchange, out: Sink) -> None:
    out.begin_stream({"x-request-id": f"req_fake_{ex.number}"})
    sequence = 0

    def event(kind: str, pause: bool = False, **fields: Any) -> None:
        nonlocal sequence
        out.event({"type": kind, "sequence_number": sequence, **fields}, name=kind)
        sequence += 1
        if pause:
            out.pause(reply.chunk_delay)

    event("response.created", response=_envelope(ex, "in_progress"))
    event("response.in_progress", response=_envelope(ex, "in_progress"))
    if reply.fault is not None:
        _stream_fault(reply, ex, out, event)
        return
    index = 0
    if reply.thinking is not None:
        item = _reasoning(ex, None)
        event("response.output_item.added", output_index=index, item=item)
        event("response.reasoning_summary_part.added", item_id=item["id"], output_index=index, summary_index=0,
              part={"type": "summary_text", "text": ""})
        for piece in pieces(reply.thinking, reply.chunk_size):
            event("response.reasoning_summary_text.delta", True, item_id=item["id"], output_index=index,
                  summary_index=0, delta=piece)
        event("response.reasoning_summary_text.done", item_id=item["id"], output_index=index, summary_index=0,
              text=reply.thinking)
        event("response.reasoning_summary_part.done", item_id=item["id"], output_index=index, summary_index=0,
              part={"type": "summary_text", "text": reply.thinking})
        event("response.output_item.done", output_index=index, item=_reasoning(ex, reply.thinking))
        index += 1
    if reply.text or not reply.tool_calls:
        _stream_text(ex, index, reply.text, pieces(reply.text, reply.chunk_size), event)
        index += 1
    for i, call in enumerate(reply.tool_calls):
        item = _call(ex, i, call, "in_progress", empty=True)
        event("response.output_item.added", output_index=index, item=item)
        custom = item["type"] == "custom_tool_call"
        whole = _custom_input(call) if custom else arguments_text(call)
        delta = "response.custom_tool_call_input.delta" if custom else "response.function_call_arguments.delta"
        for piece in split_in(whole, 3):
            event(delta, True, item_id=item["id"], output_index=index, delta=piece)
        if custom:
            event("response.custom_tool_call_input.done", item_id=item["id"], output_index=index, input=whole)
        else:
            event("response.function_call_arguments.done", item_id=item["id"], output_index=index, arguments=whole)
        event("response.output_item.done", output_index=index, item=_call(ex, i, call, "completed"))
        index += 1
    final = response(reply, ex)
    event(f"response.{final['status']}", response=final)
    out.end_stream()


def _stream_text(ex: Exchange, index: int, text: str, deltas: list[str],
                 event: Callable[..., None]) -> None:
    """A message item, its one text part streamed in `deltas`."""
    item = _message(ex, None, "in_progress")
    event("response.output_item.added", output_index=index, item=item)
    event("response.content_part.added", item_id=item["id"], output_index=index, content_index=0,
          part=_text_part(""))
    for piece in deltas:
        if piece:
            event("response.output_text.delta", True, item_id=item["id"], output_index=index, content_index=0,
                  delta=piece, logprobs=[])
    event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0, text=text,
          logprobs=[])
    event("response.content_part.done", item_id=item["id"], output_index=index, content_index=0,
          part=_text_part(text))
    event("response.output_item.done", output_index=index, item=_message(ex, text, "completed"))


def _stream_fault(reply: Reply, ex: Exchange, out: Sink, event: Callable[..., None]) -> None:
    """The stream goes wrong after the text the fault lets through: dropped, `response.failed`, or broken SSE."""
    assert reply.fault is not None
    text = fault_text(reply)
    item = _message(ex, None, "in_progress")
    event("response.output_item.added", output_index=0, item=item)
    event("response.content_part.added", item_id=item["id"], output_index=0, content_index=0, part=_text_part(""))
    for piece in pieces(text, reply.chunk_size):
        if piece:
            event("response.output_text.delta", True, item_id=item["id"], output_index=0, content_index=0,
                  delta=piece, logprobs=[])
    if reply.fault.kind == "drop":
        out.drop()
        return
    if reply.fault.kind == "overloaded_in_stream":
        failed = {**_envelope(ex, "failed"), "error": {
            "code": "server_error", "message": reply.fault.message or "The server had an error while processing "
            "your request. Sorry about that!"}}
        event("response.failed", response=failed)
    else:  # malformed_sse
        out.raw('event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"\n\n')
    out.end_stream()


def _usage(ex: Exchange) -> dict[str, Any]:
    prompt = ex.usage["input_tokens"] + ex.usage["cache_read_tokens"]
    output = ex.usage["output_tokens"]
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": ex.usage["cache_read_tokens"]},
            "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + output}
