"""The shipped agent profiles and workflows, the published JSON schemas, and where the data is found."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from yeetui import resources
from yeetui.definitions.editor_schema import profile_json_schema, schema_text, workflow_json_schema, write_schemas
from yeetui.definitions.profile_loader import load_profiles
from yeetui.definitions.profiles import ProfileSet
from yeetui.definitions.workflows import load_workflows
from yeetui.errors import YeetuiError
from yeetui.yamlfile import load_document

REPO = Path(__file__).resolve().parents[2]
BUILTIN_NAMES = {"generic", "oracle", "reviewer", "pair", "orchestrator", "planner", "builder"}
READ_TOOLS = ["read_file", "list_dir", "glob", "grep", "bash"]


@pytest.fixture(scope="module")
def builtins(tmp_path_factory: pytest.TempPathFactory) -> ProfileSet:
    empty = tmp_path_factory.mktemp("empty")
    return load_profiles(project_dir=empty, user_dir=empty / "agents")


def test_all_builtin_agents_load_without_errors(builtins: ProfileSet) -> None:
    assert builtins.errors == []
    assert set(builtins.profiles) == BUILTIN_NAMES
    for profile in builtins:
        assert len(profile.prompt) > 800, f"{profile.name} has a thin prompt"
        assert profile.description and profile.exit_tools == ["complete"]
        assert profile.sources == (resources.agents_dir() / f"{profile.name}.md",)


def test_builtin_agents_match_the_spec(builtins: ProfileSet) -> None:
    generic = builtins.get("generic")
    assert generic.capabilities == ["primary", "subtask"]
    assert generic.limits.can_spawn_children and generic.limits.max_depth == 1

    oracle = builtins.get("oracle")
    assert oracle.capabilities == ["subtask"] and oracle.read_only
    assert oracle.tools == READ_TOOLS
    assert oracle.model == "strong"  # a tier: resolved for the user's provider
    assert (oracle.thinking, oracle.triggers.slash) == ("high", "/oracle")

    reviewer = builtins.get("reviewer")
    assert reviewer.read_only and reviewer.triggers.slash == "/review" and reviewer.workflow == "review"
    assert "request_changes" in reviewer.prompt and "findings" in reviewer.prompt

    pair = builtins.get("pair")
    assert pair.capabilities == ["watcher", "subtask"] and pair.read_only
    assert (pair.triggers.hotkey, pair.triggers.slash, pair.thinking) == ("f2", "/pair", "off")

    orchestrator = builtins.get("orchestrator")
    assert orchestrator.capabilities == ["orchestrator", "subtask"]
    assert orchestrator.limits.can_spawn_children and orchestrator.limits.max_depth == 2
    assert orchestrator.triggers.slash == "/orchestrate"
    assert orchestrator.allowed_children == ["planner", "builder", "reviewer"]

    assert builtins.get("planner").read_only and builtins.get("planner").capabilities == ["subtask"]
    builder = builtins.get("builder")
    assert not builder.read_only and builder.workspace.isolation == "worktree"
    assert builtins.with_capability("primary") == [generic]
    assert builtins.by_hotkey("f2") is pair


def test_builtin_workflows_load_and_profiles_reference_them(builtins: ProfileSet, tmp_path: Path) -> None:
    workflows, errors = load_workflows(tmp_path, tmp_path / "workflows")
    assert errors == []
    assert {"default", "build-review", "review"} <= set(workflows)
    assert builtins.check_workflows(workflows) == []


def test_schema_files_are_current() -> None:
    for name, schema in (("profile.schema.json", profile_json_schema()),
                         ("workflow.schema.json", workflow_json_schema())):
        committed = (REPO / "schemas" / name).read_text(encoding="utf-8")
        assert committed == schema_text(schema), (
            f"schemas/{name} is stale; regenerate with `python -m yeetui.definitions.editor_schema --schema schemas`")


def test_write_schemas_and_the_module_entry_point(tmp_path: Path) -> None:
    written = write_schemas(tmp_path / "a")
    assert [p.name for p in written] == ["profile.schema.json", "workflow.schema.json"]
    proc = subprocess.run([sys.executable, "-m", "yeetui.definitions.editor_schema", "--schema", str(tmp_path / "b")],
                          capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    for path in written:
        assert (tmp_path / "b" / path.name).read_text() == path.read_text()
    bad = subprocess.run([sys.executable, "-m", "yeetui.definitions.editor_schema"], capture_output=True, text=True,
                         cwd=REPO, timeout=60, check=False)
    assert bad.returncode == 2 and "usage" in bad.stderr


def _data(path: Path) -> dict:
    doc = load_document(path)
    data = dict(doc.data)
    if doc.body and doc.body.strip():
        data["prompt"] = doc.body.strip()
    return data


def test_builtin_files_validate_against_the_published_schemas() -> None:
    profile_schema = json.loads((REPO / "schemas" / "profile.schema.json").read_text())
    workflow_schema = json.loads((REPO / "schemas" / "workflow.schema.json").read_text())
    for path in sorted(resources.agents_dir().glob("*.md")):
        jsonschema.validate(_data(path), profile_schema)
    for path in sorted(resources.workflows_dir().glob("*.yaml")):
        jsonschema.validate(_data(path), workflow_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"modle": "x"}, profile_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"triggers": {"slash": 3}}, profile_schema)


def test_resources_prefer_the_package_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resources.agents_dir() == REPO / "agents"  # a source checkout
    package = tmp_path / "yeetui"
    (package / "_data" / "agents").mkdir(parents=True)
    monkeypatch.setattr(resources, "_PACKAGE_DIR", package)
    assert resources.agents_dir() == package / "_data" / "agents"  # an installed wheel
    with pytest.raises(YeetuiError, match=r"built-in 'workflows' directory is missing \(looked in .*_data"):
        resources.workflows_dir()


def test_loading_profiles_does_not_import_textual_or_jsonschema() -> None:
    code = ("import sys; from pathlib import Path; from yeetui.definitions.profile_loader import load_profiles; "
            "from yeetui.definitions.workflows import load_workflows; p = Path('.'); "
            "assert load_profiles(project_dir=p, user_dir=p / 'none').errors == []; "
            "print(sorted(m for m in ('textual', 'jsonschema', 'litellm') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_built_in_external_agents_are_offered_only_when_their_program_is_installed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from yeetui.application.doctor import external_agents_check
    from yeetui.definitions.profile_loader import load_profiles

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    opencode = bin_dir / "opencode"
    opencode.write_text("#!/bin/sh\nexit 0\n")
    opencode.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    project = tmp_path / "project"
    project.mkdir()
    loaded = load_profiles(project_dir=project, user_dir=tmp_path / "user")
    offered = loaded.get("opencode")
    assert offered.runner == "acp" and offered.acp is not None and offered.acp.args == ["acp"]
    assert {"claude-code", "codex", "gemini-cli"} <= set(loaded.not_installed)
    assert not {"claude-code", "codex", "gemini-cli"} & set(loaded.names())
    said = external_agents_check(project).detail
    assert said.startswith("found: opencode; not installed: claude-code (claude-agent-acp)"), said
    # the user's own file may point at the program where it is: then it is offered
    user = tmp_path / "user"
    user.mkdir()
    (user / "codex.yaml").write_text(f"acp: {{command: {opencode}}}\n")
    assert load_profiles(project_dir=project, user_dir=user).get("codex").acp.command == str(opencode)
