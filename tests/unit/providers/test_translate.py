"""Pure translation: neutral messages → Anthropic / OpenAI request shapes, credentials, provider choice."""

from __future__ import annotations

import json

import pytest

from yeetui.errors import ConfigError
from yeetui.messages import (
    INTERRUPTED_RESULT,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    pair_tool_results,
    pair_tool_results_with_sources,
)
from yeetui.providers.anthropic import AnthropicProvider, build_params, to_anthropic_messages
from yeetui.providers.base import (
    ModelRequest,
    ProviderCredentials,
    ToolSpec,
    credentials_from_env,
    parse_tool_arguments,
)
from yeetui.providers.factory import create_provider
from yeetui.providers.litellm import LiteLLMProvider, to_openai_messages


def assistant(*parts) -> Message:
    return Message(role="assistant", parts=tuple(parts))


def tool(*parts) -> Message:
    return Message(role="tool", parts=tuple(parts))


CALL = ToolCallPart(id="c1", name="read_file", arguments={"path": "a.txt"})
RESULT = ToolResultPart(call_id="c1", name="read_file", content="hello")

# ------------------------------------------------------------------------------------------ Anthropic


def test_anthropic_roles_alternate_and_tool_results_lead_the_user_turn() -> None:
    messages = [
        Message.user("read a.txt", source="test"),
        assistant(ThinkingPart(text="let me look", signature="sig-1"), TextPart(text="Reading."), CALL),
        tool(RESULT),
        Message.user("and be quick"),
    ]
    turns = to_anthropic_messages(messages)
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[0] == {"role": "user", "content": [{"type": "text", "text": "read a.txt"}]}
    assert turns[1]["content"] == [
        {"type": "thinking", "thinking": "let me look", "signature": "sig-1"},
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.txt"}},
    ]
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "hello"},
        {"type": "text", "text": "and be quick"},
    ]


def test_anthropic_text_before_results_in_one_message_still_puts_results_first() -> None:
    turns = to_anthropic_messages([
        Message.user("go"), assistant(CALL),
        Message(role="user", parts=(TextPart(text="note"), RESULT)),
    ])
    assert [b["type"] for b in turns[2]["content"]] == ["tool_result", "text"]


def test_anthropic_drops_unsigned_thinking_and_empty_text_and_keeps_redacted_thinking() -> None:
    turns = to_anthropic_messages([
        Message.user("hi"),
        assistant(ThinkingPart(text="from another provider"), ThinkingPart(text="opaque", redacted=True),
                  TextPart(text=""), TextPart(text="answer")),
    ])
    assert turns[1]["content"] == [
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "answer"},
    ]


def test_anthropic_malformed_tool_call_is_sent_with_empty_input_and_error_result() -> None:
    bad = ToolCallPart(id="c9", name="write_file", raw_arguments='{"path": "a')
    turns = to_anthropic_messages([
        Message.user("write"), assistant(bad),
        tool(ToolResultPart(call_id="c9", content="arguments were not valid JSON", is_error=True)),
    ])
    assert turns[1]["content"] == [{"type": "tool_use", "id": "c9", "name": "write_file", "input": {}}]
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c9", "content": "arguments were not valid JSON",
         "is_error": True},
    ]


def test_anthropic_empty_tool_result_gets_placeholder_content() -> None:
    turns = to_anthropic_messages([Message.user("go"), assistant(CALL),
                                   tool(ToolResultPart(call_id="c1", content="", is_error=True))])
    assert turns[2]["content"][0]["content"] == "(no output)"


def test_anthropic_empty_assistant_turn_is_dropped_and_users_merge() -> None:
    turns = to_anthropic_messages([Message.user("one"), assistant(TextPart(text="")), Message.user("two")])
    assert turns == [{"role": "user", "content": [{"type": "text", "text": "one"},
                                                   {"type": "text", "text": "two"}]}]


def test_meta_is_never_sent() -> None:
    params = build_params(ModelRequest(model="m", system="", messages=[Message.user("hi", nudge=True)]))
    assert "nudge" not in json.dumps(params)


def _request(**kw) -> ModelRequest:
    return ModelRequest(model="claude-sonnet-4-5", system="be brief", messages=[Message.user("hi")], **kw)


