"""What runs spent, summed over sessions: tokens, dollars where a price is known, model requests — for a
conversation's header, a session listing and a budget's count of a whole tree.

`Spending` is a part of `Store` (store/sqlite.py), a mixin over `Database`: `store.tree_usage(…)`,
`store.tree_totals(…)`, `store.usage_by_session(…)`.
"""

from __future__ import annotations

from collections.abc import Iterable

from yeetui.messages import Usage
from yeetui.store.db import Database
from yeetui.store.records import TreeTotals


class Spending(Database):
    """Sums of the runs' usage and cost: below a session, or of each session's own runs."""

    async def tree_usage(self, session_id: str) -> tuple[Usage, float | None]:
        """Tokens and cost of every run in `session_id` and the sessions below it (its subagents, theirs…).
        The cost is None when a run's cost is unknown (a model without a price); a run whose cost its parent's
        holds (an external agent's subagent, `RunOptions.cost_in_parent`) counts its tokens only."""
        rows = await self.fetch_all(
            f"sum the usage below session {session_id}",
            "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN tree t"
            " ON s.parent_id = t.id) SELECT usage, cost, json_extract(options, '$.cost_in_parent') AS in_parent"
            " FROM agent_runs WHERE session_id IN tree", (session_id,))
        total = Usage()
        cost_known: float | None = 0.0
        for row in rows:
            usage = Usage.model_validate_json(row["usage"]) if row["usage"] else Usage()
            total = total + usage
            if cost_known is not None and usage.total_tokens and not row["in_parent"]:
                cost_known = None if row["cost"] is None else cost_known + float(row["cost"])
        return total, cost_known

    async def tree_totals(self, session_id: str) -> TreeTotals:
        """What every run in `session_id` and the sessions below it spent, as a budget counts it: all tokens,
        the dollars of those whose price is known, the tokens of those whose price is not, model requests."""
        rows = await self.fetch_all(
            f"sum the spend below session {session_id}",
            "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT s.id FROM sessions s JOIN tree t"
            " ON s.parent_id = t.id) SELECT usage, cost, turns, json_extract(options, '$.cost_in_parent')"
            " AS in_parent FROM agent_runs WHERE session_id IN tree", (session_id,))
        tokens = unpriced = turns = 0
        cost = 0.0
        for row in rows:
            used = Usage.model_validate_json(row["usage"]).total_tokens if row["usage"] else 0
            tokens += used
            turns += row["turns"] or 0
            if row["cost"] is not None:
                cost += float(row["cost"])
            elif used and not row["in_parent"]:
                unpriced += used
        return TreeTotals(tokens=tokens, cost=cost, unpriced_tokens=unpriced, turns=turns, runs=len(rows))

    async def usage_by_session(self, session_ids: Iterable[str]) -> dict[str, tuple[Usage, float | None]]:
        """Tokens and cost of each session's own runs (not the sessions below it), in one query; a session
        without runs is left out. The cost is None when a run that used tokens has no known cost (unless its
        parent's cost holds it: `RunOptions.cost_in_parent`)."""
        ids = list(dict.fromkeys(session_ids))
        if not ids:
            return {}
        marks = ", ".join("?" * len(ids))
        rows = await self.fetch_all("sum the usage of sessions",
                                    "SELECT session_id, usage, cost, json_extract(options, '$.cost_in_parent')"
                                    f" AS in_parent FROM agent_runs WHERE session_id IN ({marks})", ids)
        sums: dict[str, tuple[Usage, float | None]] = {}
        for row in rows:
            total, cost = sums.get(row["session_id"], (Usage(), 0.0))
            usage = Usage.model_validate_json(row["usage"]) if row["usage"] else Usage()
            if cost is not None and usage.total_tokens and not row["in_parent"]:
                cost = None if row["cost"] is None else cost + float(row["cost"])
            sums[row["session_id"]] = (total + usage, cost)
        return sums
