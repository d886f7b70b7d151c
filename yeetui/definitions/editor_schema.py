"""The JSON schemas published for editors: `schemas/profile.schema.json` and `schemas/workflow.schema.json`.

They are generated from the pydantic models of the profiles and workflows (`yeetui.definitions`), with each field's
attribute docstring as its description, by `python -m yeetui.definitions.editor_schema --schema [DIR]`; a test keeps
the committed files current. Nothing on yeetui's start-up path imports this module: reading the field
docstrings from the source and rebuilding the models is paid only when a schema is made.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from yeetui.definitions.profiles import Limits, Profile, Triggers, WorkspacePolicy
from yeetui.definitions.workflows import Step, StepExit, Transition, Workflow


def field_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """The attribute docstrings of `model`: the string right below a field, by field name."""
    docs: dict[str, str] = {}
    node = ast.parse(inspect.getsource(model)).body[0]
    assert isinstance(node, ast.ClassDef), f"{model.__name__}'s source is not a class"
    body = node.body
    for field_node, doc_node in itertools.pairwise(body):
        if (isinstance(field_node, ast.AnnAssign) and isinstance(field_node.target, ast.Name)
                and isinstance(doc_node, ast.Expr) and isinstance(doc_node.value, ast.Constant)
                and isinstance(doc_node.value.value, str)):
            docs[field_node.target.id] = inspect.cleandoc(doc_node.value.value)
    return docs


def describe_fields(*models: type[BaseModel]) -> None:
    """Make each field's attribute docstring its description, for the published JSON schemas; nested
    models come first. Pydantic's `use_attribute_docstrings` would do it when the class is created, and
    finding the source there costs ~30 ms of every start, which only the schemas need."""
    for model in models:
        docs = field_docstrings(model)
        undescribed = [(info, docs[name]) for name, info in model.model_fields.items()
                       if info.description is None and name in docs]
        for info, doc in undescribed:
            info.description = doc
        if undescribed:
            model.model_rebuild(force=True)


def for_editors(schema: dict[str, Any], title: str, optional: tuple[str, ...]) -> dict[str, Any]:
    """Make a pydantic schema fit for editors: draft header, files may name it via `$schema`, and fields
    defaulted from the file name (`optional`) are not required."""
    required = [r for r in schema.get("required", []) if r not in optional]
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    schema["properties"] = {"$schema": {"type": "string", "description": "Path or URL of this schema."},
                            **schema["properties"]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": title}


def profile_json_schema() -> dict[str, Any]:
    describe_fields(WorkspacePolicy, Limits, Triggers, Profile)
    return for_editors(Profile.model_json_schema(), "yeetui agent profile", ("name",))


def workflow_json_schema() -> dict[str, Any]:
    describe_fields(Transition, StepExit, Step, Workflow)
    return for_editors(Workflow.model_json_schema(), "yeetui workflow", ("name",))


def schema_text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write_schemas(directory: Path) -> list[Path]:
    """Write `profile.schema.json` and `workflow.schema.json` into `directory`; returns the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, schema in (("profile.schema.json", profile_json_schema()),
                             ("workflow.schema.json", workflow_json_schema())):
        path = directory / filename
        path.write_text(schema_text(schema), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "--schema" or len(argv) > 2:
        print("usage: python -m yeetui.definitions.editor_schema --schema [DIR]", file=sys.stderr)
        return 2
    for path in write_schemas(Path(argv[1] if len(argv) == 2 else "schemas")):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
