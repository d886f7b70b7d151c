"""The orchestrator's plan: steps in a dependency graph, their validation, and the graph's queries.

Pure data and functions, no I/O: `engine` beside it runs the graph, `prompts` words it. A plan comes
from the planner's `complete` artifacts (`{"steps": [{"id", "profile", "task",
"depends_on"}, ...]}`); `parse_plan` checks it and names every problem in one error, so a bad plan is
reported whole, not one problem at a time.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from yeetui.errors import YeetuiError
from yeetui.text import cap as cap_text

if TYPE_CHECKING:
    from yeetui.definitions.profiles import Profile, ProfileSet

StepStatus = Literal["pending", "running", "done", "failed", "blocked", "skipped"]
PLAN_STEP = "plan"
"""The id of the planner's own step; it always comes first and plan steps may depend on it."""
MAX_STEPS = 20
DEFAULT_MAX_REVIEW_LOOPS = 2
SUMMARY_CAP = 4000
"""Characters of a step's summary passed downstream or shown in the final report."""

_MARKS = {"done": " ✓", "running": " …", "failed": " ✗", "blocked": " (needs you)", "skipped": " (skipped)"}


class PlanError(YeetuiError):
    """The planner's plan cannot be run; the message lists every problem found."""


@dataclass
class Step:
    id: str
    profile: str
    task: str
    depends_on: list[str] = field(default_factory=list)
    status: StepStatus = "pending"
    attempts: int = 0
    """How often a child was started for this step (re-runs after review findings count)."""
    run_id: str | None = None
    session_id: str | None = None
    label: str | None = None
    summary: str = ""
    artifacts: list[Any] | dict[str, Any] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    error: str | None = None
    fixes: int = 0
    """For a review step: how many rounds of findings it sent back to its builders."""
    feedback: str = ""
    """For a building step: the review findings its next attempt must address."""
    worktree: dict[str, Any] | None = None
    """For a step whose child worked in a worktree of its own: where (`id`, `branch`, `base`, `path`). A
    rework continues in it; a reviewer reads `base...branch`; the report says how to merge it."""
    earlier: list[dict[str, Any]] = field(default_factory=list)
    """Children of this step superseded on a resume (their process died with the orchestrator's): `label`,
    `run_id`, `status` and, when it had one, its `worktree` (`id`, `branch`, `path`) — the report accounts for
    them and for the worktrees they leave."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def verdict(self) -> str | None:
        return self.artifacts.get("verdict") if isinstance(self.artifacts, dict) else None

    def brief(self) -> dict[str, Any]:
        """What the run's result shows of a step (no prompts)."""
        data = {k: v for k, v in self.to_json().items() if k not in ("task", "feedback")}
        data["verdict"] = self.verdict
        return data


# -- what the orchestrator profile allows --------------------------------------------------------------


def allowed_profiles(orchestrator: Profile, profiles: ProfileSet) -> set[str]:
    """Profiles a plan may use: the orchestrator's `allowed_children` (default: every subtask profile)."""
    names = orchestrator.allowed_children
    if names is None:
        names = [p.name for p in profiles.with_capability("subtask")]
    return {n for n in names if n in profiles}


def review_loop_limit(orchestrator: Profile) -> int:
    """`max_review_loops` from the profile's `default_variables`: rounds of fixes before asking the user."""
    raw = orchestrator.default_variables.get("max_review_loops", str(DEFAULT_MAX_REVIEW_LOOPS))
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise PlanError(f"max_review_loops {raw!r} in profile {orchestrator.name!r} is not a whole number ≥ 0.")
    return value


# -- parsing and validation ----------------------------------------------------------------------------


def plan_from_artifacts(artifacts: Any) -> list[Any] | None:
    """The raw step list of a planner's artifacts, or None when it returned no plan at all."""
    if isinstance(artifacts, dict) and "steps" in artifacts:
        steps: list[Any] = artifacts["steps"]
        return steps
    return None


def parse_plan(raw: Any, *, allowed: Collection[str], default_profile: str = "builder") -> list[Step]:
    """Validate a planner's step list. Raises PlanError naming every problem."""
    if not isinstance(raw, list) or not raw:
        raise PlanError("The plan's `steps` must be a non-empty list of step objects.")
    if len(raw) > MAX_STEPS:
        raise PlanError(f"The plan has {len(raw)} steps; at most {MAX_STEPS} are allowed.")
    problems: list[str] = []
    steps: list[Step] = []
    for n, item in enumerate(raw, 1):
        step = _parse_step(n, item, allowed, default_profile, problems)
        if step is not None:
            steps.append(step)
    ids = [s.id for s in steps]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"step id {dup!r} is used more than once")
    known = set(ids) | {PLAN_STEP}
    for step in steps:
        for dep in step.depends_on:
            if dep == step.id:
                problems.append(f"step {step.id!r} depends on itself")
            elif dep not in known:
                problems.append(f"step {step.id!r} depends on {dep!r}, which is not a step of the plan")
    if not problems:
        cycle = find_cycle(steps)
        if cycle:
            problems.append("the dependencies form a cycle: " + " → ".join(cycle))
    if problems:
        raise PlanError("The plan is not valid: " + "; ".join(problems) + ".")
    return steps


