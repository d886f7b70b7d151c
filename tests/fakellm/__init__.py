"""A local fake LLM server speaking the Anthropic Messages API, OpenAI chat completions, the OpenAI Responses API
(Codex's) and the Gemini API (Gemini CLI's).

Scripted per test with `Reply` objects (see `script.py`); started by the `fake_llm` fixture.
"""

from tests.fakellm.script import Fault, Reply, ToolCall

__all__ = ["Fault", "Reply", "ToolCall"]
