"""AnthropicProvider through the real anthropic SDK against the local fake server (SSE on loopback)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakellm import Fault, Reply, ToolCall
from tests.fakellm.fixtures import ANTHROPIC_TEST_KEY, KEY_MARKER
from tests.fakellm.wire_anthropic import signature_for
from yeetui.errors import ProviderError
from yeetui.messages import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
from yeetui.providers.anthropic import AnthropicProvider
from yeetui.providers.base import ModelRequest, StreamDone, TextChunk, ThinkingChunk, ToolCallChunk, ToolSpec
from yeetui.providers.retry import Restarted, stream_with_retry

MODEL = "claude-fake-1"
WRITE = ToolSpec("write_file", "Write a file.",
                 {"type": "object", "properties": {"path": {"type": "string"}}})


@pytest.fixture
async def provider(fake_llm) -> AsyncIterator[AnthropicProvider]:
    p = AnthropicProvider(ANTHROPIC_TEST_KEY, fake_llm.anthropic_base_url)
    yield p
    await p.aclose()


def request(*messages: Message, **kw) -> ModelRequest:
    return ModelRequest(model=MODEL, system="You are terse.", messages=list(messages or [Message.user("hi")]),
                        **kw)


async def collect(stream) -> list:
    return [item async for item in stream]


async def no_sleep(delay: float) -> None:
    pass


def text_of(items: list) -> str:
    return "".join(i.text for i in items if isinstance(i, TextChunk))


async def test_text_and_thinking_stream_then_done_with_signature_and_usage(fake_llm, provider) -> None:
    fake_llm.script(Reply(text="Hello there, world.", thinking="The user greets me.", usage={
        "input_tokens": 120, "output_tokens": 33, "cache_read_tokens": 80, "cache_write_tokens": 12,
    }))
    items = await collect(provider.stream(request(thinking="low")))
    assert "".join(i.text for i in items if isinstance(i, ThinkingChunk)) == "The user greets me."
    assert text_of(items) == "Hello there, world."
    assert sum(isinstance(i, TextChunk) for i in items) > 1  # really streamed
    done = items[-1]
    assert isinstance(done, StreamDone) and sum(isinstance(i, StreamDone) for i in items) == 1
    assert done.message.parts == (
        ThinkingPart(text="The user greets me.", signature=signature_for("The user greets me.")),
        TextPart(text="Hello there, world."),
    )
    assert done.usage == Usage(input_tokens=120, output_tokens=33, cache_read_tokens=80,
                               cache_write_tokens=12)
    assert done.stop_reason == "end_turn"
    body = fake_llm.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] > 2048 and body["stream"] is True and body["model"] == MODEL
    assert body["system"][0]["text"] == "You are terse."


async def test_tool_use_round_trip_sends_history_back_in_anthropic_shape(fake_llm, provider) -> None:
    args = {"path": "a", "content": "b"}
    fake_llm.script(
        Reply(text="Writing it.", thinking="plan", tool_calls=[ToolCall("write_file", args)]),
        Reply(text="Done."),
    )
    ask = Message.user("write a")
    first = await collect(provider.stream(request(ask, tools=[WRITE], thinking="medium")))
    calls = [i for i in first if isinstance(i, ToolCallChunk)]
    assert calls == [ToolCallChunk("toolu_fake_1_0", "write_file")]
    turn = first[-1]
    assert turn.stop_reason == "tool_use"
    [call] = turn.message.tool_calls
    assert call == ToolCallPart(id="toolu_fake_1_0", name="write_file", arguments=args)

    result = Message(role="tool", parts=(ToolResultPart(call_id=call.id, name=call.name, content="wrote 1"),))
    history = (ask, turn.message, result)
    second = await collect(provider.stream(request(*history, tools=[WRITE], thinking="medium")))
    assert second[-1].message.text == "Done."
    sent = fake_llm.requests[1].body
    assert sent["tools"] == [{"name": "write_file", "description": "Write a file.",
                              "input_schema": WRITE.input_schema}]
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assistant_blocks = sent["messages"][1]["content"]
    assert assistant_blocks[0] == {"type": "thinking", "thinking": "plan", "signature": signature_for("plan")}
    assert assistant_blocks[1] == {"type": "text", "text": "Writing it."}
    assert assistant_blocks[2] == {"type": "tool_use", "id": call.id, "name": "write_file",
                                   "input": {"path": "a", "content": "b"}}
    assert sent["messages"][2]["content"][0]["type"] == "tool_result"
    assert sent["messages"][2]["content"][0]["tool_use_id"] == call.id


async def test_malformed_tool_json_becomes_raw_arguments(fake_llm, provider) -> None:
    fake_llm.script(Reply(tool_calls=[ToolCall("write_file", raw='{"path": "a.txt", "content": "x'),
                                      ToolCall("list_dir", {"path": "."})]))
    done = (await collect(provider.stream(request(tools=[WRITE]))))[-1]
    bad, good = done.message.tool_calls
    assert bad.arguments == {} and bad.raw_arguments == '{"path": "a.txt", "content": "x'
    assert good.arguments == {"path": "."} and good.raw_arguments is None


async def test_529_twice_then_success_through_retry(fake_llm, provider) -> None:
    fake_llm.script(Reply.error(529), Reply.error(529, retry_after=2), Reply(text="third time lucky"))
    retries: list[tuple[int, float, str]] = []
    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)

    items = await collect(stream_with_retry(provider, request(), sleep=sleep,
                                            on_retry=lambda a, d, m: retries.append((a, d, m))))
    assert text_of(items) == "third time lucky" and isinstance(items[-1], StreamDone)
    assert len(fake_llm.requests) == 3
    assert [a for a, _, _ in retries] == [1, 2]
    assert "Anthropic is overloaded (529 overloaded_error)" in retries[0][2]
    assert delays[1] >= 2  # the server's retry-after is honoured


async def test_overloaded_event_mid_stream_is_retried_without_duplicate_text(fake_llm, provider) -> None:
    fake_llm.script(Reply(text="Hello world, how are you?", fault=Fault.overloaded_in_stream(after_chars=9)))
    with pytest.raises(ProviderError) as info:
        await collect(provider.stream(request()))
    assert info.value.retryable and "overloaded" in str(info.value)

    fake_llm.script(Reply(text="Hello world, how are you?", fault=Fault.overloaded_in_stream(after_chars=9)),
                    Reply(text="Hello world, how are you?"))
    items = await collect(stream_with_retry(provider, request(), sleep=no_sleep))
    chunks = [i.text for i in items if isinstance(i, TextChunk)]
    assert "".join(chunks) == "Hello world, how are you?"  # each character shown exactly once
    assert len(fake_llm.requests) == 3 and fake_llm.pending == []
    assert not any(isinstance(i, Restarted) for i in items)
    assert items[-1].message.text == "Hello world, how are you?"


async def test_dropped_connection_is_retryable_and_recovered(fake_llm, provider) -> None:
    fake_llm.script(Reply(text="Partial answer then more", fault=Fault.drop(after_chars=8)),
                    Reply(text="Partial answer then more"))
    items = await collect(stream_with_retry(provider, request(), sleep=no_sleep))
    assert text_of(items) == "Partial answer then more"
    assert len(fake_llm.requests) == 2


async def test_dropped_stream_error_names_anthropic_and_is_retryable(fake_llm, provider) -> None:
    fake_llm.script(Reply(text="abcdefgh", fault=Fault.drop(after_chars=4)))
    with pytest.raises(ProviderError, match=r"connection to Anthropic at 127\.0\.0\.1:\d+ dropped") as info:
        await collect(provider.stream(request()))
    assert info.value.retryable


async def test_divergent_retry_restarts(fake_llm, provider) -> None:
    fake_llm.script(Reply(text="First draft", fault=Fault.drop(after_chars=6)), Reply(text="Second answer"))
    items = await collect(stream_with_retry(provider, request(), sleep=no_sleep))
    restart = next(i for i, item in enumerate(items) if isinstance(item, Restarted))
    assert text_of(items[:restart]) == "First "
    assert text_of(items[restart:]) == "Second answer"


async def test_401_is_not_retried_and_names_the_problem_without_the_key(fake_llm, provider) -> None:
    fake_llm.script(Reply.error(401), Reply(text="never reached"))
    with pytest.raises(ProviderError) as info:
        await collect(stream_with_retry(provider, request(), sleep=no_sleep))
    message = str(info.value)
    assert message.startswith("Anthropic rejected the API key (401 authentication_error): invalid x-api-key")
    assert KEY_MARKER not in message and not info.value.retryable and info.value.status == 401
    assert len(fake_llm.requests) == 1


async def test_400_is_not_retried(fake_llm, provider) -> None:
    fake_llm.script(Reply.error(400))
    expected = r"Anthropic rejected the request \(400 invalid_request_error\)"
    with pytest.raises(ProviderError, match=expected) as info:
        await collect(provider.stream(request()))
    assert not info.value.retryable


async def test_malformed_sse_is_a_retryable_provider_error(fake_llm, provider) -> None:
    fake_llm.script(Reply(text="abcdefgh", fault=Fault(kind="malformed_sse", after_chars=4)))
    with pytest.raises(ProviderError, match="malformed stream event") as info:
        await collect(provider.stream(request()))
    assert info.value.retryable


async def test_slow_server_times_out_as_retryable(fake_llm) -> None:
    fake_llm.script(Reply(text="slow " * 20, chunk_size=5, chunk_delay=0.5))
    provider = AnthropicProvider(ANTHROPIC_TEST_KEY, fake_llm.anthropic_base_url, timeout=0.2)
    try:
        with pytest.raises(ProviderError, match=r"did not answer within 0\.2 s") as info:
            await collect(provider.stream(request()))
        assert info.value.retryable
    finally:
        await provider.aclose()


async def test_unreachable_server_is_a_retryable_connection_error() -> None:
    provider = AnthropicProvider(ANTHROPIC_TEST_KEY, "http://127.0.0.1:9")  # discard port: refused
    try:
        with pytest.raises(ProviderError, match=r"connection to Anthropic at 127\.0\.0\.1:9 dropped") as info:
            await collect(provider.stream(request()))
        assert info.value.retryable and KEY_MARKER not in str(info.value)
    finally:
        await provider.aclose()


async def test_missing_key_is_a_clear_non_retryable_error(fake_llm) -> None:
    provider = AnthropicProvider(None, fake_llm.anthropic_base_url)
    expected = r"ANTHROPIC_API_KEY.*providers\.anthropic\.api_key.*config\.yaml"
    with pytest.raises(ProviderError, match=expected) as info:
        await collect(provider.stream(request()))
    assert not info.value.retryable and fake_llm.requests == []