@pytest.mark.parametrize(
    ("level", "budget", "max_tokens"),
    [("low", 2048, 8192), ("medium", 8192, 8192 + 8192), ("high", 24576, 24576 + 8192)],
)
def test_thinking_levels_map_to_budgets_with_room_to_answer(level: str, budget: int, max_tokens: int) -> None:
    params = build_params(_request(thinking=level, max_tokens=8192))
    assert params["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert params["max_tokens"] == max_tokens


def test_thinking_off_sends_no_thinking_param_and_keeps_max_tokens() -> None:
    params = build_params(_request(max_tokens=1000))
    assert "thinking" not in params and params["max_tokens"] == 1000


def test_params_carry_system_tools_and_cache_breakpoints() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    spec = ToolSpec("read_file", "Read a file.", schema)
    params = build_params(_request(tools=[spec]))
    assert params["model"] == "claude-sonnet-4-5"
    assert params["system"] == [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
    assert params["tools"] == [{"name": "read_file", "description": "Read a file.",
                                "input_schema": spec.input_schema}]
    assert params["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_no_system_and_no_tools_are_omitted() -> None:
    params = build_params(ModelRequest(model="m", system="", messages=[Message.user("hi")]))
    assert "system" not in params and "tools" not in params


# ------------------------------------------------------------------------------------------ pairing


def test_missing_tool_results_are_filled_with_an_interrupted_error() -> None:
    two_calls = assistant(CALL, ToolCallPart(id="c2", name="bash", arguments={"command": "ls"}))
    repaired = pair_tool_results([Message.user("go"), two_calls, tool(RESULT), Message.user("resume")])
    assert [m.role for m in repaired] == ["user", "assistant", "tool", "tool", "user"]
    filled = repaired[3].tool_results[0]
    assert (filled.call_id, filled.name, filled.is_error, filled.content) == ("c2", "bash", True,
                                                                           INTERRUPTED_RESULT)


def test_results_without_a_call_are_dropped_and_complete_histories_unchanged() -> None:
    complete = [Message.user("go"), assistant(CALL), tool(RESULT), assistant(TextPart(text="done"))]
    assert pair_tool_results(complete) == complete
    orphan = [Message.user("go"), tool(ToolResultPart(call_id="zz", content="?")), Message.user("again")]
    assert pair_tool_results(orphan) == [orphan[0], orphan[2]]


def test_trailing_unanswered_call_is_answered() -> None:
    repaired = pair_tool_results([Message.user("go"), assistant(CALL)])
    assert repaired[-1].tool_results[0].call_id == "c1"
    assert repaired[-1].meta == {"interrupted": True}  # yeetui's own mark; meta is never sent


def test_pairing_says_which_message_each_one_stands_for() -> None:
    orphan = tool(ToolResultPart(call_id="zz", content="?"), RESULT)
    paired = list(pair_tool_results_with_sources([assistant(CALL), orphan, assistant(CALL), Message.user("go")]))
    assert [source for _, source in paired] == [0, 1, 2, None, 3]
    assert paired[1][0].parts == (RESULT,)  # the orphan dropped, the message kept in its place


# ------------------------------------------------------------------------------------------ OpenAI


def test_openai_messages_have_system_tool_calls_and_tool_results() -> None:
    bad = ToolCallPart(id="c2", name="write_file", raw_arguments="{oops")
    messages = [
        Message.user("read a.txt"),
        assistant(ThinkingPart(text="hmm"), TextPart(text="Reading."), CALL, bad),
        tool(RESULT, ToolResultPart(call_id="c2", content="bad JSON", is_error=True)),
        assistant(TextPart(text="It says hello.")),
    ]
    out = to_openai_messages("be brief", messages)
    assert out == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "read a.txt"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}},
            {"id": "c2", "type": "function", "function": {"name": "write_file", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "hello"},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: bad JSON"},
        {"role": "assistant", "content": "It says hello."},
    ]


def test_openai_tool_call_only_assistant_has_null_content_and_no_system_when_empty() -> None:
    out = to_openai_messages("", [Message.user("go"), assistant(CALL), tool(RESULT)])
    assert out[0] == {"role": "user", "content": "go"}
    assert out[1]["content"] is None and out[1]["tool_calls"][0]["id"] == "c1"


# ------------------------------------------------------------------------------------------ arguments


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"path": "a"}', ({"path": "a"}, None)),
        ("", ({}, None)),
        ("  ", ({}, None)),
        ('{"path": "a"', ({}, '{"path": "a"')),
        ("[1, 2]", ({}, "[1, 2]")),
        ('"just a string"', ({}, '"just a string"')),
        ("nan-sense", ({}, "nan-sense")),
    ],
)
def test_parse_tool_arguments_never_raises(text: str, expected) -> None:
    assert parse_tool_arguments(text) == expected


# ------------------------------------------------------------------------------------------ registry


def test_credentials_from_standard_variables() -> None:
    env = {
        "ANTHROPIC_API_KEY": "ak", "ANTHROPIC_BASE_URL": "http://a",
        "OPENAI_API_KEY": "ok", "OPENAI_API_BASE": "http://o-base",
        "GEMINI_API_KEY": "gk", "OPENROUTER_API_KEY": "rk", "OLLAMA_API_BASE": "http://ollama:11434",
        "MISTRAL_API_KEY": "mk",
    }
    assert credentials_from_env("anthropic", env) == ProviderCredentials("ak", "http://a")
    assert credentials_from_env("openai", env) == ProviderCredentials("ok", "http://o-base")
    assert credentials_from_env("openai", {**env, "OPENAI_BASE_URL": "http://o-url"}).base_url == "http://o-url"
    assert credentials_from_env("gemini", env) == ProviderCredentials("gk", None)
    assert credentials_from_env("openrouter", env) == ProviderCredentials("rk", None)
    assert credentials_from_env("ollama", env) == ProviderCredentials(None, "http://ollama:11434")
    assert credentials_from_env("mistral", env) == ProviderCredentials("mk", None)
    assert credentials_from_env("anthropic", {"ANTHROPIC_API_KEY": ""}) == ProviderCredentials(None, None)


def test_credentials_repr_hides_the_key() -> None:
    assert "sekrit" not in repr(ProviderCredentials("sekrit-key-123", "http://x"))


def test_create_provider_picks_sdk_by_prefix_and_returns_the_bare_id() -> None:
    provider, model = create_provider("anthropic/claude-sonnet-4-5", ProviderCredentials("k"))
    assert isinstance(provider, AnthropicProvider) and provider.name == "anthropic"
    assert model == "claude-sonnet-4-5"
    creds = ProviderCredentials("or-secret-key", "http://router")
    provider, model = create_provider("openrouter/anthropic/claude-sonnet-4.5", creds)
    assert isinstance(provider, LiteLLMProvider) and provider.name == "openrouter"
    assert model == "anthropic/claude-sonnet-4.5"
    assert "or-secret-key" not in repr(provider)


def test_create_provider_rejects_a_bare_model_name() -> None:
    with pytest.raises(ConfigError, match="provider/model"):
        create_provider("gpt-5", ProviderCredentials())
