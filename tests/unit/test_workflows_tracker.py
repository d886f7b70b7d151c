"""WorkflowTracker: tool refusals with reasons, transitions, exit-schema validation, persistence."""

from __future__ import annotations

from pathlib import Path

import pytest

from yeetui.definitions.workflows import Step, StepExit, Transition, Workflow, WorkflowTracker, load_workflow_file
from yeetui.errors import WorkflowError
from yeetui.resources import workflows_dir

VERDICT_SCHEMA = {
    "type": "object", "required": ["artifacts"],
    "properties": {"artifacts": {"type": "object", "required": ["verdict"],
                                 "properties": {"verdict": {"enum": ["approve", "request_changes"]}}}},
}


def _workflow() -> Workflow:
    return Workflow(
        name="build-review", description="Plan, build, review.",
        steps=[
            Step(name="plan", instructions="Read and plan.", allowed_tools=["read_file", "grep"],
                 transitions=[Transition(on_tool="complete", to="build")]),
            Step(name="build", instructions="Write the code.", blocked_tools=["spawn_subagent"],
                 transitions=[Transition(on_tool="request_review", to="review")]),
            Step(name="review", allowed_tools=["read_file"],
                 exit=StepExit(tool="submit", json_schema=VERDICT_SCHEMA)),
        ],
        output_schema={"type": "object", "required": ["output"]},
    )


def test_tool_outside_the_allow_list_is_refused_with_a_reason() -> None:
    tracker = WorkflowTracker(_workflow())
    assert tracker.step == "plan"
    reason = tracker.check_tool("bash")
    assert reason is not None
    assert reason.startswith("bash is blocked in workflow step 'plan' of workflow 'build-review'; "
                             "allowed here: read_file, grep, complete.")
    assert "call complete to move to step 'build'" in reason
    assert tracker.check_tool("read_file") is None and tracker.check_tool("grep") is None
    assert tracker.check_tool("complete") is None  # its transition tool is always usable


def test_blocked_tool_and_exit_tool_of_another_step() -> None:
    tracker = WorkflowTracker(_workflow(), {"step": "build"})
    reason = tracker.check_tool("spawn_subagent")
    assert reason is not None and reason.startswith(
        "spawn_subagent is blocked in workflow step 'build' of workflow 'build-review'; "
        "allowed here: every tool except spawn_subagent, submit.")
    assert tracker.check_tool("write_file") is None
    submit = tracker.check_tool("submit")
    assert submit is not None and "it finishes the workflow from step 'review'" in submit
    assert "call request_review to move to step 'review'" in submit


def test_transitions_move_only_on_success_of_the_named_tool() -> None:
    tracker = WorkflowTracker(_workflow())
    assert tracker.after_tool("read_file", {"path": "x"}, is_error=False) is None
    assert tracker.after_tool("complete", {"output": "the plan"}, is_error=True) is None
    assert tracker.step == "plan"
    assert tracker.after_tool("complete", {"output": "the plan"}, is_error=False) == "build"
    assert tracker.step == "build" and not tracker.is_exit("complete")
    assert tracker.after_tool("request_review", {}, is_error=False) == "review"
    assert tracker.state()["history"] == ["plan", "build"]


def test_exit_only_in_the_exit_step() -> None:
    tracker = WorkflowTracker(_workflow())
    assert not tracker.is_exit("submit") and not tracker.is_exit("complete")
    tracker = WorkflowTracker(_workflow(), {"step": "review"})
    assert tracker.is_exit("submit") and not tracker.finished
    assert tracker.after_tool("submit", {"artifacts": {"verdict": "approve"}}, is_error=False) is None
    assert tracker.finished and tracker.state()["finished"] is True


def test_exit_arguments_are_validated_against_the_step_schema() -> None:
    tracker = WorkflowTracker(_workflow(), {"step": "review"})
    assert tracker.exit_error("submit", {"artifacts": {"verdict": "approve"}}) is None
    reason = tracker.exit_error("submit", {"artifacts": {"verdict": "maybe"}})
    assert reason is not None
    assert reason.startswith("The arguments of submit do not match what workflow step 'review' of workflow "
                             "'build-review' requires: artifacts.verdict: 'maybe' is not one of")
    assert reason.endswith("Fix them and call submit again.")
    missing = tracker.exit_error("submit", {})
    assert missing is not None and "(arguments): 'artifacts' is a required property" in missing
    assert tracker.exit_error("read_file", {}) is None  # not an exit: nothing to validate
    assert WorkflowTracker(_workflow()).exit_error("submit", {}) is None  # not the exit step


