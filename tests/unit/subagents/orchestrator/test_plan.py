"""The orchestrator's plan model: validation with every problem named, the graph queries, the texts."""

from __future__ import annotations

import pytest

from yeetui.events import RunStatus
from yeetui.subagents.orchestrator.plan import (
    PlanError,
    Step,
    allowed_profiles,
    default_plan,
    find_cycle,
    parse_plan,
    plan_from_artifacts,
    progress_line,
    ready_steps,
    review_loop_limit,
    skip_unreachable,
    topo_order,
)
from yeetui.subagents.orchestrator.prompts import final_report, findings_text, step_prompt

ALLOWED = {"planner", "builder", "reviewer"}


def test_a_valid_plan_parses_with_defaults_and_the_planners_richer_form() -> None:
    steps = parse_plan([
        {"id": "api", "title": "Add the endpoint", "description": "Add health() to app.py.",
         "files": ["app.py"], "verify": "pytest -q", "depends_on": "plan"},
        {"id": "rev", "profile": "reviewer", "task": "Review api.", "depends_on": ["api", "api"]},
    ], allowed=ALLOWED)
    assert [(s.id, s.profile, s.depends_on) for s in steps] == [("api", "builder", ["plan"]),
                                                                 ("rev", "reviewer", ["api"])]
    assert steps[0].task == "**Add the endpoint**\n\nAdd health() to app.py.\n\nFiles: app.py\n\nVerify: pytest -q"


@pytest.mark.parametrize("raw, expected", [
    ([], "non-empty list"),
    ("steps", "non-empty list"),
    ([{"id": f"s{i}", "task": "t"} for i in range(21)], "at most 20"),
    ([{"id": "a", "task": "t"}, {"id": "a", "task": "u"}], "step id 'a' is used more than once"),
    ([{"id": "a", "task": "t", "depends_on": ["ghost"]}], "depends on 'ghost', which is not a step"),
    ([{"id": "a", "task": "t", "depends_on": ["a"]}], "step 'a' depends on itself"),
    ([{"id": "a", "profile": "oracle", "task": "t"}], "names profile 'oracle'; the orchestrator may use builder"),
    ([{"id": "a"}], "step 'a' has no `task`"),
    ([{"task": "t"}], "step 1 has no `id`"),
    (["just text"], "step 1 is not an object"),
    ([{"id": "plan", "task": "t"}], "reserved for the planner"),
    ([{"id": "a", "task": "t", "depends_on": [3]}], "`depends_on` must be a list of step ids"),
    ([{"id": "a", "task": "t", "depends_on": ["c"]}, {"id": "b", "task": "t", "depends_on": ["a"]},
      {"id": "c", "task": "t", "depends_on": ["b"]}], "cycle: a → c → b → a"),
])
def test_invalid_plans_name_the_problem(raw, expected) -> None:
    with pytest.raises(PlanError, match=r"^The plan") as info:
        parse_plan(raw, allowed=ALLOWED)
    assert expected in str(info.value)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(PlanError) as info:
        parse_plan([{"id": "a", "profile": "nope", "task": "t", "depends_on": ["zz"]}, {"id": "b"}], allowed=ALLOWED)
    message = str(info.value)
    assert "'nope'" in message and "'zz'" in message and "step 'b' has no `task`" in message


def test_plan_from_artifacts() -> None:
    assert plan_from_artifacts({"steps": [{"id": "a"}]}) == [{"id": "a"}]
    assert plan_from_artifacts({"verdict": "approve"}) is None
    assert plan_from_artifacts(["a.py"]) is None


def test_graph_queries_and_progress_line() -> None:
    steps = [Step("plan", "planner", "p", status="done"), *default_plan("GOAL", "notes")]
    assert "## The planner's notes\n\nnotes" in steps[1].task
    assert [s.id for s in ready_steps(steps)] == ["build"]
    assert progress_line(steps) == "plan ✓ → build → review"
    steps[1].status = "running"
    assert ready_steps(steps) == [] and progress_line(steps) == "plan ✓ → build … → review"
    steps[1].status = "failed"
    assert [s.id for s in skip_unreachable(steps)] == ["review"]
    assert progress_line(steps) == "plan ✓ → build ✗ → review (skipped)"
    shuffled = [Step("c", "reviewer", "t", ["b"]), Step("b", "builder", "t", ["a"]), Step("a", "builder", "t")]
    assert [s.id for s in topo_order(shuffled)] == ["a", "b", "c"]
    assert find_cycle(shuffled) is None


