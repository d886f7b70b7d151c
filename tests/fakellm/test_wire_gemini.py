"""The fake LLM's Gemini API (Gemini CLI's wire): `generateContent`, `streamGenerateContent` as SSE and as a JSON
array, `countTokens`, errors; read as `@google/genai` reads them (one `data:` line per chunk, parts joined)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.fakellm import Fault, Reply, ToolCall
from tests.fakellm.wire_gemini import signature_for

MODEL = "gemini-fake-pro"
BODY = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}


def url(fake_llm, method: str, sse: bool = False) -> str:
    return f"{fake_llm.url}/v1beta/models/{MODEL}:{method}" + ("?alt=sse" if sse else "")


def sse_chunks(text: str) -> list[dict[str, Any]]:
    return [json.loads(line.removeprefix("data: ")) for line in text.split("\n") if line.startswith("data: ")]


def parts(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]


def test_a_stream_of_thoughts_text_and_a_function_call(fake_llm):
    fake_llm.script(Reply(thinking="Pondering.", text="Reading it.", tool_calls=[
        ToolCall("read_file", {"path": "a.txt"})], usage={"input_tokens": 90, "output_tokens": 7,
                                                           "cache_read_tokens": 10}))
    response = httpx.post(url(fake_llm, "streamGenerateContent", sse=True), json=BODY,
                          headers={"x-goog-api-key": "test-key"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    chunks = sse_chunks(response.text)
    said = parts(chunks)
    assert "".join(p["text"] for p in said if p.get("thought")) == "Pondering."
    assert "".join(p.get("text", "") for p in said if not p.get("thought")) == "Reading it."
    assert [p["functionCall"] for p in said if "functionCall" in p] == [{"name": "read_file",
                                                                         "args": {"path": "a.txt"}}]
    assert next(p for p in said if not p.get("thought"))["thoughtSignature"] == signature_for("Pondering.")
    *early, last = chunks
    assert all("finishReason" not in c["candidates"][0] for c in early)
    assert last["candidates"][0]["finishReason"] == "STOP" and last["modelVersion"] == MODEL
    assert last["usageMetadata"] == {"promptTokenCount": 100, "candidatesTokenCount": 7, "totalTokenCount": 107,
                                     "cachedContentTokenCount": 10,
                                     "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 100}]}
    [request] = fake_llm.requests
    assert request.api == "gemini" and request.to_json()["headers"]["x-goog-api-key"] == "<redacted>"


def test_generate_content_whole_and_a_stream_without_sse_as_one_array(fake_llm):
    fake_llm.script(Reply(text='{"complexity_score": 10}'), Reply(text="long", stop="max_tokens"))
    whole = httpx.post(url(fake_llm, "generateContent"), json=BODY).json()
    assert whole["candidates"][0]["content"]["parts"] == [{"text": '{"complexity_score": 10}'}]
    array = httpx.post(url(fake_llm, "streamGenerateContent"), json=BODY).json()
    assert isinstance(array, list) and array[0]["candidates"][0]["finishReason"] == "MAX_TOKENS"


def test_count_tokens_uses_no_reply_and_errors_are_googles(fake_llm):
    fake_llm.script(Reply.error(429), Reply(text="abcdefgh", fault=Fault.overloaded_in_stream(4)))
    assert httpx.post(url(fake_llm, "countTokens"), json=BODY).json()["totalTokens"] > 0
    refused = httpx.post(url(fake_llm, "generateContent"), json=BODY)
    assert refused.status_code == 429 and refused.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    broken = sse_chunks(httpx.post(url(fake_llm, "streamGenerateContent", sse=True), json=BODY).text)
    assert "".join(p["text"] for p in parts(broken[:-1])) == "abcd"
    assert broken[-1]["error"]["code"] == 503
    assert [r.reply_index for r in fake_llm.requests] == [None, 0, 1]