def _parse_step(n: int, item: Any, allowed: Collection[str], default_profile: str,
                problems: list[str]) -> Step | None:
    if not isinstance(item, dict):
        problems.append(f"step {n} is not an object")
        return None
    step_id = item.get("id")
    if not isinstance(step_id, str) or not step_id.strip():
        problems.append(f"step {n} has no `id`")
        return None
    step_id = step_id.strip()
    if step_id == PLAN_STEP:
        problems.append(f"step {n} uses the id {PLAN_STEP!r}, which is reserved for the planner's own step")
    profile = item.get("profile", default_profile)
    if profile not in allowed:
        problems.append(f"step {step_id!r} names profile {profile!r}; the orchestrator may use "
                        f"{', '.join(sorted(allowed)) or 'no profiles'}")
    task = _task_text(item)
    if not task:
        problems.append(f"step {step_id!r} has no `task`")
    deps = item.get("depends_on", [])
    if isinstance(deps, str):
        deps = [deps]
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        problems.append(f"step {step_id!r}: `depends_on` must be a list of step ids")
        deps = []
    return Step(id=step_id, profile=str(profile), task=task, depends_on=list(dict.fromkeys(deps)))


def _task_text(item: dict[str, Any]) -> str:
    """`task`, or the planner's richer form: title, description, files and the check that proves it."""
    task = item.get("task") or item.get("description") or ""
    if not isinstance(task, str):
        return ""
    parts = [task.strip()]
    title = item.get("title")
    if isinstance(title, str) and title.strip() and not item.get("task"):
        parts.insert(0, f"**{title.strip()}**")
    files = item.get("files")
    if isinstance(files, list) and files:
        parts.append("Files: " + ", ".join(str(f) for f in files))
    verify = item.get("verify")
    if isinstance(verify, str) and verify.strip():
        parts.append(f"Verify: {verify.strip()}")
    return "\n\n".join(p for p in parts if p) if parts[0] else ""


def find_cycle(steps: Iterable[Step]) -> list[str] | None:
    """One dependency cycle as `[a, b, a]`, or None when the graph is acyclic."""
    deps = {s.id: [d for d in s.depends_on if d != PLAN_STEP] for s in steps}
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in deps.get(node, []):
            if state.get(dep) == 1:
                return [*path[path.index(dep):], dep]
            if dep not in state and (found := visit(dep)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in deps:
        if node not in state and (found := visit(node)):
            return found
    return None


def cap(text: str, limit: int) -> str:
    """`text` without surrounding whitespace, capped at `limit` characters (see yeetui.text.cap)."""
    return cap_text(text.strip(), limit)


def default_plan(goal: str, planner_summary: str = "") -> list[Step]:
    """Build the goal, then review it."""
    task = goal.strip()
    if planner_summary.strip():
        task += "\n\n## The planner's notes\n\n" + cap(planner_summary, SUMMARY_CAP)
    return [Step("build", "builder", task),
            Step("review", "reviewer", "Review the change made for this goal:\n\n" + goal.strip(), ["build"])]


# -- the graph -----------------------------------------------------------------------------------------


def by_id(steps: Iterable[Step]) -> dict[str, Step]:
    return {s.id: s for s in steps}


def ready_steps(steps: list[Step]) -> list[Step]:
    """Pending steps whose dependencies are all done, in plan order."""
    index = by_id(steps)
    return [s for s in steps if s.status == "pending"
            and all(index[d].status == "done" for d in s.depends_on if d in index)]


def skip_unreachable(steps: list[Step]) -> list[Step]:
    """Mark pending steps skipped when a dependency failed, is blocked or was skipped; returns them."""
    index = by_id(steps)
    skipped: list[Step] = []
    changed = True
    while changed:
        changed = False
        for step in steps:
            if step.status == "pending" and any(
                    index[d].status in ("failed", "blocked", "skipped") for d in step.depends_on if d in index):
                step.status = "skipped"
                skipped.append(step)
                changed = True
    return skipped


def topo_order(steps: list[Step]) -> list[Step]:
    """Steps ordered so that each comes after its dependencies (plan order among equals)."""
    placed: list[Step] = []
    seen: set[str] = set()
    remaining = list(steps)
    while remaining:
        ready = [s for s in remaining if all(d in seen or d not in by_id(steps) for d in s.depends_on)]
        if not ready:  # a cycle (validated plans have none): keep the rest in plan order
            ready = remaining
        for step in ready:
            placed.append(step)
            seen.add(step.id)
        remaining = [s for s in remaining if s.id not in seen]
    return placed


def approved(step: Step, steps: list[Step]) -> bool:
    """A review that depends on `step` ended done with the verdict `approve`."""
    return any(step.id in s.depends_on and s.status == "done" and s.verdict == "approve" for s in steps)


def plan_steps(steps: list[Step]) -> tuple[tuple[str, str], ...]:
    """Each step in order as (`build (builder): the task`, its status), for `RunProgress.steps`."""
    return tuple((f"{s.id} ({s.label or s.profile}): {s.task}", s.status) for s in topo_order(steps))


def progress_line(steps: list[Step]) -> str:
    """`plan ✓ → build … → review`."""
    return " → ".join(f"{s.id}{_MARKS.get(s.status, '')}" for s in topo_order(steps))

