"""Pytest fixtures for the fake LLM server (loaded by tests/conftest.py as a plugin)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakellm.server import FakeLLM

KEY_MARKER = "MARKERKEY"
"""Appears in both test keys: grep any output for it to prove a key leaked."""
ANTHROPIC_TEST_KEY = f"sk-ant-test-{KEY_MARKER}-0123456789"
OPENAI_TEST_KEY = f"sk-test-{KEY_MARKER}-openai-0123456789"


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A started fake LLM server on 127.0.0.1, stopped after the test."""
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def fake_env(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    """Point the Anthropic and OpenAI clients (and litellm) at the fake server with marker test keys."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_BASE", fake_llm.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_TEST_KEY)
    return fake_llm
