"""The fake LLM without HTTP: a real `Provider` that plays the same `Reply` script inside the test's event loop.

`ScriptedLLM` is a `FakeLLM` that never starts its server: the script (`script`, `add`, `pending`), the reply
selection (`when_contains`, `repeat`, first unused match wins) and the request log (`requests`, with
`RecordedRequest.body`, `.text`, `.started`, `.finished`, `.rejected`) are the server's own code, so a test
switches between the two by changing its fixture name. Its `provider_factory` is what
`Runtime.open(provider_factory=...)` takes.

What a request goes through, in the order the HTTP server does it:

1. the `ModelRequest` is translated with the project's own provider code — `anthropic.build_params` for
   `anthropic/*` models, `litellm.to_openai_messages` / `to_openai_tools` for the rest — into the wire body
   the real provider would send, which is what gets recorded and matched against `when_contains`;
2. that body is checked by `validate.check` (tool-call/result pairing, empty text blocks, …): a body the real
   API would reject is answered 400 and uses up no reply;
3. the chosen reply is rendered by the server's wire module (`wire_anthropic` / `wire_openai`) into the same
   stream events it would send over HTTP, and those events are folded by the project's own stream
   accumulators (`StreamAccumulator` / `ChunkAccumulator`) into chunks and the final message. Chunk delays
   are `asyncio.sleep`s between deltas.

Errors leave as the real providers raise them: an HTTP status goes through `anthropic.status_error` or
`litellm.map_error` (so 429/5xx/529 are retryable, 400/401/… are not, retry-after is kept), an error event or
a broken stream is a retryable `ProviderError` with the real provider's wording. What only HTTP shows — headers,
SDK behaviour, base URLs, timeouts, real connection drops — needs the HTTP fake (`fake_env`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from tests.fakellm import validate as validation
from tests.fakellm import wire_anthropic, wire_openai
from tests.fakellm.server import Api, FakeLLM, RecordedRequest
from tests.fakellm.wire_common import Exchange, usage_for
from yeetui.errors import ProviderError
from yeetui.providers import anthropic as anthropic_provider
from yeetui.providers import litellm as litellm_provider
from yeetui.providers.base import ModelRequest, Provider, StreamDone, StreamItem, split_model

_PATHS: dict[str, str] = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}


class ScriptedLLM(FakeLLM):
    """The fake LLM's script and request log, answered in-process by `ScriptedProvider`s."""

    def __init__(self, validate: bool = True) -> None:
        super().__init__(validate=validate)
        self._providers: dict[str, ScriptedProvider] = {}
        self._changed: set[asyncio.Event] = set()

    # No server: start/stop do nothing and `url` fails loudly, so a test still set up for HTTP is told so.

    def start(self) -> ScriptedLLM:
        return self

    def stop(self) -> None:
        pass

    @property
    def url(self) -> str:
        raise RuntimeError("fake LLM: the in-process script has no URL; use the `fake_env` fixture for HTTP")

    # providers

    def provider(self, name: str = "anthropic") -> ScriptedProvider:
        """The provider for one `provider/` prefix: `anthropic` speaks the Anthropic wire format, any other
        name the OpenAI chat format (as litellm would)."""
        if name not in self._providers:
            self._providers[name] = ScriptedProvider(self, name)
        return self._providers[name]

    def provider_factory(self, model: str) -> tuple[Provider, str]:
        """`provider/model` → its scripted provider and the bare model id (`Runtime.open(provider_factory=…)`)."""
        name, bare = split_model(model)
        return self.provider(name), bare

    # waiting

    def wait_for_requests(self, n: int, timeout: float = 10.0, *, finished: bool = False) -> list[RecordedRequest]:
        """The blocking wait of the HTTP fake; in-process requests are made by the caller's own event loop,
        which this would block, so inside a loop use `until_requests`."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return super().wait_for_requests(n, timeout, finished=finished)
        raise RuntimeError("fake LLM: in-process requests are made by this event loop, which waiting here would "
                           "block; use `await scripted.until_requests(...)`")

    async def until(self, condition: Callable[[list[RecordedRequest]], bool],
                    timeout: float = 10.0) -> list[RecordedRequest]:
        """Wait until `condition(requests)` holds; return the requests so far. Checked now and whenever a request
        begins or finishes (no polling), so the condition should depend on the requests only."""
        async with asyncio.timeout(timeout):
            while True:
                changed = asyncio.Event()
                self._changed.add(changed)
                try:
                    requests = self.requests
                    if condition(requests):
                        return requests
                    await changed.wait()
                finally:
                    self._changed.discard(changed)

    async def until_requests(self, n: int, timeout: float = 10.0, *,
                             finished: bool = False) -> list[RecordedRequest]:
        """Wait until `n` requests arrived (with `finished`: and were answered); return all so far."""

        def ready(requests: list[RecordedRequest]) -> bool:
            return len(requests) >= n and (not finished or all(r.finished is not None for r in requests[:n]))

        try:
            return await self.until(ready, timeout)
        except TimeoutError:
            done = sum(r.finished is not None for r in self.requests)
            raise TimeoutError(f"fake LLM: waited {timeout:g}s for {n} request(s){' to finish' if finished else ''}; "
                               f"{len(self.requests)} arrived, {done} finished") from None

    def _notify(self) -> None:
        for changed in self._changed:
            changed.set()

    def _begin(self, api: Api, method: str, path: str, headers: dict[str, str], body: Any,
               text: str) -> RecordedRequest:
        record = super()._begin(api, method, path, headers, body, text)
        self._notify()
        return record

    def _finish(self, record: RecordedRequest) -> None:
        super()._finish(record)
        self._notify()


@dataclass
class _Op:
    """One thing the wire module did to its sink: sent a status, an event, raw text, a pause, or a drop."""

    kind: str
    data: Any = None
    status: int = 200
    headers: dict[str, str] | None = None


class _Capture:
    """Stands in for `wire_common.Sink`: records what the wire module writes instead of sending it."""

    def __init__(self) -> None:
        self.ops: list[_Op] = []
        self.status: int | None = None
        self.headers_sent = False

    def json(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        self.status, self.headers_sent = status, True
        self.ops.append(_Op("status", payload, status, headers or {}))

    def send_bytes(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        # Only non-streaming answers use this, and every provider streams.
        raise AssertionError("fake LLM: a non-streaming answer for a streaming request")

    def begin_stream(self, headers: dict[str, str] | None = None) -> None:
        self.status, self.headers_sent = 200, True

    def event(self, data: object, name: str | None = None) -> None:
        self.ops.append(_Op("event", data))

    def raw(self, text: str) -> None:
        self.ops.append(_Op("raw", text))

    def end_stream(self) -> None:
        pass

    def pause(self, seconds: float) -> None:
        self.ops.append(_Op("pause", seconds))

    def drop(self) -> None:
        self.ops.append(_Op("drop"))


def _namespace(value: Any) -> Any:
    """JSON as attribute access, the way the SDKs hand events to the accumulators."""
    if isinstance(value, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_namespace(v) for v in value]
    return value


class ScriptedProvider:
    """A `Provider` answering from a `ScriptedLLM`'s script; one request per `stream()` call, like the real ones."""

    def __init__(self, llm: ScriptedLLM, name: str) -> None:
        self.name = name
        self._llm = llm
        self._api: Api = "anthropic" if name == "anthropic" else "openai"
        self._label = getattr(litellm_provider, "_LABELS", {}).get(name, name)

    def __repr__(self) -> str:
        return f"ScriptedProvider({self.name!r})"

    def wire_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body the real provider would send for `request`, made by the provider modules' own code (in
        the key order the SDKs send, so that usage estimated from its length matches the HTTP fake's)."""
        if self._api == "anthropic":
            return dict(sorted({**anthropic_provider.build_params(request), "stream": True}.items()))
        messages = litellm_provider.to_openai_messages(request.system, request.messages)
        body: dict[str, Any] = {
            "messages": [{k: v for k, v in m.items() if v is not None} for m in messages],  # as litellm sends them
            "model": request.model,
            "max_tokens": request.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = litellm_provider.to_openai_tools(request)
        if request.thinking != "off":
            body["reasoning_effort"] = request.thinking
        return body

    def missing_credentials(self) -> str | None:
        return None  # scripted: nothing to authenticate

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        llm = self._llm
        body = self.wire_body(request)
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        await asyncio.sleep(0)  # a real request always lets the loop run before it is sent
        record = llm._begin(self._api, "POST", _PATHS[self._api], {}, body, text)
        try:
            ops = self._answer(record, body, text)
            for op in ops:
                if op.kind == "hold":
                    await llm.until_requests(op.data, timeout=60)
            record.status = next((op.status for op in ops if op.kind == "status"), 200)
            replay = self._anthropic(ops) if self._api == "anthropic" else self._openai(ops)
            async for item in replay:
                if isinstance(item, StreamDone):
                    llm._finish(record)  # as the server does: finished before the client sees the end
                yield item
        finally:
            llm._finish(record)  # once: a no-op after the StreamDone

    def _answer(self, record: RecordedRequest, body: dict[str, Any], text: str) -> list[_Op]:
        """What the HTTP server's handler would write for this request (validate → pick a reply → render)."""
        llm = self._llm
        wire = wire_anthropic if self._api == "anthropic" else wire_openai
        sink = _Capture()
        if llm.validate and (problem := validation.check(self._api, body, {})) is not None:
            record.rejected = problem.message
            wire.send_error(sink, 400, problem.message, param=problem.param)
        elif (picked := llm._take(text, body)) is None:
            wire.send_error(sink, 500, f"fake LLM: no scripted reply for request {record.number}")
        else:
            record.reply_index, reply = picked
            if reply.after_requests:
                sink.ops.append(_Op("hold", reply.after_requests))
            wire.respond(reply, Exchange(record.number, body, usage_for(reply, text)), sink)
        return sink.ops

    async def _anthropic(self, ops: list[_Op]) -> AsyncIterator[StreamItem]:
        acc = anthropic_provider.StreamAccumulator()
        for op in ops:
            if op.kind == "status":
                raise anthropic_provider.status_error(_anthropic_error(op.status, op.data, op.headers or {}), [])
            if op.kind == "pause":
                await asyncio.sleep(op.data)
            elif op.kind == "event" and isinstance(op.data, dict) and op.data.get("type") == "error":
                # An `error` event inside a 200 stream: the SDK raises it as a status error of the 200 response.
                raise anthropic_provider.status_error(_anthropic_error(200, op.data, {}), [])
            elif op.kind == "event":
                for item in acc.feed(_namespace(op.data)):
                    yield item
            elif op.kind == "raw":
                raise ProviderError("Anthropic sent a malformed stream event (JSONDecodeError).", retryable=True)
            elif op.kind == "drop":
                raise ProviderError("The connection to Anthropic dropped (RemoteProtocolError).", retryable=True)
        if not acc.finished:
            raise ProviderError("The connection to Anthropic dropped: the stream ended before message_stop.",
                                retryable=True)
        yield acc.done()

    async def _openai(self, ops: list[_Op]) -> AsyncIterator[StreamItem]:
        acc = litellm_provider.ChunkAccumulator()
        broke_off = f"The stream from {self._label} broke off mid-answer"
        for op in ops:
            if op.kind == "status":
                error = op.data.get("error", {}) if isinstance(op.data, dict) else {}
                exc = _OpenAIStatusError(op.status, str(error.get("message") or "no details given"), op.headers or {})
                raise litellm_provider.map_error(exc, self._label, 600, [])
            if op.kind == "pause":
                await asyncio.sleep(op.data)
            elif op.kind == "event" and isinstance(op.data, dict) and "error" in op.data:
                raise ProviderError(f"{broke_off}: {op.data['error'].get('message')}", retryable=True)
            elif op.kind == "event" and isinstance(op.data, dict):
                for item in acc.feed(_namespace(op.data)):
                    yield item
            elif op.kind == "raw":
                raise ProviderError(f"{broke_off}: the stream held malformed JSON", retryable=True)
            elif op.kind == "drop":
                raise ProviderError(f"{broke_off}: Response payload is not completed", retryable=True)
        if acc.finish_reason is None:
            raise ProviderError(f"The connection to {self._label} dropped: the stream ended without a finish reason.",
                                retryable=True)
        yield acc.done()


def _anthropic_error(status: int, body: Any, headers: dict[str, str]) -> SimpleNamespace:
    """What `anthropic.status_error` reads of an `anthropic.APIStatusError` built from this error body."""
    error = body.get("error", {}) if isinstance(body, dict) else {}
    return SimpleNamespace(status_code=status, type=error.get("type"), api_message=error.get("message"),
                           message=f"Error code: {status} - {body}", response=SimpleNamespace(headers=headers))


class _OpenAIStatusError(Exception):
    """What `litellm.map_error` reads of litellm's status exceptions: the status, the message, the headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str]) -> None:
        super().__init__(message)
        self.status_code = status
        self.message = message
        self.litellm_response_headers = headers
