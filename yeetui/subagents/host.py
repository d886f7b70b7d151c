"""What agent tools may do, bound to the calling run: spawn, list, read, steer and cancel its own children.

A run only ever sees and controls its own children; ids of other runs are refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from yeetui.errors import YeetuiError
from yeetui.events import RunStatus
from yeetui.subagents.inbox import announcement_text
from yeetui.subagents.spawner import SpawnHandle, SpawnRefused, SpawnRequest
from yeetui.system.git import diff as git_diff

if TYPE_CHECKING:
    from yeetui.subagents.spawner import AgentSpawner

DIFF_CAP = 60_000


class AgentHost:
    def __init__(self, spawner: AgentSpawner, *, session_id: str, run_id: str, label: str) -> None:
        self.spawner = spawner
        self.session_id = session_id
        self.run_id = run_id
        self.label = label

    @property
    def store(self):
        return self.spawner.runtime.store

    async def spawn(self, profile: str, prompt: str, *, blocking: bool = True, label: str | None = None,
                    model: str | None = None, timeout: float | None = None, context: str = "none",
                    prompt_suffix: str = "") -> SpawnHandle:
        return await self.spawner.spawn(SpawnRequest(
            profile=profile, prompt=prompt, parent_session_id=self.session_id, parent_run_id=self.run_id,
            blocking=blocking, label=label, model=model, timeout=timeout, session_context=context,
            prompt_suffix=prompt_suffix, requested_by="agent"))

    async def review(self, *, target: str | None = None, focus: str | None = None,
                     blocking: bool = True) -> SpawnHandle:
        """Spawn the reviewer with the diff of `target` (a ref or range; None = uncommitted changes)."""
        request = await review_request(self.spawner.runtime, parent_session_id=self.session_id, target=target,
                                       focus=focus, blocking=blocking, requested_by="agent",
                                       parent_run_id=self.run_id)
        return await self.spawner.spawn(request)

    async def children(self) -> list[dict[str, Any]]:
        rows = []
        for child in await self.store.children(self.session_id):
            runs = await self.store.list_runs(session_id=child.id, limit=1)
            run = runs[0] if runs else None
            if run is not None and run.options.get("watcher"):
                continue  # a pair watcher watches this agent; it is not the agent's to manage
            rows.append({"run_id": run.id if run else None, "label": run.label if run else child.profile,
                         "profile": child.profile, "status": run.status.value if run else "unknown",
                         "session_key": child.key})
        return rows

    async def _own_run(self, run_id: str):
        run = await self.store.get_run(run_id)
        if run is None:
            try:
                run = await self.store.resolve_run(run_id)
            except YeetuiError:
                run = None
        if run is None or run.options.get("parent_session_id") != self.session_id or run.options.get("watcher"):
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
            for item in await self.store.list_inbox(self.session_id):
                if item.run_id == run.id:
                    await self.spawner.runtime.delivery.consumed(item.id)
        return data

    async def cancel(self, run_id: str, *, graceful: bool = True) -> str:
        run = await self._own_run(run_id)
        await self.spawner.cancel(run.id, graceful=graceful)
        return "asked to wrap up and complete" if graceful else "aborted"

    async def send(self, run_id: str, text: str) -> None:
        run = await self._own_run(run_id)
        await self.spawner.steer(run.id, text, sender=self.label)


async def review_request(runtime: Any, *, parent_session_id: str, target: str | None = None,
                         focus: str | None = None, blocking: bool = False, requested_by: str = "user",
                         parent_run_id: str | None = None) -> SpawnRequest:
    """A reviewer spawn carrying `git diff` of `target` (None: uncommitted changes against HEAD), through
    yeetui's hardened git. Refused with a clear reason when there is nothing to review."""
    try:
        text = await git_diff(runtime.project_dir, target or "HEAD")
        if target is None:
            text += await untracked_diff(runtime.project_dir)
    except (RuntimeError, OSError) as exc:
        raise SpawnRefused(f"Could not get the diff to review: {exc}") from None
    if not text.strip():
        raise SpawnRefused(f"There is nothing to review: the diff of {target or 'the working tree'} is empty.")
    if len(text) > DIFF_CAP:
        text = text[:DIFF_CAP] + f"\n[diff truncated: {len(text) - DIFF_CAP} characters omitted]"
    what = f"the changes in {target}" if target else "the uncommitted changes in the working tree"
    task = f"Review {what}." + (f" Focus: {focus}" if focus else "")
    return SpawnRequest(profile="reviewer", prompt=task, parent_session_id=parent_session_id,
                        parent_run_id=parent_run_id, blocking=blocking, requested_by=requested_by,  # type: ignore[arg-type]
                        prompt_suffix=f"\n\n## Diff to review\n\n```diff\n{text}\n```\n")


async def untracked_diff(cwd: Any) -> str:
    """New files git does not track yet (and does not ignore), as diffs against nothing — a builder's new
    module is part of the change to review even before anyone commits it."""
    from yeetui.system.git import git

    rc, out, err = await git("ls-files", "--others", "--exclude-standard", "-z", cwd=cwd)
    if rc != 0:
        raise RuntimeError(f"git ls-files failed in {cwd}: {err.strip()}")
    parts = []
    for name in filter(None, out.split("\0")):
        # --no-index exits 1 when the files differ, which they always do here.
        rc, diff, err = await git("diff", "--no-index", "--no-color", "--", "/dev/null", name, cwd=cwd)
        if rc not in (0, 1):
            raise RuntimeError(f"git diff of new file {name} failed: {err.strip()}")
        parts.append(diff)
    return "".join(parts)
