"""The orchestrator engine: plan → run the steps as a graph → bounded review loop → report.

Code drives it, not a model. The planner child proposes steps (`yeetui.subagents.orchestrator.plan`); every step
whose dependencies are done starts at once as a blocking child spawn; each child's prompt carries its task
and what the steps before it produced. A reviewer asking for changes sends its findings back to the
builders it reviewed, at most `max_review_loops` times; then the run waits for the user.

Every change is saved (`workflow_states`, name "orchestrator") before it is reported, so resuming the same
run id (`AgentSpawner.start_existing(run_id, resume=True)`) picks up where it stopped: finished steps are
never re-run, and a step whose child finished while nobody was watching takes that child's result.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from yeetui.bus import Bus
from yeetui.definitions.profiles import ProfileSet
from yeetui.errors import YeetuiError
from yeetui.events import (
    InboxItemAdded,
    MessageCommitted,
    Notice,
    RunProgress,
    RunRegistered,
    RunStatus,
    RunStatusChanged,
)
from yeetui.messages import Message
from yeetui.runs.spec import RunOptions, RunResult, RunSpec, cancel_reason
from yeetui.settings.config import WorktreeConfig
from yeetui.store import Store
from yeetui.store.payloads import OrchestratorStep
from yeetui.store.records import utcnow
from yeetui.subagents.host import AgentHost
from yeetui.subagents.inbox import Delivery
from yeetui.subagents.orchestrator.plan import (
    DEFAULT_MAX_REVIEW_LOOPS,
    PLAN_STEP,
    PlanError,
    Step,
    allowed_profiles,
    approved,
    by_id,
    default_plan,
    parse_plan,
    plan_from_artifacts,
    plan_steps,
    progress_line,
    ready_steps,
    review_loop_limit,
    skip_unreachable,
    topo_order,
)
from yeetui.subagents.orchestrator.prompts import final_report, findings_text, planner_task, step_prompt
from yeetui.subagents.spawner import AgentSpawner, SpawnHandle, SpawnRefused
from yeetui.system.git import git
from yeetui.text import seconds_text
from yeetui.worktrees.manager import WorktreeError, Worktrees
from yeetui.worktrees.merging import merge_work

STATE_NAME = "orchestrator"
EVENTS_KEPT = 200
Level = Literal["info", "warning", "error"]
_LEVELS: dict[str, Level] = {"failed": "error", "blocked": "warning", "skipped": "warning"}
NEEDS_USER = frozenset({"failed", "blocked"})
"""Step transitions that go to the inbox: the user has to decide something."""


class OrchestratorEngine:
    """The run engine of profiles with the `orchestrator` capability: the runtime registers it with the
    launcher, which calls it with a run's spec in place of the agent loop."""

    def __init__(self, spawner: AgentSpawner, delivery: Delivery, *, store: Store, bus: Bus, profiles: ProfileSet,
                 project_dir: Path, worktrees: Worktrees | None, merging: WorktreeConfig) -> None:
        self.spawner = spawner
        self.parts = OrchestratorParts(store=store, bus=bus, profiles=profiles, project_dir=project_dir,
                                       worktrees=worktrees, merging=merging, delivery=delivery)

    async def __call__(self, spec: RunSpec, run_id: str) -> RunResult:
        """Run (or resume) the orchestrator run `run_id` to its end."""
        return await Orchestrator(self.spawner, self.parts, spec, run_id).run()


@dataclass(frozen=True)
class OrchestratorParts:
    """What an orchestrator run works with besides the spawner, handed in by the runtime."""

    store: Store
    bus: Bus
    profiles: ProfileSet
    project_dir: Path
    worktrees: Worktrees | None
    """Where builders' branches are (for the report and `auto_merge`); None: children share the checkout."""
    merging: WorktreeConfig
    """The config's `worktrees`: whether (`auto_merge`) an approved builder branch is merged at once, and how."""
    delivery: Delivery
    """Where the children's endings wait to be read (the orchestrator reads them as tool results)."""


