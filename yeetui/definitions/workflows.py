"""Workflows: step-by-step tool rules for a run, and the tracker that enforces them.

A workflow is a list of steps. Each step may restrict tools (`allowed_tools` / `blocked_tools`), move to
another step when a tool call succeeds (`transitions`), and end the workflow (`exit`, e.g. a `complete`
call whose arguments must validate against a JSON schema). A step's exit tool and its transition tools
are always usable in that step; a tool that is the exit of *another* step is refused, with a reason that
says where it applies. Runs that follow a workflow end when `WorkflowTracker.is_exit` says so.

Files: built-in `workflows/` → the user's (`<config dir>/workflows/`) → the project's
`.yeetui/workflows/`; a later file with the same name replaces the earlier one whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from yeetui.errors import WorkflowError, YeetuiError
from yeetui.resources import workflows_dir
from yeetui.yamlfile import YAML_SUFFIXES, Document, DocumentError, KeyPath, load_document, validation_issues

_CONFIG = ConfigDict(extra="forbid", populate_by_name=True)
"""The fields' docstrings become their descriptions in the published JSON schema (`editor_schema`)."""
_OUTPUT_CAP = 1500


class Transition(BaseModel):
    model_config = _CONFIG

    on_tool: str
    """A successful call of this tool moves the run to step `to`."""
    to: str
    """Name of the next step."""


class StepExit(BaseModel):
    model_config = _CONFIG

    tool: str = "complete"
    """A successful call of this tool in this step ends the workflow."""
    json_schema: dict[str, Any] | None = Field(None, alias="schema")
    """JSON Schema the tool's arguments must match; None falls back to the workflow's `output_schema`."""


class Step(BaseModel):
    model_config = _CONFIG

    name: str = Field(min_length=1)
    """Unique step name."""
    instructions: str = ""
    """What to do in this step; added to the system prompt while the step is current."""
    allowed_tools: list[str] | None = None
    """The only tools usable in this step (besides its exit and transition tools); None means all."""
    blocked_tools: list[str] = Field(default_factory=list)
    """Tools refused in this step."""
    transitions: list[Transition] = Field(default_factory=list)
    """Where successful tool calls lead; the first matching transition wins."""
    exit: StepExit | None = None
    """How the workflow ends from this step."""

    @property
    def own_tools(self) -> list[str]:
        """Tools always usable in this step: its exit tool and its transition tools."""
        tools = ([self.exit.tool] if self.exit else []) + [t.on_tool for t in self.transitions]
        return list(dict.fromkeys(tools))


class Workflow(BaseModel):
    model_config = ConfigDict(**_CONFIG, title="yeetui workflow")

    name: str = Field(min_length=1)
    """Workflow name; defaults to the file name without suffix."""
    description: str = ""
    """What the workflow is for."""
    model: str | None = Field(None, pattern=r"^([A-Za-z0-9_.-]+/.+|strong|default|fast)$")
    """Model (`provider/model`) for runs that follow this workflow: below a spawn's or `--model`'s choice,
    above the profile's."""
    initial: str = ""
    """The step a run starts in; defaults to the first step."""
    steps: list[Step] = Field(min_length=1)
    """The steps, in the order they are shown."""
    output_schema: dict[str, Any] | None = None
    """JSON Schema for exit-tool arguments of steps whose `exit` has no schema of its own."""

    _source: Path | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _default_initial(self) -> Workflow:
        if not self.initial:
            self.initial = self.steps[0].name
        return self

    @property
    def source(self) -> Path | None:
        return self._source

    def step(self, name: str) -> Step:
        for step in self.steps:
            if step.name == name:
                return step
        raise WorkflowError(f"Workflow '{self.name}' has no step '{name}' (steps: {self.step_names()}).")

    def step_names(self) -> str:
        return ", ".join(s.name for s in self.steps)

    @property
    def exit_tools(self) -> set[str]:
        return {s.exit.tool for s in self.steps if s.exit}


