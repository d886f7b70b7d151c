"""The fake LLM server rejects, with the real APIs' 400s, what the real APIs reject (driven by the real SDKs)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.fakellm import Reply, ToolCall
from tests.fakellm.fixtures import ANTHROPIC_TEST_KEY, OPENAI_TEST_KEY
from tests.fakellm.server import FakeLLM

REPO = Path(__file__).resolve().parents[2]
MODEL = "claude-fake-1"
GPT = "gpt-fake"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


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


def _message(role: str, content: tuple[Any, ...]) -> dict[str, Any]:
    """One string argument is sent as string content, anything else as a list of blocks."""
    single_string = len(content) == 1 and isinstance(content[0], str)
    return {"role": role, "content": content[0] if single_string else list(content)}


def user(*content: Any) -> dict[str, Any]:
    return _message("user", content)


def assistant(*content: Any) -> dict[str, Any]:
    return _message("assistant", content)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def use(tool_id: str, name: str = "read_file") -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {"path": "a.txt"}}


def result(tool_id: str, content: Any = "file text") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content}


def anthropic_body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 2000, "messages": messages, **extra}


async def send_anthropic(client: anthropic.AsyncAnthropic, body: dict[str, Any], **options: Any) -> Any:
    """`messages.create` when the SDK can take the body, else a raw SDK POST (missing or mistyped fields)."""
    if {"model", "max_tokens", "messages"} <= body.keys() and isinstance(body["max_tokens"], int):
        return await client.messages.create(**body, **options)
    return await client.post("/v1/messages", cast_to=object, body=body)


def assert_rejected_without_using_the_script(fake: FakeLLM, reply: Reply, message: str) -> None:
    [request] = fake.requests
    assert (request.status, request.reply_index, request.rejected) == (400, None, message)
    assert fake.pending == [reply]


# ---------------------------------------------------------------- Anthropic: rejected


TOOLS_OK = [{"name": "read_file", "description": "Read a file.", "input_schema": SCHEMA}]

ANTHROPIC_BAD: dict[str, tuple[dict[str, Any], str]] = {
    "model missing": ({"max_tokens": 10, "messages": [user("hi")]}, "model: Field required"),
    "max_tokens missing": ({"model": MODEL, "messages": [user("hi")]}, "max_tokens: Field required"),
    "max_tokens zero": (
        {"model": MODEL, "max_tokens": 0, "messages": [user("hi")]},
        "max_tokens: Input should be greater than or equal to 1",
    ),
    "max_tokens not an int": (
        {"model": MODEL, "max_tokens": "10", "messages": [user("hi")]},
        "max_tokens: Input should be a valid integer",
    ),
    "messages empty": (anthropic_body([]), "messages: at least one message is required"),
    "system role in messages": (
        anthropic_body([{"role": "system", "content": "be brief"}, user("hi")]),
        "messages.0.role: Input should be 'user' or 'assistant'",
    ),
    "first message from the assistant": (
        anthropic_body([assistant("Hello."), user("hi")]), 'messages: first message must use the "user" role'
    ),
    "tool_use answered by plain text": (
        anthropic_body([user("read it"), assistant(use("toolu_x")), user("go on")]),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_x. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    ),
    "tool_use as the last message": (
        anthropic_body([user("read it"), assistant(text("Reading."), use("toolu_x"))]),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_x. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    ),
    "one of two parallel tool_uses unanswered": (
        anthropic_body([user("read"), assistant(use("toolu_a"), use("toolu_b")), user(result("toolu_a"))]),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_b. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    ),
    "tool_result after text in the next message": (
        anthropic_body([user("read"), assistant(use("toolu_a")), user(text("here:"), result("toolu_a"))]),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    ),
    "tool_result with no tool_use at all": (
        anthropic_body([user(result("toolu_ghost"))]),
        "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_ghost. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    ),
    "tool_result for a tool_use two turns back": (
        anthropic_body([user("read"), assistant(use("toolu_a")), user(result("toolu_a")),
                        assistant("Done."), user(result("toolu_a"), text("again"))]),
        "messages.4.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_a. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    ),
    "tool_use id reused": (
        anthropic_body([user("read"), assistant(use("toolu_a")), user(result("toolu_a")),
                        assistant(use("toolu_a")), user(result("toolu_a"))]),
        "messages.3.content.0: `tool_use` ids must be unique",
    ),
    "tool_use id with a bad character": (
        anthropic_body([user("read"), assistant(use("toolu a")), user(result("toolu a"))]),
        "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
    ),
    "tool_use in a user message": (
        anthropic_body([user(use("toolu_a"))]),
        "messages.0.content.0: `tool_use` blocks can only be in `assistant` messages",
    ),
    "unknown block type": (
        anthropic_body([user({"type": "video", "url": "x"})]),
        "messages.0.content.0: Input tag 'video' found using 'type' does not match any of the expected tags: "
        "'text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'",
    ),
    "thinking block without a signature": (
        anthropic_body([user("hi"), assistant({"type": "thinking", "thinking": "hm"}, text("Hi.")), user("?")]),
        "messages.1.content.0.thinking.signature: Field required",
    ),
    "empty text block": (
        anthropic_body([user(text("hi")), assistant(text("")), user("more")]),
        "messages: text content blocks must be non-empty",
    ),
    "whitespace-only text block": (
        anthropic_body([user("hi"), assistant(text("\n\n")), user("more")]),
        "messages: text content blocks must contain non-whitespace text",
    ),
    "empty text inside a tool_result": (
        anthropic_body([user("read"), assistant(use("toolu_a")), user(result("toolu_a", [text("")]))]),
        "messages: text content blocks must be non-empty",
    ),
    "user message with no content": (
        anthropic_body([user("hi"), assistant("Hello."), {"role": "user", "content": []}]),
        "messages.2: all messages must have non-empty content except for the optional final assistant message",
    ),
    "prefill ending in whitespace": (
        anthropic_body([user("hi"), assistant("Sure, here it is: ")]),
        "messages: final assistant content cannot end with trailing whitespace",
    ),
    "prefill block ending in a newline": (
        anthropic_body([user("hi"), assistant(text("Sure.\n"))]),
        "messages: final assistant content cannot end with trailing whitespace",
    ),
    "thinking budget below 1024": (
        anthropic_body([user("hi")], thinking={"type": "enabled", "budget_tokens": 512}),
        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
    ),
    "thinking budget not below max_tokens": (
        anthropic_body([user("hi")], max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 2048}),
        "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
    ),
    "thinking of an unknown type": (
        anthropic_body([user("hi")], thinking={"type": "on", "budget_tokens": 2048}),
        "thinking: Input tag 'on' found using 'type' does not match any of the expected tags: "
        "'enabled', 'disabled', 'adaptive'",
    ),
    "tool name with a space": (
        anthropic_body([user("hi")], tools=[{"name": "read file", "input_schema": SCHEMA}]),
        "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
    ),
    "tool name too long": (
        anthropic_body([user("hi")], tools=[*TOOLS_OK, {"name": "x" * 65, "input_schema": SCHEMA}]),
        "tools.1.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
    ),
    "tool without input_schema": (
        anthropic_body([user("hi")], tools=[{"name": "read_file", "description": "Read."}]),
        "tools.0.custom.input_schema: Field required",
    ),
    "tool schema not an object": (
        anthropic_body([user("hi")], tools=[{"name": "ls", "input_schema": {"type": "array"}}]),
        "tools.0.custom.input_schema.type: Input should be 'object'",
    ),
    "two tools with one name": (
        anthropic_body([user("hi")], tools=[*TOOLS_OK, *TOOLS_OK]), "tools: Tool names must be unique."
    ),
    "empty system block": (
        anthropic_body([user("hi")], system=[{"type": "text", "text": ""}]),
        "system: text content blocks must be non-empty",
    ),
}


@pytest.mark.parametrize(("body", "message"), list(ANTHROPIC_BAD.values()), ids=list(ANTHROPIC_BAD))
async def test_anthropic_rejects_what_the_real_api_rejects(fake_llm, claude, body, message):
    reply = Reply(text="must not be used")
    fake_llm.script(reply)
    with pytest.raises(anthropic.BadRequestError) as caught:
        await send_anthropic(claude, body)

    error = caught.value
    assert error.status_code == 400
    assert error.body == {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    assert_rejected_without_using_the_script(fake_llm, reply, message)


async def test_anthropic_streaming_request_is_rejected_before_the_stream(fake_llm, claude):
    fake_llm.script(Reply(text="unused"))
    body = anthropic_body([user("read"), assistant(use("toolu_1"))])
    with pytest.raises(anthropic.BadRequestError, match="toolu_1"):
        async with claude.messages.stream(**body) as stream:
            await stream.get_final_message()
    assert fake_llm.requests[0].status == 400


async def test_anthropic_rejected_request_leaves_the_reply_for_a_corrected_one(fake_llm, claude):
    fake_llm.script(Reply(text="answered"))
    history = [user("read"), assistant(use("toolu_1"))]
    with pytest.raises(anthropic.BadRequestError):
        await claude.messages.create(**anthropic_body([*history, user("well?")]))
    fixed = await claude.messages.create(**anthropic_body([*history, user(result("toolu_1"), text("well?"))]))

    assert fixed.content[0].text == "answered"
    assert [(r.status, r.reply_index) for r in fake_llm.requests] == [(400, None), (200, 0)]


async def test_rejection_without_any_script_is_still_the_400(fake_llm, claude):
    with pytest.raises(anthropic.BadRequestError, match="at least one message"):
        await claude.messages.create(**anthropic_body([]))


# ---------------------------------------------------------------- Anthropic: accepted


async def test_anthropic_accepts_a_multi_turn_tool_conversation_built_from_its_replies(fake_llm, claude):
    fake_llm.script(
        Reply(thinking="Two files to read.", text="Reading both.",
              tool_calls=[ToolCall("read_file", {"path": "a.txt"}), ToolCall("read_file", {"path": "b.txt"})]),
        Reply(thinking="One more.", tool_calls=[ToolCall("list_dir", {"path": "."})]),
        Reply(text="Both files say hello."),
        Reply(text="Sure."),
    )
    params: dict[str, Any] = {
        "model": MODEL, "max_tokens": 4096, "tools": [*TOOLS_OK, {"name": "list_dir", "input_schema": SCHEMA}],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
    }
    messages: list[dict[str, Any]] = [user("Read a.txt and b.txt")]
    first = await claude.messages.create(**params, messages=messages)
    calls = [b for b in first.content if b.type == "tool_use"]
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        user(result(calls[0].id, [text("hello from a")]),
             {**result(calls[1].id, "no such file"), "is_error": True}, text("Keep going.")),
    ]
    second = await claude.messages.create(**params, messages=messages)
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in second.content]},
        user({**result(second.content[-1].id, "a.txt b.txt"), "cache_control": {"type": "ephemeral"}}),
    ]
    third = await claude.messages.create(**params, messages=messages)
    messages += [assistant(third.content[0].text), user("And in one word?"), user("Please."),
                 assistant("Sure")]  # consecutive user turns and a prefill are accepted
    fourth = await claude.messages.create(**{**params, "thinking": {"type": "disabled"}}, messages=messages)

    assert (third.content[0].text, fourth.content[0].text) == ("Both files say hello.", "Sure.")
    assert [r.status for r in fake_llm.requests] == [200] * 4
    assert all(r.rejected is None for r in fake_llm.requests)


async def test_anthropic_interleaved_thinking_beta_lifts_the_budget_limit(fake_llm, claude):
    fake_llm.script(Reply(text="ok"))
    body = anthropic_body([user("hi")], max_tokens=1024, thinking={"type": "enabled", "budget_tokens": 8192})
    message = await claude.messages.create(
        **body, extra_headers={"anthropic-beta": "interleaved-thinking-2025-05-14"}
    )
    assert message.content[0].text == "ok"


async def test_validation_can_be_turned_off_for_odd_requests(fake_llm, claude):
    fake_llm.validate = False
    fake_llm.script(Reply(text="anything goes"))
    message = await claude.messages.create(**anthropic_body([assistant(use("toolu_1"))], max_tokens=0))
    assert message.content[0].text == "anything goes"
    assert fake_llm.requests[0].rejected is None


# ---------------------------------------------------------------- OpenAI


def call(call_id: str, name: str = "read_file") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": '{"path": "a.txt"}'}}


def calls(*call_ids: str, content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": [call(c) for c in call_ids]}


def tool(call_id: str, content: str = "file text") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def function(name: str = "read_file", parameters: Any = SCHEMA) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": "Read.", "parameters": parameters}}


HI = {"role": "user", "content": "hi"}
MISSING = ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
           "'tool_call_id'. The following tool_call_ids did not have response messages: ")

OPENAI_BAD: dict[str, tuple[dict[str, Any], str, str | None]] = {
    "model missing": ({"messages": [HI]}, "you must provide a model parameter", None),
    "messages missing": ({"model": GPT}, "Missing required parameter: 'messages'.", "messages"),
    "messages empty": (
        {"model": GPT, "messages": []},
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        "messages",
    ),
    "unknown role": (
        {"model": GPT, "messages": [{"role": "robot", "content": "beep"}]},
        "Invalid value: 'robot'. Supported values are: 'system', 'developer', 'user', 'assistant', and 'tool'.",
        "messages[0].role",
    ),
    "user message without content": (
        {"model": GPT, "messages": [{"role": "user"}]},
        "Missing required parameter: 'messages[0].content'.", "messages[0].content",
    ),
    "assistant with neither content nor tool_calls": (
        {"model": GPT, "messages": [HI, {"role": "assistant", "content": None}, HI]},
        "Invalid value for 'content': expected a string, got null.", "messages.[1].content",
    ),
    "tool_calls answered by a user message": (
        {"model": GPT, "messages": [HI, calls("call_1"), HI]}, MISSING + "call_1", "messages.[2].role"
    ),
    "one of two tool_calls unanswered": (
        {"model": GPT, "messages": [HI, calls("call_1", "call_2"), tool("call_1"), HI]},
        MISSING + "call_2", "messages.[3].role",
    ),
    "tool_calls as the last message": (
        {"model": GPT, "messages": [HI, calls("call_1", content="Reading.")]}, MISSING + "call_1",
        "messages.[1].role",
    ),
    "tool message with no tool_calls before it": (
        {"model": GPT, "messages": [HI, tool("call_1")]},
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
        "'tool_calls'.", "messages.[1].role",
    ),
    "tool message after the answers ended": (
        {"model": GPT, "messages": [HI, calls("call_1"), tool("call_1"),
                                    {"role": "assistant", "content": "Done."}, tool("call_1")]},
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
        "'tool_calls'.", "messages.[4].role",
    ),
    "tool message answering an unknown id": (
        {"model": GPT, "messages": [HI, calls("call_1"), tool("call_9")]},
        "Invalid parameter: 'tool_call_id' of 'call_9' not found in 'tool_calls' of previous message.",
        "messages.[2].tool_call_id",
    ),
    "tool message without tool_call_id": (
        {"model": GPT, "messages": [HI, calls("call_1"), {"role": "tool", "content": "x"}]},
        "Missing required parameter: 'messages[2].tool_call_id'.", "messages[2].tool_call_id",
    ),
    "tool call arguments not a string": (
        {"model": GPT, "messages": [HI, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": {"path": "."}}}]},
            tool("call_1")]},
        "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, but got object "
        "instead.", "messages[1].tool_calls[0].function.arguments",
    ),
    "tool of an unknown type": (
        {"model": GPT, "messages": [HI], "tools": [{"type": "retrieval"}]},
        "Invalid value: 'retrieval'. Supported values are: 'function'.", "tools[0].type",
    ),
    "tool without a function": (
        {"model": GPT, "messages": [HI], "tools": [{"type": "function"}]},
        "Missing required parameter: 'tools[0].function'.", "tools[0].function",
    ),
    "function name with a space": (
        {"model": GPT, "messages": [HI], "tools": [function(), function("read file")]},
        "Invalid 'tools[1].function.name': string does not match pattern. Expected a string that matches the "
        "pattern '^[a-zA-Z0-9_-]+$'.", "tools[1].function.name",
    ),
    "function parameters not an object schema": (
        {"model": GPT, "messages": [HI], "tools": [function(parameters={"type": "array"})]},
        "Invalid schema for function 'read_file': schema must be a JSON Schema of 'type: \"object\"', got "
        "'type: \"array\"'.", "tools[0].function.parameters",
    ),
}


@pytest.mark.parametrize(("body", "message", "param"), list(OPENAI_BAD.values()), ids=list(OPENAI_BAD))
async def test_openai_rejects_what_the_real_api_rejects(fake_llm, gpt, body, message, param):
    reply = Reply(text="must not be used")
    fake_llm.script(reply)
    with pytest.raises(openai.BadRequestError) as caught:
        if {"model", "messages"} <= body.keys():
            await gpt.chat.completions.create(**body)
        else:
            await gpt.post("/chat/completions", cast_to=object, body=body)

    error = caught.value
    assert error.status_code == 400
    assert error.body == {"message": message, "type": "invalid_request_error", "param": param, "code": None}
    assert_rejected_without_using_the_script(fake_llm, reply, message)


async def test_openai_accepts_a_multi_turn_tool_conversation_built_from_its_replies(fake_llm, gpt):
    fake_llm.script(
        Reply(text="Reading both.", tool_calls=[ToolCall("read_file", {"path": "a.txt"}),
                                                ToolCall("read_file", {"path": "b.txt"})]),
        Reply(tool_calls=[ToolCall("list_dir", {"path": "."})]),
        Reply(text="Both say hello."),
    )
    tools = [function(), function("list_dir", {})]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {"role": "developer", "content": "Prefer short answers."},
        {"role": "user", "content": [{"type": "text", "text": "Read a.txt and b.txt"}]},
    ]
    for _ in range(2):
        completion = await gpt.chat.completions.create(model=GPT, messages=messages, tools=tools)
        answer = completion.choices[0].message
        messages.append(answer.model_dump(exclude_none=True, exclude={"refusal"}))
        messages += [tool(c.id, f"result of {c.function.arguments}") for c in answer.tool_calls]
    stream = await gpt.chat.completions.create(model=GPT, messages=messages, tools=tools, stream=True)
    final = "".join([chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices])

    assert final == "Both say hello."
    assert [r.status for r in fake_llm.requests] == [200] * 3
    assert [m["role"] for m in messages] == ["system", "developer", "user", "assistant", "tool", "tool",
                                             "assistant", "tool"]


def test_standalone_server_validates_unless_told_not_to(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "ok", "repeat": True}]))
    bad = json.dumps({"model": MODEL, "max_tokens": 10, "messages": []}).encode()
    statuses = []
    for flags in ([], ["--no-validate"]):
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.fakellm", "--script", str(script), *flags],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            url = process.stdout.readline().strip().removeprefix("FAKE_LLM_URL=")
            request = urllib.request.Request(url + "/v1/messages", data=bad,
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    statuses.append(response.status)
            except urllib.error.HTTPError as exc:
                statuses.append(exc.code)
        finally:
            process.terminate()
            process.wait(timeout=10)
            process.stdout.close()
            process.stderr.close()
    assert statuses == [400, 200]
