"""The fake LLM's OpenAI Responses API (Codex's wire), driven by the real openai SDK's `responses` client, whose
stream accumulator checks every event against the one before it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import httpx2
import openai
import pytest

from tests.fakellm import Fault, Reply, ToolCall
from tests.fakellm.fixtures import OPENAI_TEST_KEY
from tests.fakellm.server import FakeLLM

MODEL = "gpt-fake-1"
CODEX_TOOLS = [
    {"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {}}},
    {"type": "custom", "name": "apply_patch", "format": {"type": "grammar", "syntax": "lark", "definition": "x"}},
    {"type": "namespace", "name": "multi_agent_v1", "description": "subagents", "tools": [
        {"type": "function", "name": "spawn_agent", "parameters": {"type": "object", "properties": {}}}]},
]


@pytest.fixture
async def gpt(fake_llm: FakeLLM) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=fake_llm.openai_base_url, api_key=OPENAI_TEST_KEY, max_retries=0)
    async with client:
        yield client


async def test_a_stream_of_reasoning_text_and_a_tool_call_as_the_sdk_accumulates_it(fake_llm, gpt):
    fake_llm.script(Reply(thinking="Let me look.", text="Looking now.", tool_calls=[ToolCall("exec_command",
                                                                                           {"cmd": "ls"})],
                          usage={"input_tokens": 100, "output_tokens": 9, "cache_read_tokens": 40}))
    async with gpt.responses.stream(model=MODEL, input="hello", tools=CODEX_TOOLS) as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_response()

    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert kinds.count("response.output_text.delta") == 3 and "response.reasoning_summary_text.delta" in kinds
    reasoning, message, call = final.output
    assert reasoning.type == "reasoning" and reasoning.summary[0].text == "Let me look."
    assert message.type == "message" and final.output_text == "Looking now."
    assert (call.type, call.name, call.arguments, call.call_id) == ("function_call", "exec_command",
                                                                    '{"cmd": "ls"}', "call_fake_1_0")
    assert final.status == "completed" and final.model == MODEL
    usage = final.usage
    assert (usage.input_tokens, usage.input_tokens_details.cached_tokens, usage.output_tokens) == (140, 40, 9)
    [request] = fake_llm.requests
    assert (request.api, request.path, request.status) == ("responses", "/v1/responses", 200)


async def test_a_custom_tool_gets_its_input_and_a_namespaced_function_its_namespace(fake_llm, gpt):
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
    fake_llm.script(Reply(tool_calls=[ToolCall("apply_patch", raw=patch), ToolCall("spawn_agent", {"message": "go"})]))
    async with gpt.responses.stream(model=MODEL, input="hello", tools=CODEX_TOOLS) as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_response()

    custom, spawn = final.output
    assert (custom.type, custom.name, custom.input) == ("custom_tool_call", "apply_patch", patch)
    assert "response.custom_tool_call_input.delta" in kinds
    assert (spawn.type, spawn.name, spawn.namespace) == ("function_call", "spawn_agent", "multi_agent_v1")


async def test_a_fill_takes_an_id_from_an_earlier_tool_result(fake_llm, gpt):
    fake_llm.script(Reply(tool_calls=[ToolCall("wait_agent", {"targets": ["AGENT"]},
                                               fill={"AGENT": r'"agent_id":\s*"([^"]+)"'})]))
    history = [{"type": "function_call", "call_id": "c1", "name": "spawn_agent", "arguments": "{}"},
               {"type": "function_call_output", "call_id": "c1", "output": '{"agent_id": "019-abc", "nickname": "x"}'}]
    response = await gpt.responses.create(model=MODEL, input=history)
    assert response.output[0].arguments == '{"targets": ["019-abc"]}'


async def test_a_max_tokens_stop_is_an_incomplete_response(fake_llm, gpt):
    fake_llm.script(Reply(text="cut", stop="max_tokens"), Reply(text="whole"))
    async with gpt.responses.stream(model=MODEL, input="hello") as stream:
        events = [event async for event in stream]  # (the SDK's final response wants `response.completed`)
    last = events[-1]
    assert last.type == "response.incomplete" and last.response.incomplete_details.reason == "max_output_tokens"
    assert last.response.output_text == "cut"
    whole = await gpt.responses.create(model=MODEL, input="hello")
    assert (whole.status, whole.output_text) == ("completed", "whole")


async def test_errors_and_in_stream_faults(fake_llm, gpt):
    fake_llm.script(Reply.error(429, retry_after=2), Reply(text="abcdefghij", fault=Fault.overloaded_in_stream(4)),
                    Reply(text="abcdefghij", fault=Fault.drop(after_chars=4)))
    with pytest.raises(openai.RateLimitError) as caught:
        await gpt.responses.create(model=MODEL, input="hello")
    assert caught.value.response.headers["retry-after"] == "2"

    received: list[str] = []
    async with gpt.responses.stream(model=MODEL, input="hello") as stream:
        async for event in stream:
            if event.type == "response.output_text.delta":
                received.append(event.delta)
            last = event
    assert "".join(received) == "abcd" and last.type == "response.failed"
    assert last.response.error.code == "server_error"

    with pytest.raises((httpx.RemoteProtocolError, httpx2.RemoteProtocolError, openai.APIConnectionError)):
        async with gpt.responses.stream(model=MODEL, input="hello") as stream:
            async for _ in stream:
                pass
