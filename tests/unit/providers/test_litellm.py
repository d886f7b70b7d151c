"""LiteLLMProvider through the real litellm (and openai SDK) against the fake server's OpenAI endpoint.

The machine has no `mcp` package; the tool-call tests passing here is the proof that litellm 1.102.4 does
not need it for chat-completion tool calls.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from tests.fakellm import Fault, Reply, ToolCall
from tests.fakellm.fixtures import KEY_MARKER, OPENAI_TEST_KEY
from yeetui.errors import ProviderError
from yeetui.messages import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
from yeetui.providers.base import (
    ModelRequest,
    StreamDone,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolSpec,
    credentials_from_env,
)
from yeetui.providers.factory import create_provider
from yeetui.providers.litellm import LiteLLMProvider
from yeetui.providers.retry import stream_with_retry

WRITE = ToolSpec("write_file", "Write a file.",
                 {"type": "object", "properties": {"path": {"type": "string"}}})


@pytest.fixture
def provider(fake_llm) -> LiteLLMProvider:
    return LiteLLMProvider("openai", OPENAI_TEST_KEY, fake_llm.openai_base_url)


def request(*messages: Message, **kw) -> ModelRequest:
    history = list(messages or [Message.user("hi")])
    return ModelRequest(model="gpt-5", system="You are terse.", messages=history, **kw)


async def collect(stream) -> list:
    return [item async for item in stream]


async def no_sleep(delay: float) -> None:
    pass


def text_of(items: list) -> str:
    return "".join(i.text for i in items if isinstance(i, TextChunk))


async def test_text_streams_with_usage_split_into_cached_and_uncached(fake_llm, provider) -> None:
    fake_llm.script(Reply(text="Streaming through litellm.", thinking="think", usage={
        "input_tokens": 100, "output_tokens": 7, "cache_read_tokens": 40,
    }))
    items = await collect(provider.stream(request()))
    assert text_of(items) == "Streaming through litellm."
    assert sum(isinstance(i, TextChunk) for i in items) > 1
    assert "".join(i.text for i in items if isinstance(i, ThinkingChunk)) == "think"
    done = items[-1]
    assert isinstance(done, StreamDone) and sum(isinstance(i, StreamDone) for i in items) == 1
    assert done.message.parts == (ThinkingPart(text="think"), TextPart(text="Streaming through litellm."))
    assert done.usage == Usage(input_tokens=100, output_tokens=7, cache_read_tokens=40)
    assert done.stop_reason == "end_turn"
    [req] = fake_llm.requests
    assert req.api == "openai" and req.body["model"] == "gpt-5" and req.body["stream"] is True
    assert req.body["stream_options"] == {"include_usage": True}
    assert req.body["messages"] == [{"role": "system", "content": "You are terse."},
                                    {"role": "user", "content": "hi"}]
    assert req.headers["authorization"] == f"Bearer {OPENAI_TEST_KEY}"
    assert "reasoning_effort" not in req.body


async def test_tool_calls_stream_and_round_trip(fake_llm, provider) -> None:
    fake_llm.script(
        Reply(text="Writing.", tool_calls=[ToolCall("write_file", {"path": "a", "content": "b"}),
                                           ToolCall("write_file", raw='{"path": "b", "content')]),
        Reply(text="Done."),
    )
    first = await collect(provider.stream(request(Message.user("write"), tools=[WRITE], thinking="high")))
    assert [i for i in first if isinstance(i, ToolCallChunk)] == [
        ToolCallChunk("call_fake_1_0", "write_file"), ToolCallChunk("call_fake_1_1", "write_file"),
    ]
    turn = first[-1]
    assert turn.stop_reason == "tool_use"
    good, bad = turn.message.tool_calls
    assert good == ToolCallPart(id="call_fake_1_0", name="write_file",
                                arguments={"path": "a", "content": "b"})
    assert bad.arguments == {} and bad.raw_arguments == '{"path": "b", "content'
    body = fake_llm.requests[0].body
    assert body["tools"] == [{"type": "function", "function": {
        "name": "write_file", "description": "Write a file.", "parameters": WRITE.input_schema}}]
    assert body["reasoning_effort"] == "high"

    results = Message(role="tool", parts=(
        ToolResultPart(call_id=good.id, content="ok"),
        ToolResultPart(call_id=bad.id, content="arguments were not valid JSON", is_error=True),
    ))
    history = (Message.user("write"), turn.message, results)
    second = await collect(provider.stream(request(*history, tools=[WRITE])))
    assert second[-1].message.text == "Done."
    sent = fake_llm.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool"]
    assert [c["function"]["arguments"] for c in sent[2]["tool_calls"]] == [
        '{"path": "a", "content": "b"}', "{}",
    ]
    assert sent[3] == {"role": "tool", "tool_call_id": "call_fake_1_0", "content": "ok"}
    assert sent[4]["content"].startswith("Error: ")


async def test_credentials_from_the_openai_environment_reach_the_fake_server(fake_env) -> None:
    fake_env.script(Reply(text="from env"))
    provider, model = create_provider("openai/gpt-4.1", credentials_from_env("openai", os.environ))
    req = ModelRequest(model=model, system="", messages=[Message.user("hi")])
    items = await collect(provider.stream(req))
    assert items[-1].message.text == "from env"
    assert fake_env.requests[0].body["model"] == "gpt-4.1"


async def test_401_is_not_retried_and_hides_the_key(fake_llm, provider) -> None:
    fake_llm.script(Reply.error(401), Reply(text="never"))
    with pytest.raises(ProviderError) as info:
        await collect(stream_with_retry(provider, request(), sleep=no_sleep))
    assert str(info.value) == "OpenAI rejected the API key (401): Incorrect API key provided."
    assert not info.value.retryable and info.value.status == 401
    assert KEY_MARKER not in str(info.value) and len(fake_llm.requests) == 1


async def test_404_model_is_not_retryable(fake_llm, provider) -> None:
    fake_llm.script(Reply.error(404))
    with pytest.raises(ProviderError, match=r"OpenAI does not know this model or endpoint \(404\)") as info:
        await collect(provider.stream(request()))
    assert not info.value.retryable


async def test_429_is_retryable_with_retry_after_then_succeeds(fake_llm, provider) -> None:
    fake_llm.script(Reply.error(429, retry_after=3), Reply.error(503), Reply(text="finally"))
    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)

    items = await collect(stream_with_retry(provider, request(), sleep=sleep))
    assert text_of(items) == "finally" and len(fake_llm.requests) == 3
    assert delays[0] >= 3 and len(delays) == 2


async def test_dropped_stream_is_retried_without_duplicated_text(fake_llm, provider) -> None:
    fake_llm.script(Reply(text="One two three four", fault=Fault.drop(after_chars=8)))
    with pytest.raises(ProviderError, match="broke off mid-answer") as info:
        await collect(provider.stream(request()))
    assert info.value.retryable

    fake_llm.script(Reply(text="One two three four", fault=Fault.drop(after_chars=8)),
                    Reply(text="One two three four"))
    items = await collect(stream_with_retry(provider, request(), sleep=no_sleep))
    assert text_of(items) == "One two three four"
    assert items[-1].message.text == "One two three four"
    assert len(fake_llm.requests) == 3 and fake_llm.pending == []


async def test_error_event_mid_stream_is_retried(fake_llm, provider) -> None:
    fake_llm.script(Reply(text="abcdefghij", fault=Fault.overloaded_in_stream(after_chars=4)),
                    Reply(text="abcdefghij"))
    items = await collect(stream_with_retry(provider, request(), sleep=no_sleep))
    assert text_of(items) == "abcdefghij" and len(fake_llm.requests) == 2


async def test_unreachable_server_is_a_retryable_connection_error() -> None:
    provider = LiteLLMProvider("openai", OPENAI_TEST_KEY, "http://127.0.0.1:9/v1")
    with pytest.raises(ProviderError, match="connection to OpenAI dropped") as info:
        await collect(provider.stream(request()))
    assert info.value.retryable and KEY_MARKER not in str(info.value)


async def test_litellm_logs_go_to_our_logging_not_the_terminal(fake_llm, provider, capfd, caplog) -> None:
    fake_llm.script(Reply(text="ok"))
    await collect(provider.stream(request()))
    capfd.readouterr()
    with caplog.at_level(logging.WARNING):
        logging.getLogger("LiteLLM").warning("litellm says %s", "hello")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    assert [r.getMessage() for r in caplog.records if r.name == "LiteLLM"] == ["litellm says hello"]


async def test_slow_server_times_out_as_retryable(fake_llm) -> None:
    fake_llm.script(Reply(text="slow " * 20, chunk_size=5, chunk_delay=1.0))
    provider = LiteLLMProvider("openai", OPENAI_TEST_KEY, fake_llm.openai_base_url, timeout=0.3)
    with pytest.raises(ProviderError) as info:
        await collect(provider.stream(request()))
    assert info.value.retryable
    assert str(info.value) == "OpenAI did not answer within 0.3 s."


@pytest.mark.parametrize(("provider_name", "variable"), [("openai", "OPENAI_API_KEY"), ("gemini", "GEMINI_API_KEY"),
                                                          ("openrouter", "OPENROUTER_API_KEY"),
                                                          ("mistral", "MISTRAL_API_KEY")])
async def test_a_missing_key_is_said_at_once_and_nothing_is_sent(fake_llm, provider_name: str, variable: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fake_llm.script(Reply(text="never"))
    keyless = LiteLLMProvider(provider_name, None, fake_llm.openai_base_url)
    problem = keyless.missing_credentials()
    config = Path(os.environ["YEETUI_CONFIG_DIR"]) / "config.yaml"
    assert problem is not None and variable in problem and str(config) in problem
    with pytest.raises(ProviderError) as info:
        await collect(stream_with_retry(keyless, request(), sleep=no_sleep))
    assert str(info.value) == problem and not info.value.retryable
    assert fake_llm.requests == []


def test_local_servers_need_no_key() -> None:
    assert LiteLLMProvider("ollama", None, "http://127.0.0.1:11434").missing_credentials() is None
