"""The SDKs are loaded lazily: importing the providers loads neither, and an Anthropic call never loads
litellm. Checked in fresh interpreters, since this test process has imported everything already."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.fakellm import Reply
from tests.fakellm.fixtures import ANTHROPIC_TEST_KEY, OPENAI_TEST_KEY

REPO = Path(__file__).resolve().parents[3]


def run_python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True,
                          text=True, timeout=90, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_importing_and_creating_providers_loads_no_sdk() -> None:
    proc = run_python("""
        import sys
        import yeetui.providers.factory, yeetui.providers.anthropic, yeetui.providers.litellm
        import yeetui.providers.retry, yeetui.providers.pricing, yeetui.redact
        from yeetui.providers.base import ProviderCredentials
        from yeetui.providers.factory import create_provider
        create_provider("anthropic/claude-sonnet-4-5", ProviderCredentials("k"))
        create_provider("openai/gpt-5", ProviderCredentials("k"))
        print(sorted(m for m in ("anthropic", "litellm", "openai", "httpx2") if m in sys.modules))
    """)
    assert proc.stdout.strip() == "[]"


def test_an_anthropic_stream_does_not_load_litellm(fake_llm) -> None:
    fake_llm.script(Reply(text="hello from anthropic"))
    proc = run_python(f"""
        import asyncio, sys
        from yeetui.messages import Message
        from yeetui.providers.base import ModelRequest, ProviderCredentials
        from yeetui.providers.factory import create_provider

        async def main():
            creds = ProviderCredentials({ANTHROPIC_TEST_KEY!r}, {fake_llm.anthropic_base_url!r})
            provider, model = create_provider("anthropic/claude-fake-1", creds)
            req = ModelRequest(model=model, system="", messages=[Message.user("hi")])
            items = [item async for item in provider.stream(req)]
            await provider.aclose()
            return items[-1].message.text

        print(asyncio.run(main()))
        print("anthropic" in sys.modules, "litellm" in sys.modules)
    """)
    assert proc.stdout.splitlines() == ["hello from anthropic", "True False"]


def test_litellm_names_are_read_without_it_and_once_loaded_it_uses_its_local_price_map_and_prints_nothing(
        fake_llm) -> None:
    """Two things about litellm in one fresh interpreter (each import of it costs seconds of CPU):
    - `profiles validate` learns litellm's provider names from its source without loading it: the same names its
      `provider_list` gives once imported.
    - Without LITELLM_LOCAL_MODEL_COST_MAP litellm fetches prices from GitHub on import (and logs warnings about it
      to the terminal when that fails). yeetui's import sets it: a success and a failure print nothing."""
    fake_llm.script(Reply(text="hello from litellm"), Reply.error(401))
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    proc = run_python(f"""
        import asyncio, json, os, sys
        from yeetui.messages import Message
        from yeetui.providers.base import ModelRequest, ProviderCredentials
        from yeetui.providers.factory import create_provider
        from yeetui.providers.litellm import known_providers

        read = known_providers()
        print("litellm" in sys.modules)

        async def main():
            creds = ProviderCredentials({OPENAI_TEST_KEY!r}, {fake_llm.openai_base_url!r})
            provider, model = create_provider("openai/gpt-5", creds)
            req = ModelRequest(model=model, system="", messages=[Message.user("hi")])
            text = [item async for item in provider.stream(req)][-1].message.text
            try:
                [item async for item in provider.stream(req)]
            except Exception as exc:
                return f"{{text}} / {{type(exc).__name__}}"

        print(asyncio.run(main()))
        print(os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"))
        import litellm
        print(json.dumps(sorted(read ^ {{str(getattr(p, "value", p)) for p in litellm.provider_list}})))
        print(len(read) > 50 and "openai" in read)
    """, env=env)
    assert proc.stdout.splitlines() == ["False", "hello from litellm / ProviderError", "True", "[]", "True"]
    assert proc.stderr == ""


def test_without_the_enum_in_its_source_the_names_come_from_the_imported_package(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A litellm release that moved `LlmProviders` elsewhere: the names still come, from the import."""
    import yeetui.providers.litellm as adapter

    monkeypatch.setattr(adapter, "providers_in_source", lambda: set())
    names = adapter.known_providers()
    assert {"openai", "gemini", "openrouter", "ollama"} <= names
