"""`models:` in config.yaml holds tiers and prices: tiers map to model names as before, a model's name maps to
its price (US dollars per million tokens), which pricing then uses; a bad entry is named with its file and line;
a project's config may not price a model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from yeetui.errors import ConfigError
from yeetui.messages import Usage
from yeetui.providers.pricing import Price, context_with, cost_usd, price_for
from yeetui.settings.config import load_settings

MILLION = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000)


def _user_config(tmp_path: Path, text: str) -> dict[str, str]:
    (tmp_path / "user").mkdir(exist_ok=True)
    (tmp_path / "user" / "config.yaml").write_text(text)
    return {"YEETUI_CONFIG_DIR": str(tmp_path / "user")}


def test_models_holds_tiers_and_prices(tmp_path: Path) -> None:
    env = _user_config(tmp_path, "models:\n  strong: openai/o3\n  ollama/qwen3: {input_per_mtok: 0.5, "
                                 "output_per_mtok: 1.5, cache_read_per_mtok: 0.05}\n")
    settings = load_settings(project_dir=tmp_path, env=env).settings
    assert settings.models == {"strong": "openai/o3"}  # the tiers, as before
    assert settings.prices == {"ollama/qwen3": Price(0.5, 1.5, 0.05, 0.5)}  # an unset cache write bills as input
    assert cost_usd("ollama/qwen3", MILLION, settings.prices) == pytest.approx(2.05)
    assert cost_usd("ollama/qwen3", MILLION) is None  # not configured here


@pytest.mark.parametrize("entry, says", [
    ("ollama/qwen3: {input_per_mtok: -1, output_per_mtok: 1}", "config.yaml:3: setting 'models.ollama/qwen3."
                                                                "input_per_mtok': Input should be greater than"),
    ("ollama/qwen3: openai/gpt-5", "config.yaml:3: setting 'models.ollama/qwen3': Value error, a model's entry is "
                                   "its price"),
    ("speedy: {input_per_mtok: 1, output_per_mtok: 1}", "config.yaml:3: setting 'models.speedy': Value error, "
                                                        "'speedy' is neither a tier"),
    ("ollama/qwen3: {input_per_mtok: 1}", "setting 'models.ollama/qwen3.output_per_mtok': Field required"),
])
def test_a_bad_entry_is_named_with_its_place(tmp_path: Path, entry: str, says: str) -> None:
    env = _user_config(tmp_path, f"model: openai/gpt-5\nmodels:\n  {entry}\n")
    with pytest.raises(ConfigError) as raised:
        load_settings(project_dir=tmp_path, env=env)
    assert says in str(raised.value)


def test_a_projects_config_may_not_price_a_model(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".yeetui").mkdir(parents=True)
    (project / ".yeetui" / "config.yaml").write_text(
        "models:\n  fast: openai/gpt-5-mini\n  anthropic/claude-opus-4-5: {input_per_mtok: 0, output_per_mtok: 0}\n")
    loaded = load_settings(project_dir=project, env={}, trusted=True)
    assert loaded.settings.models == {"fast": "openai/gpt-5-mini"} and loaded.settings.prices == {}
    assert any("ignored models.anthropic/claude-opus-4-5" in w for w in loaded.warnings), loaded.warnings


async def test_a_runs_task_prices_with_its_configured_prices() -> None:
    """What the launcher does for each run: its task's context knows the config's prices; nothing else does."""
    configured = {"Ollama/Qwen3": Price(1.0, 2.0, 0.1, 1.0)}

    async def priced() -> Price | None:
        return price_for("ollama/qwen3")

    task = asyncio.get_running_loop().create_task(priced(), context=context_with(configured))
    assert await task == Price(1.0, 2.0, 0.1, 1.0)
    assert price_for("ollama/qwen3") is None
    assert price_for("anthropic/claude-sonnet-4-6", configured) is not None  # the table still prices the rest
