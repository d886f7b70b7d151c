"""Budgets: what a run and everything it spawns may spend together — tokens, dollars, model turns, minutes.

A budget belongs to one run, its owner, and covers the owner's whole tree: the owner's own requests and those
of every subagent below it, in this process or another (pane children, detached workers), read from the store
where every run records its spend per request. Budgets nest: a child spawned with a budget of its own is held
to both, its own and every owner's above it. When a tree reaches one of its owner's limits, every run in it
is halted and ends `budget_exhausted` with what it had produced, and the owner's result says which limit was
hit, what was spent, and what each run produced (`yeetui.runs.budget_keeper` does the halting).

Dollars are counted where the model's price is known (yeetui's table, or the user's config: `models:
{provider/model: {input_per_mtok: …, output_per_mtok: …}}`). A dollar limit over a run whose model has no
known price could not hold — its spend would not be counted — so such a run is refused before it starts,
saying how to give the price or to limit tokens instead (`uncountable`). Tokens of a model without a known
price under a tree without a dollar limit are counted as tokens, and the spend says so (`unpriced_tokens`;
its `cost` is then unknown, None).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from yeetui.errors import YeetuiError
from yeetui.text import dollars, tokens_text

HALT_REASON = "budget exhausted"
"""How a halted run's cancellation starts (`task.cancel(f"{HALT_REASON}: …")`): it ends `budget_exhausted`."""
WARN_AT = 0.8
"""The share of a limit at which the owner's inbox says the tree is close to it."""


