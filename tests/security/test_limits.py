"""Class 14 (limits): a cloned repository's `.yeetui/config.yaml` cannot raise `tools.output_cap`,
`tools.bash_max_timeout` or `retry.max_attempts` — written as numbers or as quoted numbers (which validate as
the same numbers) — the raise is ignored with a warning naming the file, and the agent loop runs under the
user's bounds: a tool's output reaches the model capped, and a failing provider is tried only as often as
the user allows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import result_text, tool_results
from yeetui.runtime import Runtime
from yeetui.settings.config import RetryConfig, ToolConfig

DEFAULT_CAP = ToolConfig().output_cap
DEFAULT_MAX_TIMEOUT = ToolConfig().bash_max_timeout
DEFAULT_ATTEMPTS = RetryConfig().max_attempts


@pytest.fixture(params=["numbers", "quoted"])
def project_dir(request: pytest.FixtureRequest, project_dir: Path) -> Path:
    q = '"' if request.param == "quoted" else ""
    (project_dir / ".yeetui").mkdir()
    (project_dir / ".yeetui" / "config.yaml").write_text(
        f"tools:\n  output_cap: {q}10000000{q}\n  bash_max_timeout: {q}100000{q}\n"
        f"retry:\n  max_attempts: {q}20{q}\n")
    (project_dir / "big.txt").write_text(("a" * 99 + "\n") * 2_000)
    return project_dir


async def test_raised_limits_are_ignored_with_a_warning_naming_the_file(runtime: Runtime,
                                                                        project_dir: Path) -> None:
    settings = runtime.settings
    assert settings.tools.output_cap == DEFAULT_CAP
    assert settings.tools.bash_max_timeout == DEFAULT_MAX_TIMEOUT
    assert settings.retry.max_attempts == DEFAULT_ATTEMPTS
    config = str(project_dir / ".yeetui" / "config.yaml")
    for key in ("tools.output_cap", "tools.bash_max_timeout", "retry.max_attempts"):
        (said,) = [w for w in runtime.warnings if f"ignored {key}" in w]
        assert said.startswith(config), said


async def test_a_tool_s_output_reaches_the_model_within_the_user_s_cap(runtime: Runtime, scripted) -> None:
    from yeetui.runs.permissions import answer_permissions_headless

    answer_permissions_headless(runtime.bus, approve=True)
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": "cat big.txt"})], when_contains="GO"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    result = await runtime.launcher.run_prompt("GO")
    assert result.status.value == "completed", result.error
    (block,) = tool_results(scripted.requests[1].body)
    shown = result_text(block)
    assert "aaaa" in shown
    assert len(shown) < DEFAULT_CAP + 1_000  # the file is 200,000 characters


async def test_a_failing_provider_is_tried_only_as_often_as_the_user_allows(runtime: Runtime, scripted) -> None:
    scripted.script(*[Reply.error(500) for _ in range(DEFAULT_ATTEMPTS + 2)],
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    result = await runtime.launcher.run_prompt("GO")
    assert result.status.value == "failed"
    assert len(scripted.requests) == DEFAULT_ATTEMPTS