def test_step_round_trips_through_json() -> None:
    step = Step("a", "reviewer", "t", ["b"], status="done", artifacts={"verdict": "approve"}, fixes=1)
    assert Step.from_json({**step.to_json(), "unknown_later_field": 1}) == step
    assert step.verdict == "approve" and step.brief()["verdict"] == "approve" and "task" not in step.brief()


def test_prompt_and_report_texts() -> None:
    build = Step("build", "builder", "Do it.", status="done", label="builder#1", summary="BUILT",
                 files_modified=["u.py"], artifacts=["branch x"])
    review = Step("review", "reviewer", "Review it.", ["build"], status="blocked", label="reviewer#1",
                  summary="Needs work.", artifacts={"verdict": "request_changes", "findings": [
                      {"severity": "major", "file": "u.py", "line": 3, "message": "off by one"},
                      {"severity": "nit", "message": "naming"}, "junk"]})
    prompt = step_prompt([build, review], review, "THE GOAL")
    assert prompt.startswith("Review it.\n\n## Overall goal\n\nTHE GOAL\n\n## Results of earlier steps")
    assert "### build (builder#1) — done\n\nBUILT\n\nFiles modified: u.py\n\nArtifacts: [\"branch x\"]" in prompt
    assert findings_text(review) == "Needs work.\n- [major] u.py:3 — off by one\n- [nit] naming"
    report = final_report("THE GOAL", [build, review], RunStatus.WAITING_USER, None)
    assert report.startswith("Orchestrator stopped: your decision is needed: build ✓ → review (needs you)")
    assert "### Open findings from reviewer#1" in report and "**Files changed:** u.py" in report


def test_work_to_merge_lists_no_empty_branch() -> None:
    """Issue 24, item 13: a builder whose branch has no commit of its own is not offered for merging."""
    made = Step("a", "builder", "Do a.", status="done", label="builder#1",
                worktree={"id": "w1", "branch": "yeetui/build/a", "commits": 2})
    idle = Step("b", "builder", "Do b.", status="done", label="builder#2",
                worktree={"id": "w2", "branch": "yeetui/build/b", "commits": 0})
    report = final_report("GOAL", [made, idle], RunStatus.COMPLETED, None)
    to_merge = report.split("**Work to merge**")[1].split("**Nothing to merge**")[0]
    assert "/merge builder#1" in to_merge and "builder#2" not in to_merge
    assert "**Nothing to merge** from builder#2 (`/discard builder#2`): no changes on its branch." in report


def test_what_the_orchestrator_profile_allows(tmp_path) -> None:
    from yeetui.definitions.profile_loader import load_profiles

    profiles = load_profiles(project_dir=tmp_path, user_dir=tmp_path / "agents")
    orchestrator = profiles.get("orchestrator")
    assert allowed_profiles(orchestrator, profiles) == ALLOWED
    anything = orchestrator.model_copy(update={"allowed_children": None})
    assert {"oracle", "builder", "orchestrator"} <= allowed_profiles(anything, profiles)
    ghost = orchestrator.model_copy(update={"allowed_children": ["builder", "ghost"]})
    assert allowed_profiles(ghost, profiles) == {"builder"}
    assert review_loop_limit(orchestrator) == 2
    assert review_loop_limit(orchestrator.model_copy(update={"default_variables": {}})) == 2
    for bad in ("-1", "two", "1.5"):
        with pytest.raises(PlanError, match=f"max_review_loops '{bad}' in profile 'orchestrator'"):
            review_loop_limit(orchestrator.model_copy(update={"default_variables": {"max_review_loops": bad}}))