def workflow_problems(workflow: Workflow, *, check_schemas: bool = True) -> list[tuple[KeyPath, str]]:
    """What is wrong beyond field types: unknown step names, impossible transitions, bad schemas (unless
    `check_schemas` is false). Each problem comes with the key path it is about (for finding its line)."""
    problems: list[tuple[KeyPath, str]] = []
    names = [s.name for s in workflow.steps]
    known = ", ".join(names)
    for i, step in enumerate(workflow.steps):
        where = f"step '{step.name}'"
        if names.index(step.name) != i:
            problems.append((("steps", i, "name"), f"the step name '{step.name}' is used twice"))
        both = sorted(set(step.allowed_tools or []) & set(step.blocked_tools))
        if both:
            problems.append((("steps", i, "blocked_tools"),
                             f"{where} both allows and blocks {', '.join(both)}"))
        for j, transition in enumerate(step.transitions):
            loc = ("steps", i, "transitions", j)
            if transition.to not in names:
                problems.append(((*loc, "to"), f"{where} has a transition to unknown step '{transition.to}' "
                                 f"(steps: {known})"))
            if transition.on_tool in step.blocked_tools:
                problems.append(((*loc, "on_tool"), f"{where} blocks '{transition.on_tool}', so its "
                                 "transition on that tool can never happen"))
            if step.exit and step.exit.tool == transition.on_tool:
                problems.append(((*loc, "on_tool"), f"in {where}, '{transition.on_tool}' is both the exit "
                                 "and a transition; it must be one or the other"))
        if step.exit and step.exit.tool in step.blocked_tools:
            problems.append((("steps", i, "exit", "tool"),
                             f"{where} blocks its own exit tool '{step.exit.tool}'"))
        if check_schemas and step.exit and step.exit.json_schema is not None:
            problems += _schema_problems(("steps", i, "exit", "schema"), step.exit.json_schema)
    if check_schemas and workflow.output_schema is not None:
        problems += _schema_problems(("output_schema",), workflow.output_schema)
    if workflow.initial not in names:
        problems.append((("initial",),
                         f"the initial step '{workflow.initial}' does not exist (steps: {known})"))
    if not workflow.exit_tools:
        problems.append((("steps",), "no step has an 'exit', so a run of this workflow could never finish"))
    return problems


def _schema_problems(loc: KeyPath, schema: dict[str, Any]) -> list[tuple[KeyPath, str]]:
    from jsonschema import SchemaError, validators  # lazy: only workflows with schemas pay for it

    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        return [(loc, f"'{'.'.join(map(str, loc))}' is not a valid JSON Schema: {exc.message}")]
    return []


def check_workflow(workflow: Workflow) -> Workflow:
    """Raise WorkflowError listing every problem of a workflow built in code."""
    problems = workflow_problems(workflow)
    if problems:
        raise WorkflowError(f"Workflow '{workflow.name}' is invalid: {'; '.join(p for _, p in problems)}.")
    return workflow


class WorkflowFileError(WorkflowError):
    """A WorkflowError about a file, with its path and line. `warning`: nothing was skipped."""

    def __init__(self, message: str, *, path: Path, line: int | None = None, warning: bool = False) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.warning = warning


def load_workflow_file(path: Path, *, check_schemas: bool = True) -> Workflow:
    """Parse and fully check one workflow file; raises WorkflowFileError naming the file and line.
    `check_schemas=False` skips checking its JSON schemas against the JSON Schema meta-schema."""
    try:
        doc = load_document(path)
    except DocumentError as exc:
        raise WorkflowFileError(f"Workflow file {exc}.", path=path, line=exc.line) from None
    data = {k: v for k, v in doc.data.items() if k != "$schema"}
    data.setdefault("name", path.stem)
    doc = Document(path, data, None, doc.lines)
    try:
        workflow = Workflow.model_validate(data)
    except ValidationError as exc:
        raise _file_error(path, validation_issues(exc, doc, Workflow)) from None
    problems = workflow_problems(workflow, check_schemas=check_schemas)
    if problems:
        raise _file_error(path, sorted((doc.line_of(loc), text) for loc, text in problems))
    workflow._source = path
    return workflow


def _file_error(path: Path, issues: list[tuple[int, str]]) -> WorkflowFileError:
    listed = "; ".join(f"line {line}: {reason}" for line, reason in issues)
    if len(issues) == 1:
        return WorkflowFileError(f"Workflow file {path}, {listed}.", path=path, line=issues[0][0])
    return WorkflowFileError(f"Workflow file {path} has {len(issues)} problems: {listed}.", path=path,
                             line=issues[0][0])


