"""What an external agent says it spent, kept within sane bounds.

Token counts and costs come from the agent's ACP updates and from its own records on disk: hostile input like
the rest. Taken as said, `outputTokens: 10**30` or a cost of `Infinity` went into the run's record and into every
sum above it (the tree's usage, budgets, the fleet). Here a count is a non-negative whole number of at most
`MAX_TOKENS` per report, a cost a finite non-negative number of dollars of at most `MAX_COST_USD`; what is not a
number (text, `true`, NaN) counts as nothing said.
"""

from __future__ import annotations

import math

from yeetui.messages import Usage

MAX_TOKENS = 10**9
"""Tokens of one kind (input, output, cache reads, cache writes) one report may say: a thousand full
million-token contexts, far beyond any real run, far below what breaks a sum."""
MAX_COST_USD = 10_000.0
"""Dollars one report may say (more is taken as this: a budget above it still stops the run)."""


def tokens(value: object) -> int | None:
    """A token count as reported: None when it is not a whole number (a float only when integral, as a
    JavaScript agent writes 1e21); else clamped to 0…MAX_TOKENS."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(min(max(value, 0), MAX_TOKENS))


def bounded(usage: Usage) -> Usage:
    """`usage` with each count clamped to 0…MAX_TOKENS (a sum over many reports of one agent)."""
    return Usage(**{name: min(max(count, 0), MAX_TOKENS) for name, count in usage.model_dump().items()})


def dollars(value: object) -> float | None:
    """A cost in dollars as reported: None when it is not a finite non-negative number; else at most
    MAX_COST_USD."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return float(min(value, MAX_COST_USD))
