"""Workflow files: loading, layering, and validation errors that name the file, the step and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from yeetui.definitions.workflows import (
    Step,
    StepExit,
    Transition,
    Workflow,
    WorkflowFileError,
    check_workflow,
    load_workflow_file,
    load_workflows,
)
from yeetui.errors import WorkflowError

GOOD = """\
description: plan then do
steps:
  - name: plan
    allowed_tools: [read_file, grep]
    transitions:
      - on_tool: complete
        to: do
  - name: do
    exit:
      tool: complete
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _error(path: Path) -> WorkflowFileError:
    with pytest.raises(WorkflowFileError) as info:
        load_workflow_file(path)
    assert info.value.path == path and str(path) in str(info.value)
    return info.value


def test_a_good_file_loads_with_defaults(tmp_path: Path) -> None:
    workflow = load_workflow_file(_write(tmp_path / "two-step.yaml", GOOD))
    assert workflow.name == "two-step"  # from the file stem
    assert workflow.initial == "plan"  # the first step
    assert workflow.step("do").exit == StepExit(tool="complete")
    assert workflow.exit_tools == {"complete"}
    assert workflow.source == tmp_path / "two-step.yaml"


def test_json_workflow_and_schema_alias(tmp_path: Path) -> None:
    path = _write(tmp_path / "j.json", '{"$schema": "x", "name": "j", "steps": [{"name": "only", '
                                       '"exit": {"tool": "finish", "schema": {"type": "object"}}}]}')
    workflow = load_workflow_file(path)
    assert workflow.steps[0].exit is not None and workflow.steps[0].exit.json_schema == {"type": "object"}


def test_unknown_transition_target_names_file_step_and_line(tmp_path: Path) -> None:
    err = _error(_write(tmp_path / "w.yaml", GOOD.replace("to: do", "to: doo")))
    assert err.line == 7
    assert "line 7: step 'plan' has a transition to unknown step 'doo' (steps: plan, do)" in str(err)


def test_unknown_initial_step(tmp_path: Path) -> None:
    err = _error(_write(tmp_path / "w.yaml", "initial: start\n" + GOOD))
    assert err.line == 1 and "the initial step 'start' does not exist (steps: plan, do)" in str(err)


@pytest.mark.parametrize(("change", "line", "words"), [
    (("  - name: do\n", "  - name: plan\n    exit: {tool: complete}\n  - name: do\n"), 8,
     "the step name 'plan' is used twice"),
    (("    exit:\n      tool: complete\n", ""), 2, "no step has an 'exit'"),
    (("allowed_tools: [read_file, grep]", "allowed_tools: [grep]\n    blocked_tools: [grep]"), 5,
     "step 'plan' both allows and blocks grep"),
    (("allowed_tools: [read_file, grep]", "blocked_tools: [complete]"), 6,
     "step 'plan' blocks 'complete', so its transition on that tool can never happen"),
    (("      tool: complete\n", "      tool: complete\n    transitions: [{on_tool: complete, to: plan}]\n"),
     11,
     "in step 'do', 'complete' is both the exit and a transition"),
    (("      tool: complete\n", "      tool: complete\n      schema: {type: 12}\n"), 11,
     "'steps.1.exit.schema' is not a valid JSON Schema"),
    (("    allowed_tools", "    alowed_tools"), 4,
     "unknown field 'steps.0.alowed_tools' (did you mean 'allowed_tools'?)"),
    (("        to: do\n", ""), 6, "'steps.0.transitions.0.to': this field is required"),
    (("  - name: plan\n", "  - name: plan\n    exits: 3\n"), 4, "unknown field 'steps.0.exits'"),
])
def test_invalid_workflows_name_the_line(tmp_path: Path, change: tuple[str, str], line: int,
                                         words: str) -> None:
    assert change[0] in GOOD
    err = _error(_write(tmp_path / "w.yaml", GOOD.replace(*change)))
    assert f"line {line}: {words}" in str(err), str(err)
    assert err.line == line


def test_several_problems_are_all_listed(tmp_path: Path) -> None:
    text = GOOD.replace("to: do", "to: nowhere").replace("      tool: complete",
                                                          "      tool: finish\n      schema: {type: 1}")
    err = _error(_write(tmp_path / "w.yaml", text))
    assert "2 problems" in str(err) and "nowhere" in str(err) and "not a valid JSON Schema" in str(err)


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    err = _error(_write(tmp_path / "w.yaml", "steps:\n  - name: a\n    instructions: 'unterminated\n"))
    assert "invalid YAML" in str(err) and err.line is not None


def test_empty_steps_is_an_error(tmp_path: Path) -> None:
    err = _error(_write(tmp_path / "w.yaml", "steps: []\n"))
    assert "line 1: 'steps'" in str(err) and "at least 1" in str(err)


def test_layers_replace_whole_workflows_and_bad_files_do_not_stop_others(tmp_path: Path) -> None:
    builtin, user, project = tmp_path / "builtin", tmp_path / "user", tmp_path / "project"
    _write(builtin / "a.yaml", GOOD.replace("plan then do", "built-in a"))
    _write(builtin / "b.yaml", GOOD.replace("plan then do", "built-in b"))
    _write(user / "a.yaml", GOOD.replace("plan then do", "user a"))
    _write(project / ".yeetui" / "workflows" / "b.yml", "description: project b\nsteps:\n  - name: one\n"
                                                        "    exit: {tool: complete}\n")
    bad = _write(project / ".yeetui" / "workflows" / "c.yaml", GOOD.replace("to: do", "to: dont"))
    workflows, errors = load_workflows(project, user, builtin)
    assert {name: w.description for name, w in workflows.items()} == {"a": "user a", "b": "project b"}
    assert [s.name for s in workflows["b"].steps] == ["one"]  # replaced whole, not merged
    assert len(errors) == 1 and isinstance(errors[0], WorkflowFileError) and errors[0].path == bad


def test_same_name_twice_in_one_directory(tmp_path: Path) -> None:
    _write(tmp_path / "wf" / "a.yaml", GOOD)
    _write(tmp_path / "wf" / "b.yaml", "name: a\n" + GOOD.replace("plan then do", "second"))
    workflows, errors = load_workflows(tmp_path / "p", tmp_path / "u", tmp_path / "wf")
    assert workflows["a"].description == "plan then do"
    assert len(errors) == 1 and "b.yaml" in str(errors[0]) and "skipped" in str(errors[0])


def test_check_workflow_built_in_code() -> None:
    workflow = Workflow(name="w", steps=[Step(name="a", transitions=[Transition(on_tool="x", to="b")])])
    with pytest.raises(WorkflowError, match=r"Workflow 'w' is invalid: step 'a' has a transition to unknown "
                                            r"step 'b' \(steps: a\); no step has an 'exit'"):
        check_workflow(workflow)
    with pytest.raises(WorkflowError, match="has no step 'zzz'"):
        workflow.step("zzz")