class Orchestrator:
    def __init__(self, spawner: AgentSpawner, parts: OrchestratorParts, spec: RunSpec, run_id: str) -> None:
        self.spawner = spawner
        self.store = parts.store
        self.bus = parts.bus
        self.profiles = parts.profiles
        self.project_dir = parts.project_dir
        self.worktrees = parts.worktrees
        self.merging = parts.merging
        self.spec = spec
        self.run_id = run_id
        self.profile = self.profiles.get(spec.profile)
        self.host = AgentHost(spawner, parts.delivery, store=parts.store, project_dir=parts.project_dir,
                              session_id=spec.session_id, run_id=run_id, label=spec.label)
        self.parent: str | None = spec.parent_session_id
        self.state: dict[str, Any] = {}
        self.steps: list[Step] = []
        self._tasks: dict[asyncio.Task[RunResult], str] = {}
        self._registering = asyncio.Lock()
        """Held from a spawn's start until its run is registered, so each registration maps to its step."""

    # -- the run -----------------------------------------------------------------------------------

    async def run(self) -> RunResult:
        result = RunResult(run_id=self.run_id, session_id=self.spec.session_id, status=RunStatus.RUNNING)
        await self._set_status(RunStatus.RUNNING)
        try:
            async with asyncio.timeout(self.spec.timeout):
                result.status, result.error = await self._drive()
        except TimeoutError:
            result.status, result.error = RunStatus.TIMEOUT, f"timed out after {seconds_text(self.spec.timeout)}"
        except (YeetuiError, OSError) as exc:
            result.status, result.error = RunStatus.FAILED, str(exc)
        except asyncio.CancelledError as exc:
            result.status, result.error = RunStatus.CANCELLED, cancel_reason(exc)
            await asyncio.shield(self._finish(result))
            raise
        except Exception as exc:  # a bug: never leave the run record `running`
            result.status, result.error = RunStatus.FAILED, f"internal error in the orchestrator: {exc!r}"
            await self._finish(result)
            raise
        await self._finish(result)
        return result

    async def _drive(self) -> tuple[RunStatus, str | None]:
        await self._load()
        try:
            while True:
                for step in skip_unreachable(self.steps):
                    await self._transition(step, "skipped", "skipped: a step it depends on did not finish")
                room = self.spawner.max_children - len(self._tasks)
                for step in ready_steps(self.steps)[:max(room, 0)]:
                    await self._start(step)
                if not self._tasks:
                    break
                done, _ = await asyncio.wait(set(self._tasks), return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    await self._settle(by_id(self.steps)[self._tasks.pop(task)], task)
        finally:
            await self._stop_children()
        return self._outcome()

    def _outcome(self) -> tuple[RunStatus, str | None]:
        failed = [s for s in self.steps if s.status == "failed"]
        if failed:
            return RunStatus.FAILED, "; ".join(f"step {s.id!r} failed: {s.error}" for s in failed)
        stuck = [s.id for s in self.steps if s.status in ("pending", "running")]
        if stuck:
            return RunStatus.FAILED, f"steps {', '.join(stuck)} could not start"
        if any(s.status == "blocked" for s in self.steps):
            return RunStatus.WAITING_USER, None
        return RunStatus.COMPLETED, None

    # -- state ---------------------------------------------------------------------------------------

    async def _load(self) -> None:
        session = await self.store.get_session(self.spec.session_id)
        self.parent = self.parent or (session.parent_id if session else None)
        record = await self.store.workflow_states.load(self.run_id)
        if record is not None and record.workflow == STATE_NAME and record.state.get("steps"):
            self.state = dict(record.state)
            if not isinstance(self.state.get("goal"), str):
                raise YeetuiError(f"The saved state of orchestrator run {self.run_id[:12]} has no goal; it cannot "
                                  "be resumed.")
            self.steps = [Step.from_json(s) for s in self.state.pop("steps")]
            self.state["starts"] = int(self.state.get("starts", 1)) + 1
            await self._resume()
            return
        goal = self.spec.prompt
        if goal is None:
            run = await self.store.get_run(self.run_id)
            goal = run.prompt if run else ""
        if not goal.strip():
            raise YeetuiError(f"Orchestrator run {self.run_id[:12]} has no goal: it was started without a prompt "
                              "and has no saved state to resume.")
        self.state = {"version": 1, "goal": goal, "base": await self._git_head(),
                      "max_review_loops": self._review_loop_limit(), "starts": 1, "events": []}
        self.steps = [Step(PLAN_STEP, "planner", planner_task(goal, sorted(self._allowed_profiles())))]
        await self._save()
        if self.spec.prompt is not None:
            await self._commit(Message.user(goal))

    async def _resume(self) -> None:
        """Steps that were running take their child's result if it completed, else start again; failed,
        blocked and skipped steps get another try. Done steps stay done."""
        for step in list(self.steps):
            if step.status == "running":
                run = await self.store.get_run(step.run_id) if step.run_id else None
                if run is not None and run.status == RunStatus.COMPLETED:
                    data = run.result if isinstance(run.result, dict) else {}
                    await self._apply(step, RunStatus.COMPLETED, str(data.get("output", "")), data, None)
                    continue
                step.status = "pending"
                ended = run.status.value if run else "never registered"
                if run is not None:
                    step.earlier.append(await self._superseded(step, run.id, run.session_id, ended))
                if run is not None and run.status not in (RunStatus.COMPLETED, RunStatus.CANCELLED):
                    # The step starts again with a new child; the old one must not linger as resumable.
                    await self.store.update_run(run.id, status=RunStatus.CANCELLED,
                                                error=f"superseded: step {step.id!r} of {self.spec.label} started "
                                                "again with a new child")
                await self._transition(step, "resumed", f"was interrupted ({ended}); it starts again")
            elif step.status == "blocked" and step.verdict == "request_changes":
                step.status, step.fixes = "done", 0  # the user resumed: another round of fixes
                await self._review_loop(step)
            elif step.status in ("failed", "blocked", "skipped"):
                step.status, step.error = "pending", None
        await self._save()

    async def _superseded(self, step: Step, run_id: str, session_id: str, ended: str) -> dict[str, Any]:
        """What the report keeps of a child a resume replaces: who it was, how it ended, its worktree."""
        entry: dict[str, Any] = {"label": step.label or step.profile, "run_id": run_id, "status": ended}
        wt = await self.worktrees.of_session(session_id) if self.worktrees is not None else None
        if wt is not None:
            entry["worktree"] = {"id": wt.id, "branch": wt.branch, "path": str(wt.path)}
        return entry

    def _review_loop_limit(self) -> int:
        try:
            return review_loop_limit(self.profile)
        except PlanError as exc:
            self._notice("warning", f"{exc} Using {DEFAULT_MAX_REVIEW_LOOPS}.")
            return DEFAULT_MAX_REVIEW_LOOPS

    async def _save(self) -> None:
        state = {**self.state, "steps": [s.to_json() for s in self.steps]}
        await self.store.workflow_states.save(self.run_id, STATE_NAME, state)

    def _allowed_profiles(self) -> set[str]:
        return allowed_profiles(self.profile, self.profiles)

    async def _git_head(self) -> str | None:
        """The commit the work starts from: reviewers see everything changed since (committed or not)."""
        try:
            rc, out, _ = await git("rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=self.project_dir)
        except OSError:
            return None
        return out.strip() if rc == 0 and out.strip() else None

    # -- steps ---------------------------------------------------------------------------------------

    async def _start(self, step: Step) -> None:
        # A rework continues in the worktree the step's last child worked in, handed over from its session.
        handover = (step.worktree["id"], step.session_id) if step.worktree and step.session_id else None
        step.status, step.attempts = "running", step.attempts + 1
        step.run_id = step.session_id = step.label = step.error = None
        await self._save()
        prompt = step_prompt(self.steps, step, self.state["goal"])
        task = asyncio.create_task(self._spawn(step, prompt, handover), name=f"yeetui orchestrator {step.id}")
        self._tasks[task] = step.id

    async def _spawn(self, step: Step, prompt: str, handover: tuple[str, str] | None = None) -> RunResult:
        """Spawn the step's child, blocking; its run id is saved (and its start told) once it is registered."""
        registered: asyncio.Future[RunRegistered] = asyncio.get_running_loop().create_future()

        def on_event(event: object) -> None:
            if (isinstance(event, RunRegistered) and event.parent_session_id == self.spec.session_id
                    and not registered.done()):
                registered.set_result(event)

        spawning: asyncio.Task[SpawnHandle] | None = None
        try:
            async with self._registering:
                with self.bus.listen(on_event):
                    spawning = asyncio.create_task(self._spawn_child(step, prompt, handover))
                    first: list[asyncio.Future[Any]] = [spawning, registered]  # whichever comes first
                    await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
            if registered.done():
                event = registered.result()
                step.run_id, step.session_id, step.label = event.run_id, event.session_id, event.label
                again = f" again (attempt {step.attempts})" if step.attempts > 1 else ""
                await self._transition(step, "started", f"started{again}")
            handle = await spawning
            if handle.worktree is not None:
                step.worktree = handle.worktree
        except asyncio.CancelledError:
            if spawning is not None and not spawning.done():
                spawning.cancel()
                await asyncio.gather(spawning, return_exceptions=True)
            raise
        if handle.result is None:
            return RunResult(handle.run_id, handle.session_id, RunStatus.FAILED, error="the child gave no result")
        return handle.result

    async def _spawn_child(self, step: Step, prompt: str, handover: tuple[str, str] | None) -> SpawnHandle:
        if step.profile == "reviewer":
            try:
                return await self.host.review(target=self.state.get("base"), focus=prompt,
                                              ranges=self._branches_reviewed(step) or None)
            except (SpawnRefused, OSError) as exc:
                self._notice("info", f"{step.id}: the reviewer gets no diff ({exc}); it reviews from the "
                             "earlier steps' reports instead.")
        if handover is not None:
            return await self.host.spawn(step.profile, prompt, worktree=handover[0], worktree_from=handover[1])
        return await self.host.spawn(step.profile, prompt)

    def _branches_reviewed(self, review: Step) -> list[tuple[str, str]]:
        """`(title, base...branch)` of each step this review depends on that worked in a worktree: what it
        committed there, not the user's working tree (where none of it is)."""
        index = by_id(self.steps)
        ranges = []
        for dep in (index[d] for d in review.depends_on if d in index):
            wt = dep.worktree
            if wt and wt.get("branch") and (wt.get("base") or self.state.get("base")):
                ranges.append((f"{dep.label or dep.id} on {wt['branch']}",
                               f"{wt.get('base') or self.state['base']}...{wt['branch']}"))
        return ranges

    async def _settle(self, step: Step, task: asyncio.Task[RunResult]) -> None:
        if task.cancelled():
            await self._fail(step, "its child run was cancelled")
            return
        try:
            result = task.result()
        except (YeetuiError, OSError) as exc:
            await self._fail(step, str(exc))
            return
        await self._apply(step, result.status, result.output, result.result or {}, result.error)

    async def _fail(self, step: Step, reason: str) -> None:
        step.status, step.error = "failed", reason
        await self._transition(step, "failed", f"failed: {reason}")

    async def _apply(self, step: Step, status: RunStatus, output: str, data: dict[str, Any],
                     error: str | None) -> None:
        """Record a child's ending on its step, then act on it (expand the plan, loop a review)."""
        output = output or str(data.get("output") or "")
        if status == RunStatus.COMPLETED and data.get("status") != "blocked":
            step.status, step.summary, step.error, step.feedback = "done", output, None, ""
            step.artifacts = data.get("artifacts") or []
            step.files_modified = list(dict.fromkeys([*step.files_modified, *data.get("files_modified", [])]))
            verdict = f" (verdict: {step.verdict})" if step.verdict else ""
            await self._transition(step, "done", f"done{verdict}")
            if step.id == PLAN_STEP:
                await self._expand_plan(step)
            elif step.verdict == "request_changes":
                await self._review_loop(step)
        elif status in (RunStatus.COMPLETED, RunStatus.WAITING_USER):
            step.status, step.summary = "blocked", output
            step.error = (output or error or "the agent needs input").strip().splitlines()[0][:300]
            await self._transition(step, "blocked", f"needs your input: {step.error}")
        else:
            who = step.label or step.profile
            await self._fail(step, f"{who} ended {status.value}" + (f": {error}" if error else ""))

    async def _expand_plan(self, plan: Step) -> None:
        raw = plan_from_artifacts(plan.artifacts)
        goal = self.state["goal"]
        if raw is None:
            steps, source = default_plan(goal, plan.summary), "default"
            self._notice("info", "The planner returned no steps; using the default plan: build → review.")
        else:
            try:
                steps, source = parse_plan(raw, allowed=self._allowed_profiles()), "planner"
            except PlanError as exc:
                steps, source = default_plan(goal, plan.summary), "default"
                self.state["plan_error"] = str(exc)
                self._notice("warning", f"{exc} Using the default plan instead: build → review.")
        self.steps = [plan, *steps]
        self.state["plan_source"] = source
        await self._save()

    async def _review_loop(self, review: Step) -> None:
        """Send a reviewer's findings back to the steps it reviewed that write, then review again."""
        index = by_id(self.steps)
        builders = [index[d] for d in review.depends_on if d in index and self._writes(index[d].profile)]
        if not builders:
            return  # nothing reviewed here can change: the findings are the result
        limit = int(self.state.get("max_review_loops", DEFAULT_MAX_REVIEW_LOOPS))
        if review.fixes >= limit:
            review.status = "blocked"
            review.error = f"the reviewer still requests changes after {limit} round(s) of fixes"
            await self._transition(review, "blocked", f"still requests changes after {limit} round(s) of fixes; "
                                   "your decision is needed")
            return
        review.fixes += 1
        findings = findings_text(review)
        for builder in builders:
            builder.status = "pending"
            builder.feedback = f"Round {review.fixes} of {limit}, from {review.label or review.id}:\n\n{findings}"
        review.status = "pending"
        names = ", ".join(b.id for b in builders)
        await self._transition(review, "changes", f"requested changes; {names} reworks them "
                               f"(round {review.fixes} of {limit})")

    def _writes(self, profile: str) -> bool:
        return profile in self.profiles and not self.profiles.get(profile).read_only

    async def _stop_children(self) -> None:
        tasks, self._tasks = list(self._tasks), {}
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- progress and the end ------------------------------------------------------------------------

    async def _transition(self, step: Step, event: str, text: str) -> None:
        """Save, then tell: a Notice in the orchestrator's own conversation, the progress line on its ledger
        row, and — only for what needs the user (a step blocked or failed) — one inbox item (a resume does
        not repeat it). Steps starting and finishing are progress, not mail: they never fill the inbox."""
        line = progress_line(self.steps)
        message = f"{step.id} ({step.label or step.profile}) {text}"
        events = self.state.setdefault("events", [])
        events.append({"at": utcnow(), "step": step.id, "event": event, "attempt": step.attempts, "text": message})
        del events[:-EVENTS_KEPT]
        await self._save()
        self._notice(_LEVELS.get(event, "info"), f"{message} — {line}")
        self.bus.publish(RunProgress(self.run_id, self.spec.session_id, line, steps=plan_steps(self.steps)))
        if event in NEEDS_USER:
            await self._inbox(f"{step.id}#{step.attempts}:{event}", f"{self.spec.label}: {message}",
                              OrchestratorStep(progress=line, step=step.id, event=event, step_status=step.status,
                                               child_run_id=step.run_id))

    async def _inbox(self, key: str, title: str, told: OrchestratorStep) -> None:
        recipient = self.parent or self.spec.session_id
        item, created = await self.store.inbox.put(
            session_id=recipient, run_id=self.run_id, kind="orchestrator", title=title, body=told.progress,
            data=told.to_data(), dedupe_key=f"orchestrator:{self.run_id}:{key}")
        if created:
            self.bus.publish(InboxItemAdded(item.id, recipient, self.run_id, item.kind, item.title, item.body,
                                               item.data or {}))

    def _notice(self, level: Level, text: str) -> None:
        self.bus.publish(Notice(level, f"{self.spec.label}: {text}", self.spec.session_id))

    async def _commit(self, message: Message) -> None:
        message_id = await self.store.append_message(self.spec.session_id, message, run_id=self.run_id)
        self.bus.publish(MessageCommitted(self.run_id, self.spec.session_id, message_id, message))

    async def _set_status(self, status: RunStatus) -> None:
        await self.store.update_run(self.run_id, status=status)
        self.bus.publish(RunStatusChanged(self.run_id, self.spec.session_id, status))

    async def _finish(self, result: RunResult) -> None:
        """Report the ending everywhere — state, breadcrumbs, inbox, transcript — then the run record."""
        if self.steps:
            if result.status == RunStatus.COMPLETED:
                await self._merge_approved()
            await self._note_leftovers()
            result.output = final_report(self.state["goal"], self.steps, result.status, result.error)
            result.result = {"steps": [s.brief() for s in self.steps], "output": result.output,
                             "worktrees": [s.worktree for s in self.steps if s.worktree and s.status == "done"
                                           and not s.worktree.get("merged")]}
            self.state["outcome"] = result.status.value
            await self._save()
            line = progress_line(self.steps)
            crumb = f"{self.spec.label}: {result.status.value} — {line}"
            await self.store.breadcrumbs.add(session_id=self.spec.session_id, summary=crumb, run_id=self.run_id)
            if self.parent and not await self._delivered_to_parent():
                await self.store.breadcrumbs.add(session_id=self.parent, summary=crumb,
                                                 child_session_id=self.spec.session_id, run_id=self.run_id)
            if not (self.parent and await self._delivered_to_parent()):  # else the parent's completion item tells it
                await self._inbox(f"end:{self.state.get('starts', 1)}", f"{self.spec.label} — {result.status.value}",
                                  OrchestratorStep(progress=line, event="end", step_status=result.status.value,
                                                   worktrees=result.result["worktrees"]))
            await self._commit(Message.assistant(result.output))
        await self.store.update_run(self.run_id, status=result.status, error=result.error,
                                    result={"output": result.output, **(result.result or {})})
        self.bus.publish(RunStatusChanged(self.run_id, self.spec.session_id, result.status, result.error or ""))

    async def _note_leftovers(self) -> None:
        """Before the report: whether each worktree a superseded child left still exists and holds work."""
        worktrees = self.worktrees
        for entry in (e for s in self.steps for e in s.earlier if e.get("worktree")):
            wt = await self.store.worktree_records.get(str(entry["worktree"].get("id", "")))
            if wt is None or wt.status != "active" or worktrees is None:
                entry["worktree"]["state"] = "gone"
                continue
            try:
                state = await worktrees.state(wt)
            except WorktreeError as exc:
                entry["worktree"]["state"] = f"unreadable: {exc}"
                continue
            entry["worktree"].update(state="active", commits=state.commits, changed=len(state.changed))

    async def _merge_approved(self) -> None:
        """With `worktrees.auto_merge` set, merge each builder branch a reviewer approved, in plan order; a
        conflict leaves that branch (and the user decides, as without the setting)."""
        strategy = self.merging.auto_merge
        if strategy == "off" or self.worktrees is None:
            return
        for step in topo_order(self.steps):
            if step.status != "done" or not step.worktree or "merged" in step.worktree or \
                    not approved(step, self.steps):
                continue
            wt = await self.store.worktree_records.get(str(step.worktree.get("id", "")))
            if wt is None or wt.status != "active":
                continue
            try:
                outcome = await merge_work(self.worktrees, wt, strategy=strategy)
            except WorktreeError as exc:
                step.worktree = {**step.worktree, "merged": False, "merge_note": str(exc)}
                self._notice("warning", f"{step.label or step.id}: not merged — {exc}")
                continue
            step.worktree = {**step.worktree, "merged": outcome.merged, "merge_note": outcome.message}
            self._notice("info" if outcome.merged else "warning", f"{step.label or step.id}: {outcome.message}")
        await self._save()

    async def _delivered_to_parent(self) -> bool:
        """Whether the spawner delivers this run to the parent (its delivery adds the parent's breadcrumb)."""
        options = RunOptions.of(await self.store.get_run(self.run_id))
        return options.parent_session_id == self.parent and options.deliver
