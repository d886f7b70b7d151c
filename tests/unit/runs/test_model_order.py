"""Which model a run uses: `--model` > the spawn's (or session's) choice > the workflow's > the profile's >
the config default; a profile with `model_locked` keeps its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.events import RunStatus
from yeetui.runtime import FrontEnd, Runtime


@pytest.fixture
def project_dir(project_dir: Path) -> Path:
    agents = project_dir / ".yeetui" / "agents"
    agents.mkdir(parents=True)
    (agents / "pinned.md").write_text("---\nname: pinned\ncapabilities: [subtask]\nmodel: anthropic/pinned-1\n"
                                      "model_locked: true\n---\nYou are pinned.\n")
    (agents / "flowing.md").write_text("---\nname: flowing\ncapabilities: [subtask]\nmodel: anthropic/profile-1\n"
                                       "workflow: modelled\n---\nYou follow a workflow.\n")
    workflows = project_dir / ".yeetui" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "modelled.yaml").write_text("name: modelled\nmodel: anthropic/workflow-1\nsteps:\n"
                                             "  - name: work\n    exit: {tool: complete}\n")
    return project_dir


def test_the_order_of_model_choices(runtime: Runtime) -> None:
    launcher, profiles = runtime.launcher, runtime.profiles
    assert not runtime.warnings, runtime.warnings
    flowing, pinned, oracle = profiles.get("flowing"), profiles.get("pinned"), profiles.get("oracle")
    assert launcher.models.resolve(flowing) == "anthropic/workflow-1"            # workflow > profile
    assert launcher.models.resolve(flowing, "openai/spawned") == "openai/spawned"  # spawn > workflow
    assert launcher.models.resolve(oracle) == "anthropic/claude-opus-4-5"  # tier `strong` on anthropic
    assert launcher.models.resolve(pinned, "openai/spawned") == "anthropic/pinned-1"  # locked profile


@pytest.mark.parametrize("front_end", [FrontEnd(model="openai/cli-flag")])
def test_the_cli_model_wins_over_all_but_a_locked_profile(runtime: Runtime) -> None:
    launcher, profiles = runtime.launcher, runtime.profiles
    flowing, pinned = profiles.get("flowing"), profiles.get("pinned")
    assert launcher.models.resolve(flowing, "openai/spawned") == "openai/cli-flag"  # --model > spawn
    assert launcher.models.resolve(pinned, "openai/spawned") == "anthropic/pinned-1"  # locked profile


@pytest.mark.parametrize("front_end", [FrontEnd(model="anthropic/cli-choice")])
async def test_the_cli_model_reaches_the_subagents(runtime: Runtime, scripted) -> None:
    scripted.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "done"})], when_contains="[Subagent: oracle#"),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "CHILD-Q",
                                                      "model": "anthropic/spawn-choice"})],
              when_contains="MODEL-PARENT"),
        Reply(tool_calls=[ToolCall("complete", {"output": "answer"})], when_contains="CHILD-Q"),
    )
    result = await runtime.launcher.run_prompt("MODEL-PARENT")
    assert result.status == RunStatus.COMPLETED, result.error
    assert {r.model for r in await runtime.store.list_runs()} == {"anthropic/cli-choice"}



@pytest.fixture
def openai_only(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """The launcher as an OpenAI-only user has it: default model openai/gpt-5, no Anthropic key."""
    from yeetui.providers.litellm import LiteLLMProvider

    def factory(model: str):
        provider, _, bare = model.partition("/")
        return LiteLLMProvider(provider, "sk-test-openai" if provider == "openai" else None, None), bare

    launcher = runtime.launcher
    monkeypatch.setattr(launcher, "_create_provider", factory)
    launcher._providers.clear()
    monkeypatch.setattr(launcher.settings, "model", "openai/gpt-5")
    return runtime


def test_tiers_resolve_for_the_user_s_provider(openai_only: Runtime) -> None:
    launcher, profiles = openai_only.launcher, openai_only.profiles
    assert launcher.models.resolve(profiles.get("oracle")) == "openai/gpt-5.1"   # strong
    assert launcher.models.resolve(profiles.get("pair")) == "openai/gpt-5-mini"  # fast
    launcher.settings.models["strong"] = "openai/o3"                            # config overrides a tier
    assert launcher.models.resolve(profiles.get("oracle")) == "openai/o3"


def test_a_profile_pinned_to_a_provider_without_a_key_runs_on_the_default(openai_only: Runtime) -> None:
    notices: list[str] = []
    openai_only.bus.add_listener(lambda e: notices.append(e.text) if e.kind == "notice" else None)
    pinned = openai_only.profiles.get("flowing").model_copy(update={"model": "anthropic/claude-opus-4-5",
                                                                    "workflow": None})
    assert openai_only.launcher.models.resolve(pinned) == "openai/gpt-5"
    assert openai_only.launcher.models.resolve(pinned) == "openai/gpt-5"
    where = pinned.sources[-1]  # the file that asked for it is named
    assert notices == [f"Profile 'flowing' ({where}) asks for anthropic/claude-opus-4-5, but there is no key for "
                       "anthropic; it runs on openai/gpt-5 instead."]  # said once