def load_workflows(project_dir: Path, user_dir: Path, builtin_dir: Path | None = None
                   ) -> tuple[dict[str, Workflow], list[WorkflowError]]:
    """Load all workflows. `project_dir` is the project root; `user_dir` is the directory of the user's
    workflow files (`<config dir>/workflows`); `builtin_dir` is the directory of built-in workflow files
    (default: the shipped `workflows/`). Bad files are reported in the returned list and skipped; the
    others still load.

    The built-in files' JSON schemas are not re-checked here: they ship with yeetui and its tests check
    them (tests/unit/test_workflows_tracker.py loads each fully); checking them at every start would import
    jsonschema (~60 ms) before the first session opens. The user's and the project's files are checked."""
    workflows: dict[str, Workflow] = {}
    errors: list[WorkflowError] = []
    if builtin_dir is None:
        try:
            builtin_dir = workflows_dir()
        except YeetuiError as exc:
            errors.append(WorkflowError(str(exc)))
    layers = [d for d in (builtin_dir, user_dir, project_dir / ".yeetui" / "workflows") if d]
    for directory in layers:
        if not directory.is_dir():
            continue
        seen: dict[str, Path] = {}
        for path in sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")
                           and p.suffix.lower() in (*YAML_SUFFIXES, ".json")):
            try:
                workflow = load_workflow_file(path, check_schemas=directory != builtin_dir)
            except WorkflowFileError as exc:
                errors.append(exc)
                continue
            if workflow.name in seen:
                errors.append(WorkflowFileError(
                    f"Workflow file {path} defines '{workflow.name}', which {seen[workflow.name]} in the "
                    "same directory already defines; the file was skipped.", path=path, warning=True))
                continue
            seen[workflow.name] = path
            workflows[workflow.name] = workflow
    return workflows, errors


