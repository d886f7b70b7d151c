"""Held class — provider faults: a provider whose error bodies echo the API key it was sent (an HTTP error
status, an error event inside the stream) and a malformed SSE stream. The run retries what is retryable and
fails on what is not, with a message saying what happened, and the key appears nowhere: not in the error text,
the `--json` output, stderr, the data dir (database and WAL), nor a later request to the model.

The real `yeetui run` against the fake LLM server, for both wire formats (Anthropic's SDK and litellm's
OpenAI path). The keys are not shaped like any known format: only yeetui knowing its own keys can catch them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.fakellm import Fault, Reply, ToolCall
from tests.integration.helpers import run_yeetui

KEYS = {"anthropic": "plainkey-3e2d1c0b9a8f7e6d-ANTHRO", "openai": "plainkey-9f8e7d6c5b4a3f2e-OPENAI"}
MODELS = {"anthropic": "anthropic/claude-sonnet-4-6", "openai": "openai/gpt-4o"}


def _stored(data: Path) -> bytes:
    return b"".join(p.read_bytes() for p in data.rglob("*") if p.is_file())


def _run(fake, tmp_path: Path, api: str, *replies: Reply, **env: Any):  # Any: spread beside run_yeetui's timeout
    project = tmp_path / "project"
    project.mkdir()
    fake.script(*replies)
    return run_yeetui("run", "--json", "--model", MODELS[api], "GO on", cwd=project,
                      ANTHROPIC_API_KEY=KEYS["anthropic"], OPENAI_API_KEY=KEYS["openai"], **env)


def _nowhere(done, fake, key: str) -> None:
    for where, text in (("stdout (--json)", done.stdout), ("stderr", done.stderr)):
        assert key not in text, f"the key reached {where}"
    assert key.encode() not in _stored(Path(os.environ["YEETUI_DATA_DIR"])), "the key reached the data dir"
    for request in fake.requests:
        assert key not in request.text, f"the key reached the model in request {request.number}"


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_echoed_keys_in_retried_faults_and_a_final_auth_error_go_nowhere(fake_env, tmp_path: Path, api: str) -> None:
    key = KEYS[api]
    done = _run(fake_env, tmp_path, api,
                Reply(text="partial answer", fault=Fault.overloaded_in_stream(after_chars=8,
                                                                              message=f"overloaded; key {key}")),
                Reply(text="partial answer", fault=Fault(kind="malformed_sse", after_chars=8)),
                Reply(tool_calls=[ToolCall("list_dir", {"path": "."})]),
                Reply(fault=Fault.http(401, message=f"Incorrect API key provided: {key}. Check it.")))
    assert [r.status for r in fake_env.requests] == [200, 200, 200, 401]  # two retried faults, then the auth error
    assert done.returncode == 1, done.stderr
    result = done.result
    assert result["status"] == "failed"
    error = result["error"]
    assert "401" in error or "auth" in error.lower() or "api key" in error.lower(), error
    assert "[REDACTED]" in error or "Incorrect API key provided" not in error
    _nowhere(done, fake_env, key)


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_an_echoed_key_in_errors_retried_to_exhaustion_goes_nowhere(fake_env, tmp_path: Path, api: str) -> None:
    key = KEYS[api]
    done = _run(fake_env, tmp_path, api,
                *[Reply(fault=Fault.http(500, message=f"upstream refused key={key} sk=[{key}]")) for _ in range(2)],
                YEETUI_RETRY__MAX_ATTEMPTS="2")
    assert len(fake_env.requests) == 2
    assert done.returncode == 1, done.stderr
    assert done.result["status"] == "failed"
    assert "500" in done.result["error"] or "server" in done.result["error"].lower(), done.result["error"]
    _nowhere(done, fake_env, key)
