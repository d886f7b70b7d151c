"""What agent tools may do, bound to the calling run: spawn, list, read, steer and cancel its own children.

A run only ever sees and controls its own children; ids of other runs are refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from yeetui.definitions.profiles import RunMode
from yeetui.errors import YeetuiError
from yeetui.events import RunStatus
from yeetui.runs.budget import Budget
from yeetui.runs.spec import RunOptions
from yeetui.store.records import RunRecord
from yeetui.store.sqlite import Store
from yeetui.subagents.follow_up import RELEASED
from yeetui.subagents.inbox import Delivery, announcement_text
from yeetui.subagents.review import review_request
from yeetui.subagents.spawner import AgentSpawner, SpawnHandle, SpawnRefused, SpawnRequest


class AgentHost:
    def __init__(self, spawner: AgentSpawner, delivery: Delivery, *, store: Store, project_dir: Path, session_id: str,
                 run_id: str, label: str) -> None:
        self.spawner = spawner
        self.delivery = delivery
        self.store = store
        self.project_dir = project_dir
        self.session_id = session_id
        self.run_id = run_id
        self.label = label

    async def spawn(self, profile: str, prompt: str, *, blocking: bool = True, label: str | None = None,
                    model: str | None = None, timeout: float | None = None, context: str = "none",
                    prompt_suffix: str = "", worktree: str | None = None,
                    worktree_from: str | None = None, mode: RunMode | None = None,
                    budget: Budget | None = None) -> SpawnHandle:
        """Spawn a child; `worktree` (handed over from session `worktree_from`) makes it work in that existing
        worktree instead of a new one."""
        return await self.spawner.spawn(SpawnRequest(
            profile=profile, prompt=prompt, parent_session_id=self.session_id, parent_run_id=self.run_id,
            blocking=blocking, label=label, model=model, timeout=timeout, session_context=context,
            prompt_suffix=prompt_suffix, requested_by="agent", worktree=worktree, worktree_from=worktree_from,
            mode=mode, budget=budget))

    async def review(self, *, target: str | None = None, focus: str | None = None, blocking: bool = True,
                     ranges: list[tuple[str, str]] | None = None) -> SpawnHandle:
        """Spawn the reviewer with the diff of `target` (a ref or range; None = uncommitted changes), or of
        each `(title, range)` in `ranges` (builders' branches: `base...branch`)."""
        request = await review_request(self.project_dir, parent_session_id=self.session_id,
                                       target=target, focus=focus, blocking=blocking, requested_by="agent",
                                       parent_run_id=self.run_id, ranges=ranges)
        return await self.spawner.spawn(request)

    async def children(self) -> list[dict[str, Any]]:
        rows = []
        for child in await self.store.children(self.session_id):
            runs = await self.store.list_runs(session_id=child.id, limit=1)
            run = runs[0] if runs else None
            if run is not None and RunOptions.of(run).watcher:
                continue  # a pair watcher watches this agent; it is not the agent's to manage
            rows.append({"run_id": run.id if run else None, "label": run.label if run else child.profile,
                         "profile": child.profile, "status": run.status.value if run else "unknown",
                         "session_key": child.key,
                         "can_be_asked_again": bool(run and run.status.is_final and child.status != RELEASED
                                                    and not run.options.get("external"))})
        return rows

    async def _own_run(self, run_id: str) -> RunRecord:
        run = await self.store.get_run(run_id)
        if run is None:
            try:
                run = await self.store.resolve_run(run_id)
            except YeetuiError:
                run = None
        options = RunOptions.of(run)
        if run is None or options.parent_session_id != self.session_id or options.watcher:
            raise SpawnRefused(f"Run {run_id} is not a subagent of {self.label}; use list_agents to see yours.")
        return run

    async def result(self, run_id: str, *, wait: bool = False, timeout: float | None = None) -> dict[str, Any]:
        run = await self._own_run(run_id)
        if wait and not run.status.is_final:
            try:
                await self.spawner.wait(run.id, timeout)
            except TimeoutError:
                pass
            run = await self.store.get_run(run.id) or run
        data: dict[str, Any] = {"run_id": run.id, "label": run.label, "status": run.status.value}
        if run.status.is_final:
            output = (run.result or {}).get("output", "")
            data["result"] = announcement_text(run.label or run.profile, RunStatus(run.status), output, run.error)
            for item in await self.store.inbox.list(self.session_id):
                if item.run_id == run.id:
                    await self.delivery.consumed(item.id)
        return data

    async def cancel(self, run_id: str, *, graceful: bool = True) -> str:
        run = await self._own_run(run_id)
        await self.spawner.cancel(run.id, graceful=graceful)
        return "asked to wrap up and complete" if graceful else "aborted"

    async def release(self, run_id: str) -> str:
        """Let a finished subagent go for good: it is not followed up again (its session and record stay)."""
        run = await self._own_run(run_id)
        label = run.label or run.profile
        if not run.status.is_final:
            raise SpawnRefused(f"{label} is still {run.status.value}; cancel_agent stops it first.")
        await self.store.update_session(run.session_id, status=RELEASED)
        return f"{label} is released: it will not be asked again."

    async def send(self, run_id: str, text: str) -> str:
        """A message for one of its subagents: a running one reads it at its next turn; a finished one goes on
        in its own session, with its earlier context, and its new answer is delivered here like its first.
        What became of it, in words."""
        run = await self._own_run(run_id)
        if not run.status.is_final:
            await self.spawner.steer(run.id, text, sender=self.label)
            return f"Message queued for {run.label or run.id}: it reads it at its next turn."
        handle = await self.spawner.follow_up(run.session_id, f"[Message from {self.label}]\n{text}",
                                              requested_by="agent")
        return (f"{run.label or run.profile} had finished: it goes on with your message in its own session, with "
                f"its earlier context (run {handle.run_id}); its answer will be announced to you.")