def test_exit_without_its_own_schema_uses_the_output_schema() -> None:
    workflow = Workflow(name="w", steps=[Step(name="only", exit=StepExit())],
                        output_schema={"type": "object", "required": ["output"],
                                       "properties": {"output": {"type": "string", "minLength": 1}}})
    tracker = WorkflowTracker(workflow)
    assert tracker.exit_schema() == workflow.output_schema
    assert tracker.exit_error("complete", {"output": "done"}) is None
    reason = tracker.exit_error("complete", {"output": ""})
    assert reason is not None and "output: '' should be non-empty" in reason


def test_state_round_trip_and_instructions_carry_earlier_results() -> None:
    tracker = WorkflowTracker(_workflow())
    tracker.after_tool("complete", {"output": "Change auth.py only."}, is_error=False)
    resumed = WorkflowTracker(_workflow(), tracker.state())
    assert resumed.step == "build" and resumed.state() == tracker.state()
    text = resumed.instructions()
    assert text.startswith("## Workflow: build-review\nPlan, build, review.\n"
                           "Steps: plan ✓ → [build] → review")
    assert "### Current step: build\nWrite the code." in text
    assert "Tools usable in this step: every tool except spawn_subagent, submit." in text
    assert "A successful request_review call moves you to step 'review'." in text
    assert "- plan: Change auth.py only." in text
    final = WorkflowTracker(_workflow(), {"step": "review"}).instructions()
    assert "Calling submit finishes the workflow." in final and '"verdict"' in final


def test_bad_saved_state_is_a_clear_error() -> None:
    with pytest.raises(WorkflowError, match=r"at step 'gone', which workflow 'build-review' no longer has"):
        WorkflowTracker(_workflow(), {"step": "gone"})
    with pytest.raises(WorkflowError, match="belongs to workflow 'other'"):
        WorkflowTracker(_workflow(), {"workflow": "other", "step": "plan"})


def test_an_invalid_workflow_cannot_be_tracked() -> None:
    broken = Workflow(name="w", steps=[Step(name="a")])
    with pytest.raises(WorkflowError, match="no step has an 'exit'"):
        WorkflowTracker(broken)


def _builtin(name: str) -> Workflow:
    return load_workflow_file(Path(workflows_dir()) / f"{name}.yaml")


def test_builtin_build_review_runs_start_to_finish() -> None:
    tracker = WorkflowTracker(_builtin("build-review"))
    assert tracker.check_tool("edit_file") is not None and tracker.check_tool("grep") is None
    assert not tracker.is_exit("complete")
    assert tracker.after_tool("complete", {"output": "plan", "status": "success"}, False) == "build"
    assert tracker.check_tool("edit_file") is None and tracker.check_tool("bash") is None
    assert tracker.after_tool("complete", {"output": "built", "status": "success"}, False) == "review"
    assert tracker.is_exit("complete")
    reason = tracker.exit_error("complete", {"output": "done", "status": "success", "files_modified": []})
    assert reason is not None and "'artifacts' is a required property" in reason
    assert "files_modified: [] should be non-empty" in reason
    good = {"output": "done", "status": "success", "files_modified": ["app.py"],
            "artifacts": {"tests": "pytest -q: 12 passed"}}
    assert tracker.exit_error("complete", good) is None
    tracker.after_tool("complete", good, False)
    assert tracker.finished


def test_builtin_review_requires_findings_for_request_changes() -> None:
    tracker = WorkflowTracker(_builtin("review"))
    assert tracker.check_tool("write_file") is not None
    approve = {"output": "LGTM", "artifacts": {"verdict": "approve", "findings": []}}
    assert tracker.exit_error("complete", approve) is None
    empty = {"output": "no", "artifacts": {"verdict": "request_changes", "findings": []}}
    reason = tracker.exit_error("complete", empty)
    assert reason is not None and "artifacts.findings: [] should be non-empty" in reason
    finding = {"severity": "major", "file": "a.py", "line": 3, "message": "off by one"}
    assert tracker.exit_error("complete", {**empty, "artifacts": {"verdict": "request_changes",
                                                                   "findings": [finding]}}) is None
    bad = tracker.exit_error("complete", {"output": "x", "artifacts": {"verdict": "approve",
                                                                        "findings": [{"severity": "huge"}]}})
    assert bad is not None and "'message' is a required property" in bad and "'huge' is not one of" in bad


def test_builtin_default_workflow() -> None:
    tracker = WorkflowTracker(_builtin("default"))
    assert tracker.check_tool("bash") is None and tracker.is_exit("complete")
    reason = tracker.exit_error("complete", {"output": "x", "status": "done"})
    assert reason is not None and "status: 'done' is not one of ['success', 'partial', 'blocked']" in reason