@dataclass(frozen=True)
class Budget:
    """Limits for a run's tree; None: no limit of that kind."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    """Input plus output tokens (cache reads and writes included) of every request in the tree."""
    max_turns: int | None = None
    """Model requests in the tree."""
    max_minutes: float | None = None
    """Wall-clock minutes since the owner started."""

    @property
    def is_set(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    def tighter(self, other: Budget | None) -> Budget:
        """Each limit the lower of the two (a limit only one sets is kept)."""
        if other is None:
            return self

        def low(a: Any, b: Any) -> Any:
            return b if a is None else a if b is None else min(a, b)

        return Budget(**{f.name: low(getattr(self, f.name), getattr(other, f.name)) for f in fields(self)})

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: object) -> Budget | None:
        """A stored or given budget; None when nothing usable is in it. Raises ValueError naming the field when a
        limit is not a positive number."""
        if data is None:
            return None
        if not isinstance(data, Mapping):
            raise ValueError(f"a budget is a mapping of limits ({', '.join(LIMIT_NAMES)}), not {data!r}")
        unknown = sorted(set(data) - set(LIMIT_NAMES))
        if unknown:
            raise ValueError(f"unknown budget limit {unknown[0]!r} (known: {', '.join(LIMIT_NAMES)})")
        values: dict[str, Any] = {}
        for name, value in data.items():
            if value is None:
                continue
            whole = name in ("max_tokens", "max_turns")
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                    or value <= 0 or (whole and value != int(value)):
                raise ValueError(f"budget limit {name} must be a positive {'whole ' if whole else ''}number, "
                                 f"not {value!r}")
            values[name] = int(value) if whole else float(value)
        budget = cls(**values)
        return budget if budget.is_set else None


LIMIT_NAMES = tuple(f.name for f in fields(Budget))


class BudgetError(YeetuiError):
    """A budget that could not hold: refused before its run starts."""


def uncountable(model: str, limit: float, *, owner: str | None, config: Path) -> str:
    """Why a run on `model` (a model without a known price) is refused under a dollar limit, and what to do."""
    whose = f"the ${limit:g} budget of {owner}" if owner else f"a ${limit:g} budget (max_cost_usd)"
    return (f"Cannot hold {whose} on {model}: yeetui knows no price for {model}, so its spend could not be "
            f"counted in dollars. Give its price in {config} — `models: {{{model}: {{input_per_mtok: …, "
            "output_per_mtok: …}}` (US dollars per million tokens) — or limit tokens instead (--max-tokens, "
            "`max_tokens` in a budget).")


@dataclass(frozen=True)
class Spend:
    """What a tree has spent so far."""

    tokens: int = 0
    cost: float = 0.0
    """Dollars of the requests whose price is known (the whole cost when `unpriced_tokens` is 0)."""
    unpriced_tokens: int = 0
    """Tokens of requests whose model has no known price: in `tokens`, not in `cost`."""
    turns: int = 0
    minutes: float = 0.0
    runs: int = 0

    @property
    def total_cost(self) -> float | None:
        """What the tree cost in dollars; None (unknown) when some of its tokens have no known price."""
        return None if self.unpriced_tokens else self.cost

    def text(self) -> str:
        """`$0.42 · 51k tok · 12 turns · 3.5 min` (and `(9k tok at unknown prices)` when some are; `$?` when none
        had a known price)."""
        known = None if self.unpriced_tokens and not self.cost else self.cost
        parts = [dollars(known), tokens_text(self.tokens), f"{self.turns} turn{'s' * (self.turns != 1)}",
                 f"{self.minutes:.1f} min"]
        text = " · ".join(parts)
        return text + (f" ({tokens_text(self.unpriced_tokens)} at unknown prices)" if self.unpriced_tokens else "")

    def to_json(self) -> dict[str, Any]:
        """`cost` is the whole cost, null when some tokens have no known price (`priced_cost`: the known part)."""
        return {"tokens": self.tokens, "cost": self.total_cost, "priced_cost": self.cost,
                "unpriced_tokens": self.unpriced_tokens, "turns": self.turns, "minutes": self.minutes,
                "runs": self.runs}


@dataclass(frozen=True)
class Breach:
    """A limit the tree reached."""

    limit: str
    """The budget field: `max_cost_usd`, `max_tokens`, `max_turns` or `max_minutes`."""
    text: str
    """`cost $0.52 of $0.50`."""


def breach(budget: Budget, spend: Spend, *, between_requests: bool = True) -> Breach | None:
    """The first limit `spend` has reached, or None. The turn limit is reached when the tree has made that many
    requests — looked at `between_requests` (a run's request just ended: no more may start) — or, looked at
    while requests may be under way, only once one more than that began."""
    if budget.max_cost_usd is not None and spend.cost >= budget.max_cost_usd:
        return Breach("max_cost_usd", f"cost {dollars(spend.cost)} of {dollars(budget.max_cost_usd)}")
    if budget.max_tokens is not None and spend.tokens >= budget.max_tokens:
        return Breach("max_tokens", f"tokens {spend.tokens:,} of {budget.max_tokens:,}")
    if budget.max_turns is not None and (spend.turns >= budget.max_turns if between_requests
                                         else spend.turns > budget.max_turns):
        return Breach("max_turns", f"model turns {spend.turns} of {budget.max_turns}")
    if budget.max_minutes is not None and spend.minutes >= budget.max_minutes:
        return Breach("max_minutes", f"time {spend.minutes:.1f} of {budget.max_minutes:g} minutes")
    return None


def used_share(budget: Budget, spend: Spend) -> float:
    """The largest share of any limit spent (0.0 with no limits)."""
    shares = [spend.cost / budget.max_cost_usd if budget.max_cost_usd else 0.0,
              spend.tokens / budget.max_tokens if budget.max_tokens else 0.0,
              spend.turns / budget.max_turns if budget.max_turns else 0.0,
              spend.minutes / budget.max_minutes if budget.max_minutes else 0.0]
    return max(shares)


def against(budget: Budget, spend: Spend) -> str:
    """Spend against each limit set, as the ledger shows it: `$0.31/$0.50 · 40k/100k tok`."""
    parts = []
    if budget.max_cost_usd is not None:
        parts.append(f"{dollars(spend.cost)}/{dollars(budget.max_cost_usd)}")
    if budget.max_tokens is not None:
        parts.append(f"{tokens_text(spend.tokens).removesuffix(' tok')}/{tokens_text(budget.max_tokens)}")
    if budget.max_turns is not None:
        parts.append(f"{spend.turns}/{budget.max_turns} turns")
    if budget.max_minutes is not None:
        parts.append(f"{spend.minutes:.0f}/{budget.max_minutes:g} min")
    return " · ".join(parts)


def halt_message(found: Breach) -> str:
    """The cancellation message of a halted run (see HALT_REASON)."""
    return f"{HALT_REASON}: {found.text}"


def is_halt(reason: str) -> bool:
    """Whether a cancellation's message (or `cancelled: <message>`) is a budget halt."""
    return reason.removeprefix("cancelled: ").startswith(HALT_REASON)
