"""The fake LLM server, driven by the real anthropic and openai SDKs over loopback."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from tests.fakellm import Fault, Reply, ToolCall
from tests.fakellm.fixtures import ANTHROPIC_TEST_KEY, KEY_MARKER, OPENAI_TEST_KEY
from tests.fakellm.server import FakeLLM, RecordedRequest, load_script, reply_to_dict
from tests.fakellm.wire_anthropic import signature_for

REPO = Path(__file__).resolve().parents[2]
MODEL = "claude-fake-1"
USER = [{"role": "user", "content": "hello there"}]


@pytest.fixture
async def claude(fake_llm: FakeLLM) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(
        base_url=fake_llm.anthropic_base_url, api_key=ANTHROPIC_TEST_KEY, max_retries=0
    )
    async with client:
        yield client


@pytest.fixture
async def gpt(fake_llm: FakeLLM) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=fake_llm.openai_base_url, api_key=OPENAI_TEST_KEY, max_retries=0)
    async with client:
        yield client


async def stream_text(client: anthropic.AsyncAnthropic, received: list[str], text: str = "hello") -> None:
    """Stream one Anthropic reply, appending each text delta to `received` as it arrives."""
    async with client.messages.stream(
        model=MODEL, max_tokens=100, messages=[{"role": "user", "content": text}]
    ) as stream:
        async for delta in stream.text_stream:
            received.append(delta)


def sent_key(request: RecordedRequest) -> str | None:
    """The API key a client sent (newer anthropic SDKs send it as a bearer token, older as x-api-key)."""
    bearer = request.headers.get("authorization", "")
    return request.headers.get("x-api-key") or bearer.removeprefix("Bearer ") or None


def raw_events(events: list[Any], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


# ---------------------------------------------------------------- Anthropic


async def test_anthropic_streams_text_in_deltas_and_records_the_request(fake_llm, claude):
    fake_llm.script(Reply(text="Hello from the fake model, streamed.", chunk_size=5))
    received: list[str] = []
    async with claude.messages.stream(model=MODEL, max_tokens=100, messages=USER) as stream:
        async for delta in stream.text_stream:
            received.append(delta)
        final = await stream.get_final_message()

    assert "".join(received) == "Hello from the fake model, streamed."
    assert len(received) == 8
    assert final.stop_reason == "end_turn"
    assert final.model == MODEL
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0
    [request] = fake_llm.requests
    assert (request.api, request.path, request.status) == ("anthropic", "/v1/messages", 200)
    assert request.reply_index == 0
    assert request.body["stream"] is True and request.body["messages"] == USER
    assert sent_key(request) == ANTHROPIC_TEST_KEY
    assert json.loads(request.text) == request.body
    assert request.started <= request.finished


async def test_anthropic_thinking_block_carries_a_signature(fake_llm, claude):
    fake_llm.script(Reply(thinking="First, consider the question.", text="Answer."))
    async with claude.messages.stream(model=MODEL, max_tokens=100, messages=USER) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_message()

    thinking, text = final.content
    assert thinking.type == "thinking"
    assert thinking.thinking == "First, consider the question."
    assert thinking.signature == signature_for("First, consider the question.") != ""
    assert text.type == "text" and text.text == "Answer."
    assert len(raw_events(events, "thinking")) > 1
    assert len(raw_events(events, "signature")) == 1


async def test_anthropic_tool_use_arguments_are_streamed_and_parsed_by_the_sdk(fake_llm, claude):
    fake_llm.script(Reply(text="Reading it.", tool_calls=[
        ToolCall("read_file", {"path": "src/a.txt", "limit": 10}),
        ToolCall("list_dir", id="toolu_given"),
    ]))
    async with claude.messages.stream(model=MODEL, max_tokens=100, messages=USER) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_message()

    assert final.stop_reason == "tool_use"
    text, read, listing = final.content
    assert text.text == "Reading it."
    assert (read.type, read.name, read.input) == ("tool_use", "read_file", {"path": "src/a.txt", "limit": 10})
    assert read.id.startswith("toolu_")
    assert (listing.id, listing.name, listing.input) == ("toolu_given", "list_dir", {})
    assert len(raw_events(events, "input_json")) > 2


async def test_anthropic_malformed_raw_arguments_arrive_verbatim(fake_llm, claude):
    raw = '{"path": "a.txt", "content": "unterminated'
    fake_llm.script(Reply(tool_calls=[ToolCall("write_file", raw=raw)]))
    stream = await claude.messages.create(model=MODEL, max_tokens=100, messages=USER, stream=True)
    partial = [
        event.delta.partial_json async for event in stream
        if event.type == "content_block_delta" and event.delta.type == "input_json_delta"
    ]
    assert "".join(partial) == raw
    assert len(partial) > 1


async def test_anthropic_non_streaming_message_with_usage_as_scripted(fake_llm, claude):
    usage = {"input_tokens": 120, "output_tokens": 7, "cache_read_tokens": 80, "cache_write_tokens": 30}
    fake_llm.script(Reply(text="Done.", tool_calls=[ToolCall("run", {"cmd": "ls"})], usage=usage))
    message = await claude.messages.create(model=MODEL, max_tokens=100, messages=USER)

    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"cmd": "ls"}
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (120, 7)
    assert message.usage.cache_read_input_tokens == 80
    assert message.usage.cache_creation_input_tokens == 30


async def test_anthropic_stream_reports_scripted_usage_and_stop_reason(fake_llm, claude):
    fake_llm.script(Reply(text="cut", stop="max_tokens", usage={"input_tokens": 9, "output_tokens": 3,
                                                                "cache_read_tokens": 5}))
    async with claude.messages.stream(model=MODEL, max_tokens=100, messages=USER) as stream:
        final = await stream.get_final_message()
    assert final.stop_reason == "max_tokens"
    usage = final.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens) == (9, 3, 5)


@pytest.mark.parametrize(("status", "exc_type", "error_type"), [
    (529, anthropic.OverloadedError, "overloaded_error"),
    (429, anthropic.RateLimitError, "rate_limit_error"),
    (401, anthropic.AuthenticationError, "authentication_error"),
    (500, anthropic.InternalServerError, "api_error"),
    (400, anthropic.BadRequestError, "invalid_request_error"),
])
async def test_anthropic_http_errors_raise_the_sdk_exception(fake_llm, claude, status, exc_type, error_type):
    fake_llm.script(Reply.error(status, retry_after=3 if status == 429 else None))
    with pytest.raises(exc_type) as caught:
        await stream_text(claude, [])

    error = caught.value
    assert error.status_code == status
    assert error.body["type"] == "error"
    assert error.body["error"]["type"] == error_type and error.body["error"]["message"]
    assert error.response.headers.get("retry-after") == ("3" if status == 429 else None)
    assert KEY_MARKER not in str(error)
    assert fake_llm.requests[0].status == status


async def test_anthropic_overloaded_in_stream_raises_after_some_text(fake_llm, claude):
    fake_llm.script(Reply(text="abcdefghijklmnopqrstuvwxyz", fault=Fault.overloaded_in_stream(10)))
    received: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as caught:
        await stream_text(claude, received)

    assert "".join(received) == "abcdefghij"
    assert caught.value.body["error"]["type"] == "overloaded_error"


async def test_anthropic_drop_cuts_the_stream_after_some_text(fake_llm, claude):
    fake_llm.script(Reply(text="abcdefghijklmnopqrstuvwxyz", fault=Fault.drop(after_chars=8)))
    received: list[str] = []
    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)) as caught:
        await stream_text(claude, received)

    assert "".join(received) == "abcdefgh"
    assert "incomplete" in str(caught.value)
    assert fake_llm.requests[0].finished is not None


async def test_anthropic_fault_pads_short_text_to_after_chars(fake_llm, claude):
    fake_llm.script(Reply(text="ab", fault=Fault.drop(after_chars=20)))
    received: list[str] = []
    # the connection drops mid-stream: anthropic 2.17 says so as its own APIConnectionError, earlier versions
    # let httpx2's error through
    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)):
        await stream_text(claude, received)
    assert len("".join(received)) == 20 and "".join(received).startswith("ab")


async def test_anthropic_malformed_sse_fails_to_decode_after_some_text(fake_llm, claude):
    fake_llm.script(Reply(text="abcdefgh", fault=Fault(kind="malformed_sse", after_chars=4)))
    received: list[str] = []
    with pytest.raises(ValueError, match=r"Unterminated|Expecting"):
        await stream_text(claude, received)
    assert "".join(received) == "abcd"


async def test_fake_env_points_a_default_anthropic_client_at_the_fake(fake_env):
    fake_env.script(Reply(text="via env"))
    assert os.environ["ANTHROPIC_API_KEY"] == ANTHROPIC_TEST_KEY
    assert os.environ["OPENAI_API_BASE"] == os.environ["OPENAI_BASE_URL"] == fake_env.url + "/v1"
    async with anthropic.AsyncAnthropic(max_retries=0) as client:
        message = await client.messages.create(model=MODEL, max_tokens=10, messages=USER)
    assert message.content[0].text == "via env"
    assert sent_key(fake_env.requests[0]) == ANTHROPIC_TEST_KEY


# ---------------------------------------------------------------- OpenAI


async def test_openai_streams_text_and_a_usage_chunk(fake_llm, gpt):
    usage = {"input_tokens": 50, "output_tokens": 6, "cache_read_tokens": 20}
    fake_llm.script(Reply(text="Hi from the OpenAI side.", chunk_size=6, usage=usage))
    stream = await gpt.chat.completions.create(
        model="gpt-fake", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]

    content = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(content) == "Hi from the OpenAI side."
    assert len(content) == 4
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    last = chunks[-1]
    assert last.choices == []
    assert (last.usage.prompt_tokens, last.usage.completion_tokens, last.usage.total_tokens) == (70, 6, 76)
    assert last.usage.prompt_tokens_details.cached_tokens == 20
    [request] = fake_llm.requests
    assert (request.api, request.path) == ("openai", "/v1/chat/completions")
    assert sent_key(request) == OPENAI_TEST_KEY


async def test_openai_stream_without_include_usage_still_reports_usage_last(fake_llm, gpt):
    fake_llm.script(Reply(text="short"))
    stream = await gpt.chat.completions.create(model="gpt-fake", messages=USER, stream=True)
    chunks = [chunk async for chunk in stream]
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].usage.completion_tokens >= 1 and chunks[-1].usage.prompt_tokens >= 1


async def test_openai_streams_tool_calls_in_pieces(fake_llm, gpt):
    fake_llm.script(Reply(thinking="ponder", tool_calls=[
        ToolCall("read_file", {"path": "a.txt"}), ToolCall("grep", {"pattern": "x", "path": "."}),
    ]))
    stream = await gpt.chat.completions.create(model="gpt-fake", messages=USER, stream=True)
    calls: dict[int, dict[str, Any]] = {}
    argument_pieces = 0
    finish = None
    reasoning = ""
    async for chunk in stream:
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        reasoning += getattr(choice.delta, "reasoning_content", None) or ""
        for delta in choice.delta.tool_calls or []:
            fresh = {"id": delta.id, "name": delta.function.name, "arguments": ""}
            call = calls.setdefault(delta.index, fresh)
            if delta.function.arguments:
                call["arguments"] += delta.function.arguments
                argument_pieces += 1

    assert finish == "tool_calls"
    assert reasoning == "ponder"
    assert [(c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
        ("read_file", {"path": "a.txt"}), ("grep", {"pattern": "x", "path": "."}),
    ]
    assert all(c["id"].startswith("call_") for c in calls.values())
    assert argument_pieces > 2


async def test_openai_non_streaming_completion(fake_llm, gpt):
    fake_llm.script(Reply(tool_calls=[ToolCall("edit", raw='{"path": "x"')]), Reply(text="plain"))
    first = await gpt.chat.completions.create(model="gpt-fake", messages=USER)
    second = await gpt.chat.completions.create(model="gpt-fake", messages=USER)

    assert first.choices[0].finish_reason == "tool_calls"
    assert first.choices[0].message.content is None
    assert first.choices[0].message.tool_calls[0].function.arguments == '{"path": "x"'
    assert second.choices[0].message.content == "plain"
    assert second.choices[0].finish_reason == "stop"
    assert second.usage.total_tokens == second.usage.prompt_tokens + second.usage.completion_tokens


@pytest.mark.parametrize(("status", "exc_type"), [
    (429, openai.RateLimitError),
    (401, openai.AuthenticationError),
    (500, openai.InternalServerError),
])
async def test_openai_http_errors_raise_the_sdk_exception(fake_llm, gpt, status, exc_type):
    fake_llm.script(Reply.error(status, retry_after=1.5))
    with pytest.raises(exc_type) as caught:
        await gpt.chat.completions.create(model="gpt-fake", messages=USER, stream=True)
    assert caught.value.status_code == status
    assert set(caught.value.body) == {"message", "type", "param", "code"}
    assert caught.value.response.headers["retry-after"] == "1.5"
    assert KEY_MARKER not in str(caught.value)


async def test_openai_in_stream_error_and_drop_after_some_text(fake_llm, gpt):
    fake_llm.script(
        Reply(text="0123456789", fault=Fault.overloaded_in_stream(after_chars=6), chunk_size=3),
        Reply(text="0123456789", fault=Fault.drop(after_chars=4), chunk_size=2),
    )
    expectations = [
        (openai.APIError, "012345"),
        ((httpx.RemoteProtocolError, openai.APIConnectionError), "0123"),
    ]
    for fault_error, expected_text in expectations:
        received = ""
        with pytest.raises(fault_error):
            stream = await gpt.chat.completions.create(model="gpt-fake", messages=USER, stream=True)
            async for chunk in stream:
                received += chunk.choices[0].delta.content or ""
        assert received == expected_text


# ---------------------------------------------------------------- script selection


async def test_when_contains_picks_the_first_matching_unused_reply(fake_llm, claude):
    fake_llm.script(
        Reply(text="for beta", when_contains="beta"),
        Reply(text="for alpha", when_contains="alpha"),
        Reply(text="for anything"),
    )
    first: list[str] = []
    await stream_text(claude, first, "please alpha")
    second: list[str] = []
    await stream_text(claude, second, "now beta")
    third: list[str] = []
    await stream_text(claude, third, "alpha again")

    assert ["".join(first), "".join(second), "".join(third)] == ["for alpha", "for beta", "for anything"]
    assert [r.reply_index for r in fake_llm.requests] == [1, 0, 2]
    assert fake_llm.pending == []


async def test_when_contains_matches_text_that_json_escapes(fake_llm, claude):
    fake_llm.script(Reply(text="matched", when_contains='say "quoted"\nline'))
    received: list[str] = []
    await stream_text(claude, received, 'please say "quoted"\nline two')
    assert "".join(received) == "matched"


async def test_repeat_reply_is_never_used_up(fake_llm, claude):
    fake_llm.script(Reply(text="once"), Reply(text="always", repeat=True))
    texts = []
    for _ in range(3):
        received: list[str] = []
        await stream_text(claude, received)
        texts.append("".join(received))
    assert texts == ["once", "always", "always"]


async def test_unscripted_request_gets_500_naming_the_request(fake_llm, claude, gpt):
    with pytest.raises(anthropic.InternalServerError, match="no scripted reply for request 1"):
        await stream_text(claude, [])
    with pytest.raises(openai.InternalServerError, match="no scripted reply for request 2"):
        await gpt.chat.completions.create(model="gpt-fake", messages=USER)
    assert [(r.status, r.reply_index) for r in fake_llm.requests] == [(500, None), (500, None)]


async def test_concurrent_streams_overlap_in_time(fake_llm, claude):
    fake_llm.script(*(Reply(text="x" * 40, chunk_size=4, chunk_delay=0.03) for _ in range(3)))
    results: list[list[str]] = [[], [], []]
    await asyncio.gather(*(stream_text(claude, received) for received in results))

    assert ["".join(r) for r in results] == ["x" * 40] * 3
    requests = fake_llm.wait_for_requests(3, timeout=5, finished=True)
    assert max(r.started for r in requests) < min(r.finished for r in requests)


async def test_stop_cuts_an_in_flight_stream(fake_llm, claude):
    fake_llm.script(Reply(text="y" * 400, chunk_size=1, chunk_delay=0.05))
    received: list[str] = []
    first_text = asyncio.Event()

    async def consume() -> None:
        async with claude.messages.stream(model=MODEL, max_tokens=100, messages=USER) as stream:
            async for delta in stream.text_stream:
                received.append(delta)
                first_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_text.wait(), timeout=5)
    await asyncio.to_thread(fake_llm.stop)
    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)):
        await asyncio.wait_for(task, timeout=5)
    assert 0 < len(received) < 400


def test_wait_for_requests_times_out_with_a_clear_message(fake_llm):
    with pytest.raises(TimeoutError, match=r"waited 0.1s for 1 request\(s\); 0 arrived"):
        fake_llm.wait_for_requests(1, timeout=0.1)


def test_health_and_unknown_paths(fake_llm):
    with urllib.request.urlopen(fake_llm.url + "/health", timeout=5) as response:
        assert response.status == 200
    request = urllib.request.Request(fake_llm.url + "/v1/nope", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 404
    assert "no route for POST /v1/nope" in json.loads(caught.value.read())["error"]["message"]
    [recorded] = fake_llm.requests
    assert (recorded.api, recorded.status) == ("other", 404)


def test_script_file_errors_name_the_reply_and_field(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "ok"}, {"text": "x", "tool_calls": [{"nam": "read"}]}]))
    with pytest.raises(ValueError, match=r"script\.json: reply 1 tool_calls\[0\]: unknown field\(s\) nam"):
        load_script(script)


# ---------------------------------------------------------------- standalone


def test_standalone_server_answers_and_logs(tmp_path):
    script = tmp_path / "script.json"
    replies = [Reply(text="standalone hello"), Reply(tool_calls=[ToolCall("ls", {"path": "."})],
                                                     fault=Fault.http(529))]
    script.write_text(json.dumps([reply_to_dict(r) for r in replies]))
    log = tmp_path / "requests.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakellm", "--script", str(script), "--port", "0", "--log", str(log)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        first_line = process.stdout.readline().strip()
        assert first_line.startswith("FAKE_LLM_URL=http://127.0.0.1:"), process.stderr.read()
        url = first_line.removeprefix("FAKE_LLM_URL=")
        client = anthropic.Anthropic(base_url=url, api_key=ANTHROPIC_TEST_KEY, max_retries=0)
        with client:
            message = client.messages.create(model=MODEL, max_tokens=10, messages=USER)
            with pytest.raises(anthropic.OverloadedError):
                client.messages.create(model=MODEL, max_tokens=10, messages=USER)
            queue = urllib.request.Request(url + "/_fake/replies", data=b'[{"text": "added later"}]')
            with urllib.request.urlopen(queue, timeout=5) as response:
                assert json.loads(response.read()) == {"indices": [2]}
            later = client.messages.create(model=MODEL, max_tokens=10, messages=USER)
        assert message.content[0].text == "standalone hello"
        assert later.content[0].text == "added later"
        with urllib.request.urlopen(url + "/_fake/requests", timeout=5) as response:
            assert [entry["reply_index"] for entry in json.loads(response.read())] == [0, 1, 2]
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
        process.stdout.close()
        process.stderr.close()

    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(entry["api"], entry["status"], entry["reply_index"]) for entry in lines] == [
        ("anthropic", 200, 0), ("anthropic", 529, 1), ("anthropic", 200, 2)
    ]
    assert lines[0]["body"]["messages"] == USER
    assert "<redacted>" in (lines[0]["headers"].get("x-api-key"), lines[0]["headers"].get("authorization"))
    assert KEY_MARKER not in log.read_text()


def test_standalone_rejects_a_bad_script(tmp_path):
    script = tmp_path / "bad.json"
    script.write_text('{"text": "not a list"}')
    result = subprocess.run(
        [sys.executable, "-m", "tests.fakellm", "--script", str(script)],
        cwd=REPO, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 2
    assert "bad.json: expected a JSON list of replies, got dict" in result.stderr


async def test_a_held_reply_goes_when_the_test_releases_it(fake_llm: FakeLLM,
                                                           claude: anthropic.AsyncAnthropic) -> None:
    fake_llm.script(Reply(text="held", after_requests=2))
    received: list[str] = []
    streaming = asyncio.create_task(stream_text(claude, received))
    await asyncio.to_thread(fake_llm.wait_for_requests, 1)
    done, _ = await asyncio.wait({streaming}, timeout=0.3)
    assert not done and received == []  # one request so far: still held
    fake_llm.release()
    await asyncio.wait_for(streaming, timeout=30)
    assert "".join(received) == "held"
    assert [r.path for r in fake_llm.requests][-1] == "/_fake/release"
