"""Which model an external agent runs, read from what it sends: plain model ids only, hostile values dropped."""

from __future__ import annotations

import pytest

from yeetui.external.model_names import NAME_CAP, answering_model, chosen_model, measured_model, plain_model


def _select(value: object, category: object = "model") -> dict:
    return {"id": "model", "name": "Model", "type": "select", "category": category, "currentValue": value,
            "options": []}


def test_the_chosen_model_comes_from_the_model_option_or_the_older_models_state() -> None:
    assert chosen_model({"configOptions": [_select("auto", "mode"), _select("openai/gpt-5")]}) == "openai/gpt-5"
    assert chosen_model({"models": {"currentModelId": "anthropic/claude-sonnet-4-5", "availableModels": []}}) \
        == "anthropic/claude-sonnet-4-5"
    # Claude Code's adapter says `default`: its own choice, which names no model
    assert chosen_model({"configOptions": [_select("default")]}) == ""
    assert chosen_model({"configOptions": "not a list", "models": ["nor a dict"]}) == ""


def test_a_context_hint_is_part_of_the_id() -> None:
    assert plain_model("claude-opus-4-7[1m]") == "claude-opus-4-7[1m]"


def test_what_ran_comes_from_usage_updates_and_the_turns_answer() -> None:
    assert measured_model({"sessionUpdate": "usage_update", "_meta": {"_claude/model": "claude-opus-5-5"}}) \
        == "claude-opus-5-5"
    assert measured_model({"_meta": "nothing"}) == ""
    answer = {"_meta": {"quota": {"model_usage": [
        {"model": "claude-haiku-5-5", "token_count": {"totalTokens": 40}},
        {"model": "claude-opus-5-5", "token_count": {"totalTokens": 11605}},
        {"model": "\x1b[2J", "token_count": {"totalTokens": 10**9}},
        {"model": "claude-fable-5-1", "token_count": {"totalTokens": True}}]}}}
    assert answering_model(answer) == "claude-opus-5-5"
    assert answering_model({"_meta": {"quota": {"model_usage": "many"}}}) == ""


@pytest.mark.parametrize("hostile", [
    "\x1b]52;c;ZXZpbA==\x07gpt", "[bold red]opus[/]", "opus[bold]x", "two words", "", "x" * (NAME_CAP + 1), 42, None,
    "-rf", "model\nnext line", "ok‮cod"])
def test_a_value_that_is_not_a_plain_model_id_is_not_taken(hostile: object) -> None:
    assert plain_model(hostile) == ""
    assert chosen_model({"configOptions": [_select(hostile)]}) == ""
