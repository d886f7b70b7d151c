"""Providers keep slow set-up off the event loop: the Anthropic client (TLS certificates, a cold SDK
import) is built once in a worker thread and shared by concurrent first streams; litellm is imported in
a worker thread."""

from __future__ import annotations

import asyncio
import threading

from tests.fakellm import Reply
from tests.fakellm.fixtures import ANTHROPIC_TEST_KEY
from yeetui.messages import Message
from yeetui.providers import litellm as litellm_provider
from yeetui.providers.anthropic import AnthropicProvider
from yeetui.providers.base import ModelRequest, StreamDone, TextChunk


def _request(text: str) -> ModelRequest:
    return ModelRequest(model="claude-fake-1", system="You are terse.", messages=[Message.user(text)])


async def test_concurrent_first_streams_share_one_client_built_off_the_loop(fake_llm, monkeypatch) -> None:
    fake_llm.script(*(Reply(text=f"answer {i}") for i in range(4)))
    provider = AnthropicProvider(ANTHROPIC_TEST_KEY, fake_llm.anthropic_base_url)
    built_on: list[int] = []
    build = provider._new_client

    def recording_build():
        built_on.append(threading.get_ident())
        return build()

    monkeypatch.setattr(provider, "_new_client", recording_build)

    async def run(i: int) -> str:
        items = [item async for item in provider.stream(_request(f"question {i}"))]
        assert isinstance(items[-1], StreamDone)
        return "".join(item.text for item in items if isinstance(item, TextChunk))

    try:
        answers = await asyncio.gather(*(run(i) for i in range(3)))
        client = provider._client
        assert sorted(answers) == ["answer 0", "answer 1", "answer 2"]
        assert len(built_on) == 1 and built_on[0] != threading.get_ident()
        assert await run(3) == "answer 3"
        assert provider._client is client and len(built_on) == 1  # a later stream reuses it
    finally:
        await provider.aclose()


async def test_litellm_is_imported_in_a_worker_thread_once(monkeypatch) -> None:
    imported_on: list[int] = []
    real = litellm_provider._import_litellm

    def recording_import():
        imported_on.append(threading.get_ident())
        return real()

    monkeypatch.setattr(litellm_provider, "_ready", None)
    monkeypatch.setattr(litellm_provider, "_import_litellm", recording_import)
    first = await litellm_provider._litellm()
    second = await litellm_provider._litellm()
    assert first is second and first.__name__ == "litellm"
    assert len(imported_on) == 1 and imported_on[0] != threading.get_ident()
    assert first.suppress_debug_info is True
