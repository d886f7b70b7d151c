"""Request validation: reject what the real Anthropic and OpenAI APIs reject, with messages shaped like theirs.

The fake server checks every request body before it picks a scripted reply, so a test that passes proves
the real provider would have accepted the request too (e.g. a history rebuilt after a crash). Only rules the
real APIs are known to enforce belong here (`validate_anthropic`, `validate_openai`); like the APIs, a check
reports the first violation only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.fakellm import validate_anthropic, validate_openai


@dataclass(frozen=True)
class Violation:
    """Why the real API would answer 400: its message and (OpenAI only) the offending parameter."""

    message: str
    param: str | None = None


def check(api: str, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> Violation | None:
    """The first rule `body` breaks for `api` ("anthropic" or "openai"), or None if the API would accept it.

    `headers` (lower-case names) matter for Anthropic: an `interleaved-thinking` beta lifts the
    budget_tokens < max_tokens rule.
    """
    if api == "anthropic":
        message = validate_anthropic.first_problem(body, headers or {})
        return Violation(message) if message is not None else None
    if api == "openai":
        problem = validate_openai.first_problem(body)
        return Violation(*problem) if problem is not None else None
    return None
