"""The fake LLM HTTP server: a threaded stdlib server on 127.0.0.1 that answers scripted `Reply`s.

Routes: `POST …/v1/messages` (Anthropic), `POST …/chat/completions` (OpenAI chat completions), `POST …/responses`
(the OpenAI Responses API, Codex's), `POST …/models/MODEL:generateContent` and `:streamGenerateContent` (Gemini's;
`:countTokens` is answered without a scripted reply), `GET /health`. API requests
are first checked by `validate.check` (unless `FakeLLM.validate` is off): one the real API would reject is
answered 400 with its error shape and uses up no scripted reply. Two control
routes serve the standalone mode and are not recorded: `POST /_fake/replies` (a JSON list of Reply dicts to
queue) and `GET /_fake/requests` (the request log, API-key headers redacted). Every other request is
recorded and answered 404.
"""

from __future__ import annotations

import dataclasses
import json
import re
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal, Self
from urllib.parse import urlsplit

from tests.fakellm import validate as validation
from tests.fakellm import wire_anthropic, wire_gemini, wire_openai, wire_responses
from tests.fakellm.script import Fault, Reply, ToolCall
from tests.fakellm.wire_common import Aborted, Exchange, Sink, usage_for

Api = Literal["anthropic", "openai", "responses", "gemini", "other"]
_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "x-goog-api-key", "proxy-authorization"})


@dataclass
class RecordedRequest:
    """One request the server received. Header names are lower-cased."""

    number: int
    api: Api
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    """The parsed JSON body, or None when the body was empty or not JSON."""
    text: str
    started: float
    """time.monotonic() when the request had been read."""
    finished: float | None = None
    """time.monotonic() when the response was complete (or abandoned); None while in flight."""
    reply_index: int | None = None
    """Index of the scripted Reply that answered, in the order replies were added; None if none did."""
    status: int | None = None
    """HTTP status sent; None if the connection was dropped before any headers."""
    rejected: str | None = None
    """The 400 message when the request broke a rule of the real API (see `validate.py`), else None."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict with API-key header values redacted (for logs that land in test dirs)."""
        data = dataclasses.asdict(self)
        data["headers"] = {k: "<redacted>" if k in _SECRET_HEADERS else v for k, v in self.headers.items()}
        return data


class FakeLLM:
    """A scripted local LLM endpoint; use as a context manager or `start()`/`stop()`."""

    def __init__(self, port: int = 0, log_path: Path | None = None, validate: bool = True) -> None:
        self.validate = validate
        """Answer 400 to requests the real API would reject; turn off for tests that send odd ones on purpose."""
        self._port = port
        self._log_path = log_path
        self._cond = threading.Condition()
        self._replies: list[Reply] = []
        self._used: set[int] = set()
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._closing = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> Self:
        if self._httpd is not None:
            return self
        self._closing.clear()
        self._httpd = _Server(self, self._port)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and cut every open connection, so in-flight streams end at once."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._closing.set()
        httpd.shutdown()
        with self._cond:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("fake LLM: the server is not running; call start() first")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    # script

    def script(self, *replies: Reply) -> Self:
        """Queue replies after any already queued."""
        for reply in replies:
            self.add(reply)
        return self

    def add(self, reply: Reply) -> int:
        """Queue one reply; returns its index (what `RecordedRequest.reply_index` refers to)."""
        if not isinstance(reply, Reply):
            raise TypeError(f"fake LLM: expected a Reply, got {type(reply).__name__}")
        with self._cond:
            self._replies.append(reply)
            return len(self._replies) - 1

    @property
    def pending(self) -> list[Reply]:
        """Queued one-shot replies no request has used yet."""
        with self._cond:
            return [r for i, r in enumerate(self._replies) if i not in self._used and not r.repeat]

    # requests

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._cond:
            return list(self._requests)

    def wait_for_requests(
        self, n: int, timeout: float = 10.0, *, finished: bool = False
    ) -> list[RecordedRequest]:
        """Block until `n` requests arrived (with `finished`: and were answered); return all so far."""

        def ready() -> bool:
            if len(self._requests) < n:
                return False
            return not finished or all(r.finished is not None for r in self._requests[:n])

        with self._cond:
            if not self._cond.wait_for(ready, timeout):
                done = sum(r.finished is not None for r in self._requests)
                raise TimeoutError(
                    f"fake LLM: waited {timeout:g}s for {n} request(s)"
                    f"{' to finish' if finished else ''}; {len(self._requests)} arrived, {done} finished"
                )
            return list(self._requests)

    # called from handler threads

    def _begin(
        self, api: Api, method: str, path: str, headers: dict[str, str], body: Any, text: str
    ) -> RecordedRequest:
        with self._cond:
            record = RecordedRequest(len(self._requests) + 1, api, method, path, headers, body, text,
                                     time.monotonic())
            self._requests.append(record)
            self._cond.notify_all()
            return record

    def release(self) -> None:
        """Count as one more request (recorded, path `/_fake/release`), without a client: lets a reply held by
        `after_requests` go when the test says so rather than when some time has passed."""
        self._begin("other", "POST", "/_fake/release", {}, None, "")

    def _hold_until(self, requests: int) -> None:
        with self._cond:
            while len(self._requests) < requests:
                self._cond.wait(0.1)
                if self._closing.is_set():
                    raise Aborted

    def _take(self, text: str, body: Any) -> tuple[int, Reply] | None:
        with self._cond:
            for index, reply in enumerate(self._replies):
                if index in self._used or not _matches(reply, text, body):
                    continue
                if not reply.repeat:
                    self._used.add(index)
                return index, reply
        return None

    def _finish(self, record: RecordedRequest) -> None:
        """Mark a request finished and log it, once; runs before the client can see the response end."""
        with self._cond:
            if record.finished is not None:
                return
            record.finished = time.monotonic()
            if self._log_path is not None:
                with self._log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(record.to_json()) + "\n")
            self._cond.notify_all()

    def _track(self, conn: socket.socket, open_: bool) -> None:
        with self._cond:
            if open_:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


