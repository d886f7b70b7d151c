"""What every start of yeetui pays for: the shortcuts taken must not change what is read or reported.

- YAML files go through libyaml when PyYAML has it; the data and the key lines must be those of the
  pure-Python parser, and a broken file must still get the pure-Python parser's message.
- Built-in workflows are loaded without checking their JSON schemas against the meta-schema (that needs
  jsonschema, ~60 ms to import); the user's and the project's files are still checked.
- Field docstrings become schema descriptions only when a JSON schema is generated.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from yeetui import yamlfile
from yeetui.definitions.editor_schema import profile_json_schema
from yeetui.definitions.profiles import Profile
from yeetui.definitions.workflows import load_workflows
from yeetui.resources import DataName, builtin_dir

REPO = Path(__file__).resolve().parents[2]
KINDS: tuple[DataName, ...] = ("agents", "workflows")
BUILT_IN = sorted(p for kind in KINDS for p in builtin_dir(kind).iterdir()
                  if p.suffix in (".md", ".yaml", ".yml", ".json"))


@pytest.mark.skipif(yamlfile._FastLoader is None, reason="PyYAML without libyaml: only one parser")
@pytest.mark.parametrize("path", BUILT_IN, ids=lambda p: p.name)
def test_libyaml_reads_the_built_in_files_like_the_python_parser(path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fast = yamlfile.load_document(path)
    monkeypatch.setattr(yamlfile, "_FastLoader", None)
    slow = yamlfile.load_document(path)
    assert (fast.data, dict(fast.lines), fast.body) == (slow.data, dict(slow.lines), slow.body)


def test_a_broken_file_gets_the_python_parsers_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nsteps:\n  - name: a\n   instructions: [unclosed\n", encoding="utf-8")
    with pytest.raises(yamlfile.DocumentError) as fast:
        yamlfile.load_document(path)
    monkeypatch.setattr(yamlfile, "_FastLoader", None)
    with pytest.raises(yamlfile.DocumentError) as slow:
        yamlfile.load_document(path)
    assert str(fast.value) == str(slow.value) and fast.value.line == slow.value.line


def test_yaml_one_point_two_booleans_hold_with_either_parser(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("thinking: off\nallow: yes\nflag: true\n", encoding="utf-8")
    fast = yamlfile.load_document(path).data
    monkeypatch.setattr(yamlfile, "_FastLoader", None)
    assert fast == yamlfile.load_document(path).data == {"thinking": "off", "allow": "yes", "flag": True}


def test_loading_the_built_in_workflows_does_not_import_jsonschema(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from yeetui.definitions.workflows import load_workflows; "
            f"w, e = load_workflows(Path({str(tmp_path)!r}), Path({str(tmp_path / 'user')!r})); "
            "assert w and not e, e; print('jsonschema' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip() == "False"


def test_a_users_workflow_with_a_broken_schema_is_still_reported(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "strict.yaml").write_text(
        "steps:\n  - name: only\n    exit:\n      tool: complete\n      schema: {type: 12}\n", encoding="utf-8")
    workflows, errors = load_workflows(tmp_path, user)
    assert "strict" not in workflows
    assert len(errors) == 1 and "not a valid JSON Schema" in str(errors[0]) and "line 5" in str(errors[0])


def test_field_docstrings_are_the_schema_descriptions() -> None:
    schema = profile_json_schema()
    assert schema["properties"]["description"]["description"].startswith("One line saying when to use")
    assert schema["$defs"]["Limits"]["properties"]["max_turns"]["description"]
    assert Profile.model_fields["description"].description  # set once a schema was made


async def test_a_runtime_whose_opening_is_cancelled_leaves_no_store_open(tmp_path, monkeypatch) -> None:
    """An app quit while its runtime is still opening: the store opened so far is closed again — its threads
    would otherwise keep the process from exiting (seen as a TUI that did not exit after ctrl+q)."""
    import asyncio
    import threading

    import yeetui.runtime as runtime_module

    before = {t.ident for t in threading.enumerate()}
    reached, release = threading.Event(), threading.Event()

    def slow_mcp_servers(project_dir, env, grants, sandbox):
        reached.set()
        release.wait(30)
        return [], []

    monkeypatch.setattr(runtime_module, "startable_servers", slow_mcp_servers)
    (tmp_path / "project").mkdir()
    opening = asyncio.ensure_future(runtime_module.Runtime.open(cwd=tmp_path / "project", recover=False))
    await asyncio.to_thread(reached.wait, 30)
    opening.cancel()
    release.set()
    await asyncio.wait({opening})
    assert opening.cancelled()
    started = [t for t in threading.enumerate() if t.ident not in before and not t.daemon
               and not t.name.startswith("asyncio_")]  # the event loop's own executor: joined at its shutdown
    for thread in started:  # a closed connection's thread ends a moment after the close returns
        await asyncio.to_thread(thread.join, 10)
    assert not [t for t in started if t.is_alive()], started
