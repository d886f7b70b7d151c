"""The in-process scripted provider answers like the real providers talking to the HTTP fake: the same chunks,
final message, usage and stop reason, the same errors (text, status, retryable, retry-after), the same
recorded request body, and the same 400 for a request the real API would reject."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.fakellm import Fault, Reply, ToolCall
from tests.fakellm.fixtures import ANTHROPIC_TEST_KEY, OPENAI_TEST_KEY
from tests.fakellm.inprocess import ScriptedLLM
from tests.fakellm.server import FakeLLM
from yeetui.errors import ProviderError
from yeetui.messages import Message, ToolCallPart, ToolResultPart
from yeetui.providers.anthropic import AnthropicProvider
from yeetui.providers.base import ModelRequest, Provider, StreamDone, ToolSpec
from yeetui.providers.litellm import LiteLLMProvider

TOOLS = [ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),
         ToolSpec("bash", "Run a command.", {"type": "object"})]
HISTORY = [Message.user("hi ü"), Message(role="assistant", parts=(ToolCallPart(id="c1", name="bash", arguments={}),)),
           Message(role="tool", parts=(ToolResultPart(call_id="c1", content="ok"),))]

REPLIES = {
    "text": lambda: Reply(text="hello there world", usage={"input_tokens": 5, "output_tokens": 7,
                                                           "cache_read_tokens": 3}),
    "thinking": lambda: Reply(thinking="let me think", text="answer", chunk_size=3),
    "tools": lambda: Reply(text="x", tool_calls=[ToolCall("read_file", {"path": "a.txt"}),
                                                 ToolCall("bash", raw='{"command": "ls"')]),
    "stop": lambda: Reply(text="cut", stop="max_tokens"),
    "500": lambda: Reply.error(500),
    "429": lambda: Reply.error(429, retry_after=2),
    "400": lambda: Reply.error(400),
    "401": lambda: Reply.error(401),
    "529": lambda: Reply.error(529),
    "overloaded_in_stream": lambda: Reply(text="abcdefgh", fault=Fault.overloaded_in_stream(4)),
    "drop": lambda: Reply(text="abcdefgh", fault=Fault.drop(4)),
    "malformed_sse": lambda: Reply(text="abcdefgh", fault=Fault(kind="malformed_sse", after_chars=4)),
}
TRANSPORT = {"drop", "malformed_sse"}
"""Faults whose error text names the transport (host, port, exception) in the real provider's message."""


async def _outcome(provider: Provider, request: ModelRequest, *, exact_errors: bool) -> tuple[Any, ...]:
    items: list[Any] = []
    try:
        async for item in provider.stream(request):
            items.append(item)
    except ProviderError as err:
        return ("error", str(err) if exact_errors else None, err.status, err.retryable, err.retry_after,
                [type(i).__name__ for i in items])
    done = items[-1]
    assert isinstance(done, StreamDone)
    return items[:-1], done.message, done.usage, done.stop_reason


def _http_provider(api: str, fake: FakeLLM) -> Provider:
    if api == "anthropic":
        return AnthropicProvider(ANTHROPIC_TEST_KEY, fake.anthropic_base_url)
    return LiteLLMProvider("openai", OPENAI_TEST_KEY, fake.openai_base_url)


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_every_kind_of_reply_comes_out_as_over_http(fake_llm: FakeLLM, api: str) -> None:
    scripted = ScriptedLLM()
    over_http, in_process = _http_provider(api, fake_llm), scripted.provider(api)
    request = ModelRequest(model="m", system="Be brief.", messages=HISTORY, tools=TOOLS)
    for name, reply in REPLIES.items():
        fake_llm.script(reply())
        scripted.script(reply())
        exact = name not in TRANSPORT
        assert await _outcome(in_process, request, exact_errors=exact) == \
            await _outcome(over_http, request, exact_errors=exact), name
    unscripted = await _outcome(in_process, request, exact_errors=True)
    assert unscripted == await _outcome(over_http, request, exact_errors=True)
    assert unscripted[2:4] == (500, True) and "no scripted reply" in unscripted[1]
    for sent, played in zip(fake_llm.requests, scripted.requests, strict=True):
        assert (played.number, played.api, played.body, played.reply_index, played.status) == \
            (sent.number, sent.api, sent.body, sent.reply_index, sent.status)
        assert played.started <= played.finished


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_request_the_api_would_reject_is_a_400_that_uses_no_reply(api: str) -> None:
    scripted = ScriptedLLM().script(Reply(text="never sent"))
    request = ModelRequest(model="m", system="s", messages=[Message.user("hi")],
                           tools=[ToolSpec("bad name!", "x", {"type": "object"})])
    with pytest.raises(ProviderError) as info:
        async for _ in scripted.provider(api).stream(request):
            pass
    assert info.value.status == 400 and not info.value.retryable
    (recorded,) = scripted.requests
    assert recorded.rejected is not None and recorded.rejected in str(info.value) and recorded.status == 400
    assert len(scripted.pending) == 1


async def test_provider_factory_and_waiting_for_requests() -> None:
    scripted = ScriptedLLM().script(Reply(text="slow answer", chunk_size=1, chunk_delay=0.01, when_contains="A"),
                                    Reply(text="B answer", when_contains="B"))
    provider, bare = scripted.provider_factory("anthropic/claude-test")
    assert bare == "claude-test" and provider is scripted.provider("anthropic") and provider.name == "anthropic"
    assert scripted.provider_factory("openai/gpt-test")[0].name == "openai"

    async def ask(text: str) -> str:
        async for item in provider.stream(ModelRequest(model=bare, system="", messages=[Message.user(text)])):
            if isinstance(item, StreamDone):
                return item.message.text
        raise AssertionError("no StreamDone")

    slow = asyncio.create_task(ask("A"))
    first = await scripted.until_requests(1)
    assert first[0].finished is None  # still streaming
    with pytest.raises(RuntimeError, match="until_requests"):
        scripted.wait_for_requests(1)
    assert await ask("B") == "B answer"
    done = await scripted.until_requests(2, finished=True)
    assert await slow == "slow answer" and all(r.finished is not None for r in done)
    with pytest.raises(TimeoutError, match="3 request"):
        await scripted.until_requests(3, timeout=0.05)