def _matches(reply: Reply, text: str, body: Any) -> bool:
    """`when_contains` matches the raw body text, or any JSON string value (so escapes do not matter)."""
    needle = reply.when_contains
    return needle is None or needle in text or any(needle in s for s in _strings(body))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, fake: FakeLLM, port: int) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # drops and stop() cut connections on purpose
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakellm/1"
    disable_nagle_algorithm = True
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/health":
            Sink(self, self.server.fake._closing).json(200, {"status": "ok"})
        elif path == "/_fake/requests":
            Sink(self, self.server.fake._closing).json(200, [r.to_json() for r in self.server.fake.requests])
        else:
            self._answer("GET", b"")

    def do_POST(self) -> None:
        data = self._read_body()
        if urlsplit(self.path).path == "/_fake/replies":
            self._queue_replies(data)
        else:
            self._answer("POST", data)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _queue_replies(self, data: bytes) -> None:
        sink = Sink(self, self.server.fake._closing)
        try:
            items = json.loads(data)
            replies = [reply_from_dict(d, f"POST /_fake/replies item {i}")
                       for i, d in enumerate(items if isinstance(items, list) else [items])]
        except (ValueError, TypeError) as exc:
            sink.json(400, {"error": {"message": f"fake LLM: {exc}"}})
            return
        sink.json(200, {"indices": [self.server.fake.add(r) for r in replies]})

    def _answer(self, method: str, data: bytes) -> None:
        fake = self.server.fake
        path = urlsplit(self.path).path
        text = data.decode("utf-8", errors="replace")
        try:
            body = json.loads(text) if text else None
        except ValueError:
            body = None
        api = _api(method, path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = fake._begin(api, method, path, headers, body, text)
        sink = Sink(self, fake._closing, lambda status: setattr(record, "status", status),
                    lambda: fake._finish(record))
        wire = _WIRES[api]
        try:
            if api == "other":
                wire.send_error(sink, 404, f"fake LLM: no route for {method} {path}")
            elif api == "gemini" and wire_gemini.method_of(path) == "countTokens":
                wire_gemini.count_tokens(text, sink)
            elif not isinstance(body, dict):
                wire.send_error(sink, 400, f"fake LLM: request {record.number} body is not a JSON object")
            elif fake.validate and (problem := validation.check(api, body, headers)) is not None:
                record.rejected = problem.message
                wire.send_error(sink, 400, problem.message, param=problem.param)
            elif (picked := fake._take(text, body)) is None:
                wire.send_error(sink, 500, f"fake LLM: no scripted reply for request {record.number}")
            else:
                record.reply_index, reply = picked
                reply = _filled(reply, body)
                fake._hold_until(reply.after_requests)
                exchange = Exchange(record.number, body, usage_for(reply, text))
                if api == "gemini":
                    wire_gemini.respond(reply, exchange, sink, path=path,
                                        sse="alt=sse" in urlsplit(self.path).query.split("&"))
                else:
                    wire.respond(reply, exchange, sink)
        except (Aborted, OSError):
            self.close_connection = True
        except Exception as exc:  # a bug in the fake itself: say so loudly, on stderr and to the client
            traceback.print_exc()
            self.close_connection = True
            if not sink.headers_sent:
                wire.send_error(sink, 500, f"fake LLM internal error: {exc!r}")
        finally:
            fake._finish(record)


_WIRES: dict[Api, Any] = {"anthropic": wire_anthropic, "openai": wire_openai, "responses": wire_responses,
                         "gemini": wire_gemini, "other": wire_anthropic}
_GEMINI_METHODS = ("generateContent", "streamGenerateContent", "countTokens")


def _api(method: str, path: str) -> Api:
    """Which API a request is for, from its method and path."""
    if method != "POST":
        return "other"
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/responses"):
        return "responses"
    if "/models/" in path and wire_gemini.method_of(path) in _GEMINI_METHODS:
        return "gemini"
    return "other"


def _filled(reply: Reply, body: Any) -> Reply:
    """`reply` with its tool calls' `fill` placeholders replaced from the request (see `ToolCall.fill`)."""
    if not any(call.fill for call in reply.tool_calls):
        return reply
    strings = _strings(body)

    def fill(text: str, call: ToolCall) -> str:
        for placeholder, pattern in call.fill.items():
            found = next((m for s in strings if (m := re.search(pattern, s))), None)
            if found is not None:
                value = found.group(1) if found.groups() else found.group(0)
                text = text.replace(placeholder, json.dumps(value)[1:-1])  # inside a JSON string
        return text

    calls = []
    for call in reply.tool_calls:
        if call.fill:
            raw = fill(call.raw if call.raw is not None else json.dumps(call.arguments), call)
            call = dataclasses.replace(call, raw=raw if call.raw is not None else None,
                                       arguments=call.arguments if call.raw is not None else json.loads(raw))
        calls.append(call)
    return dataclasses.replace(reply, tool_calls=calls)


def reply_from_dict(data: Any, where: str = "reply") -> Reply:
    """Build a Reply from its JSON form (nested ToolCall and Fault dicts), naming any bad field."""
    fields = _checked(data, Reply, where)
    calls = fields.get("tool_calls") or []
    if not isinstance(calls, list):
        raise TypeError(f"{where}: tool_calls must be a list, got {type(calls).__name__}")
    fields["tool_calls"] = [
        ToolCall(**_checked(c, ToolCall, f"{where} tool_calls[{i}]")) for i, c in enumerate(calls)
    ]
    if fields.get("fault") is not None:
        fields["fault"] = Fault(**_checked(fields["fault"], Fault, f"{where} fault"))
    return Reply(**fields)


def reply_to_dict(reply: Reply) -> dict[str, Any]:
    """The JSON form `reply_from_dict` and `python -m tests.fakellm --script` read."""
    return dataclasses.asdict(reply)


def load_script(path: Path) -> list[Reply]:
    """Read a JSON list of Reply dicts; errors name the file and the reply."""
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"fake LLM script {path}: cannot read JSON: {exc}") from exc
    if not isinstance(items, list):
        kind = type(items).__name__
        raise ValueError(f"fake LLM script {path}: expected a JSON list of replies, got {kind}")
    try:
        return [reply_from_dict(item, f"reply {i}") for i, item in enumerate(items)]
    except TypeError as exc:
        raise ValueError(f"fake LLM script {path}: {exc}") from exc


def _checked(data: Any, cls: type, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise TypeError(f"{where}: expected an object, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise TypeError(f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return dict(data)