class WorkflowTracker:
    """Where one run is in its workflow; answers the runner's questions before and after each tool call.

    Use: `check_tool` before running a tool (a returned reason goes back to the model as an error);
    `exit_error` before running an exit tool; `after_tool` after every call; `is_exit` to know whether a
    call ends the run; `instructions` for the system prompt; `state` to persist and resume."""

    def __init__(self, workflow: Workflow, state: dict[str, Any] | None = None) -> None:
        self.workflow = check_workflow(workflow)
        state = state or {}
        if state.get("workflow", workflow.name) != workflow.name:
            raise WorkflowError(f"Saved workflow state belongs to workflow '{state['workflow']}', "
                                f"not '{workflow.name}'.")
        self._step: str = state.get("step") or workflow.initial
        if self._step not in {s.name for s in workflow.steps}:
            raise WorkflowError(f"Saved workflow state is at step '{self._step}', which workflow "
                                f"'{workflow.name}' no longer has (steps: {workflow.step_names()}).")
        self._history: list[str] = list(state.get("history", []))
        self._outputs: dict[str, str] = dict(state.get("outputs", {}))
        self._finished: bool = bool(state.get("finished", False))

    @property
    def step(self) -> str:
        return self._step

    @property
    def finished(self) -> bool:
        return self._finished

    def _current(self) -> Step:
        return self.workflow.step(self._step)

    def _where(self) -> str:
        return f"workflow step '{self._step}' of workflow '{self.workflow.name}'"

    def _usable(self, step: Step) -> str:
        if step.allowed_tools is None:
            blocked = step.blocked_tools + sorted(self.workflow.exit_tools - set(step.own_tools))
            return "every tool except " + ", ".join(blocked) if blocked else "every tool"
        return ", ".join(dict.fromkeys(step.allowed_tools + step.own_tools)) or "no tools"

    def check_tool(self, name: str) -> str | None:
        """None if `name` may run now, else the reason to give the model."""
        step = self._current()
        if name in step.own_tools:
            return None  # a step never blocks its own exit or transition tools (workflow_problems)
        if name in step.blocked_tools or (step.allowed_tools is not None and name not in step.allowed_tools
                                          and name not in self.workflow.exit_tools):
            return f"{name} is blocked in {self._where()}; allowed here: {self._usable(step)}.{self._hint(step)}"
        if name in self.workflow.exit_tools:
            ends = ", ".join(f"'{s.name}'" for s in self.workflow.steps if s.exit and s.exit.tool == name)
            return (f"{name} cannot be used in {self._where()}; it finishes the workflow from step {ends}."
                    f"{self._hint(step)}")
        return None

    def _hint(self, step: Step) -> str:
        moves = [f"call {t.on_tool} to move to step '{t.to}'" for t in step.transitions]
        if step.exit:
            moves.append(f"call {step.exit.tool} to finish")
        return f" To go on, {' or '.join(moves)}." if moves else ""

    def is_exit(self, tool_name: str) -> bool:
        """Whether a successful call of `tool_name` in the current step ends the workflow (and the run)."""
        step = self._current()
        return step.exit is not None and step.exit.tool == tool_name

    def exit_schema(self) -> dict[str, Any] | None:
        step = self._current()
        if step.exit is None:
            return None
        return step.exit.json_schema if step.exit.json_schema is not None else self.workflow.output_schema

    def exit_error(self, tool_name: str, arguments: dict[str, Any]) -> str | None:
        """None if `arguments` are acceptable for ending the workflow with `tool_name` (or if that call
        does not end it); else a reason naming every mismatch, for the model to fix and retry."""
        schema = self.exit_schema() if self.is_exit(tool_name) else None
        if schema is None:
            return None
        from jsonschema import validators  # lazy: ~60 ms to import, paid only by runs that end with a schema

        validator = validators.validator_for(schema)(schema)
        errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
        if not errors:
            return None
        listed = "; ".join(f"{'.'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {e.message}"
                           for e in errors[:8])
        more = f" (and {len(errors) - 8} more)" if len(errors) > 8 else ""
        return (f"The arguments of {tool_name} do not match what {self._where()} requires: {listed}{more}. "
                f"Fix them and call {tool_name} again.")

    def after_tool(self, name: str, arguments: dict[str, Any], is_error: bool) -> str | None:
        """Record a finished tool call; returns the new step's name when a transition happened."""
        if is_error or self._finished:
            return None
        step = self._current()
        output = arguments.get("output") if isinstance(arguments, dict) else None
        if self.is_exit(name):
            self._finished = True
            if isinstance(output, str):
                self._outputs[step.name] = output[:_OUTPUT_CAP]
            return None
        for transition in step.transitions:
            if transition.on_tool == name:
                if isinstance(output, str):
                    self._outputs[step.name] = output[:_OUTPUT_CAP]
                self._history.append(step.name)
                self._step = transition.to
                return transition.to
        return None

    def instructions(self) -> str:
        """The workflow section of the system prompt for the current step."""
        wf, step = self.workflow, self._current()
        done = set(self._history)
        path = " → ".join(f"[{s.name}]" if s.name == step.name else s.name + (" ✓" if s.name in done else "")
                          for s in wf.steps)
        lines = [f"## Workflow: {wf.name}"]
        if wf.description:
            lines.append(wf.description.strip())
        lines += [f"Steps: {path}", "", f"### Current step: {step.name}"]
        if step.instructions:
            lines.append(step.instructions.strip())
        lines.append(f"Tools usable in this step: {self._usable(step)}.")
        lines += [f"A successful {t.on_tool} call moves you to step '{t.to}'." for t in step.transitions]
        if step.exit:
            lines.append(f"Calling {step.exit.tool} finishes the workflow.")
            schema = self.exit_schema()
            if schema is not None:
                shown = json.dumps(schema, sort_keys=True)
                lines.append(f"Its arguments must match this JSON Schema: {shown}")
        earlier = [(name, text) for name, text in self._outputs.items() if name != step.name]
        if earlier:
            lines += ["", "### Results of earlier steps"]
            lines += [f"- {name}: {text}" for name, text in earlier]
        return "\n".join(lines)

    def state(self) -> dict[str, Any]:
        """JSON-safe state; `WorkflowTracker(workflow, state)` resumes from it."""
        return {"workflow": self.workflow.name, "step": self._step, "history": list(self._history),
                "outputs": dict(self._outputs), "finished": self._finished}
