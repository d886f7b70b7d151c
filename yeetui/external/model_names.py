"""Which model an external agent runs, from what it says over ACP.

ACP has no one field for it, so each agent says it its own way, and yeetui reads what it can:

- the session's options (`configOptions`, the select whose category is `model`) and the older `models` state
  (`currentModelId`), in `session/new`'s answer and in `config_option_update`s: the model chosen. Claude Code's
  adapter says `default` there (its own choice, named nowhere), which names no model and is skipped;
- Claude Code's `usage_update`s carry the model of the request they measure (`_meta["_claude/model"]`), and the
  turn's answer the tokens per model it used (`_meta.quota.model_usage`; Codex's and Gemini CLI's too): the model
  that really ran, which replaces the one chosen. Gemini CLI lists its model router there as `auto`, which names
  no model and is skipped.

What an agent sends is hostile input: a name is taken only when it is a plain model id (letters, digits and
`.-_/:@`, at most `NAME_CAP` characters) — never text for the terminal or the ledger to interpret.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

NAME_CAP = 120
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@-]*(\[[0-9]+[mk]\])?")
"""A model id, with Claude Code's context hint (`claude-opus-4-7[1m]`) the one bracket allowed: never markup."""
_NO_MODEL = frozenset({"default", "auto"})
"""Values of a model option that say the agent chooses, not which model it chose."""


def plain_model(value: object) -> str:
    """`value` when it is a plain model id, else ''."""
    if not isinstance(value, str) or len(value) > NAME_CAP or not _MODEL_ID.fullmatch(value):
        return ""
    return "" if value.lower() in _NO_MODEL else value


def chosen_model(state: Mapping[str, Any]) -> str:
    """The model a session's options say is chosen (`session/new`'s answer, a `config_option_update`), or ''."""
    options = state.get("configOptions")
    for option in options if isinstance(options, list) else []:
        if isinstance(option, dict) and option.get("type") == "select" and option.get("category") == "model":
            if name := plain_model(option.get("currentValue")):
                return name
    models = state.get("models")
    return plain_model(models.get("currentModelId")) if isinstance(models, dict) else ""


def measured_model(update: Mapping[str, Any]) -> str:
    """The model a `usage_update` measured, where the agent says it (Claude Code's adapter), or ''."""
    meta = update.get("_meta")
    return plain_model(meta.get("_claude/model")) if isinstance(meta, dict) else ""


def answering_model(answer: Mapping[str, Any]) -> str:
    """The model that did most of a turn (the most tokens in its answer's `_meta.quota.model_usage`), or ''."""
    meta = answer.get("_meta")
    quota = meta.get("quota") if isinstance(meta, dict) else None
    used = quota.get("model_usage") if isinstance(quota, dict) else None
    best, most = "", -1
    for entry in used if isinstance(used, list) else []:
        if not isinstance(entry, dict) or not (name := plain_model(entry.get("model"))):
            continue
        count = entry.get("token_count")
        tokens = _total(count) if isinstance(count, dict) else 0
        if tokens > most:
            best, most = name, tokens
    return best


def _total(count: Mapping[str, Any]) -> int:
    """A token count's total: `totalTokens` (Codex's, Claude Code's), else input plus output (Gemini CLI's
    `input_tokens`, `output_tokens`); 0 for what is not a count."""
    def number(key: str) -> int:
        value = count.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    return number("totalTokens") or number("input_tokens") + number("output_tokens")
