"""Profile files: formats, field-by-field layering, and errors that name the file and the line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from yeetui.definitions.profile_loader import load_profiles, validate_profile_file
from yeetui.definitions.profiles import Profile, ProfileFileError, ProfileSet, merge_fields
from yeetui.errors import ProfileError


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    d = {"builtin": tmp_path / "builtin", "user": tmp_path / "user" / "agents",
         "project": tmp_path / "project"}
    for path in d.values():
        path.mkdir(parents=True)
    d["local"] = d["project"] / ".yeetui" / "agents"
    d["local"].mkdir(parents=True)
    return d


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _load(d: dict[str, Path]) -> ProfileSet:
    return load_profiles(project_dir=d["project"], user_dir=d["user"], builtin_dir=d["builtin"])


def _only_error(result: ProfileSet) -> ProfileFileError:
    assert len(result.errors) == 1, [str(e) for e in result.errors]
    err = result.errors[0]
    assert isinstance(err, ProfileFileError)
    return err


def test_yaml_json_and_markdown_formats(dirs: dict[str, Path]) -> None:
    _write(dirs["local"] / "alpha.yaml", "description: from yaml\nprompt: Be alpha.\nthinking: low\n")
    _write(dirs["local"] / "beta.json", json.dumps({"description": "from json", "model": "openai/gpt-5",
                                                     "capabilities": ["primary"]}))
    _write(dirs["local"] / "gamma.md", "---\ndescription: from markdown\ntools: [read_file, grep]\n---\n\n"
                                       "# Gamma\n\nYou are gamma.\n")
    _write(dirs["local"] / "delta.yml", "name: renamed\ndescription: name field beats the stem\n")
    result = _load(dirs)
    assert result.errors == []
    assert set(result.profiles) == {"alpha", "beta", "gamma", "renamed"}
    assert result.get("alpha").prompt == "Be alpha." and result.get("alpha").thinking == "low"
    beta = result.get("beta")
    assert (beta.model, beta.capabilities, beta.description) == ("openai/gpt-5", ["primary"], "from json")
    gamma = result.get("gamma")
    assert gamma.prompt == "# Gamma\n\nYou are gamma."
    assert gamma.tools == ["read_file", "grep"]
    assert gamma.sources == (dirs["local"] / "gamma.md",)
    assert "sources" not in gamma.model_dump()


def test_defaults_of_an_empty_profile(dirs: dict[str, Path]) -> None:
    _write(dirs["local"] / "plain.yaml", "")
    profile = _load(dirs).get("plain")
    assert profile.capabilities == ["subtask"]
    assert profile.exit_tools == ["complete"]
    assert profile.tools is None and profile.disallowed_tools == []
    assert (profile.limits.max_turns, profile.limits.timeout, profile.limits.max_depth) == (50, 300.0, 1)
    assert profile.limits.can_spawn_children is False and profile.limits.max_nudges == 3
    assert profile.workspace.allow_writes is True and profile.workspace.isolation == "current"
    assert profile.workspace.branch_prefix == "yeetui/" and profile.mode == "in_process"


def test_markdown_without_front_matter_is_a_prompt_only_override(dirs: dict[str, Path]) -> None:
    _write(dirs["builtin"] / "helper.yaml", "description: built in\nprompt: old prompt\nthinking: high\n")
    _write(dirs["local"] / "helper.md", "Use the new prompt.\n")
    helper = _load(dirs).get("helper")
    assert (helper.prompt, helper.description, helper.thinking) == ("Use the new prompt.", "built in", "high")


def test_prompt_in_both_front_matter_and_body_is_an_error(dirs: dict[str, Path]) -> None:
    path = _write(dirs["local"] / "twice.md", "---\ndescription: x\nprompt: one\n---\ntwo\n")
    err = _only_error(_load(dirs))
    assert str(path) in str(err) and "line 3" in str(err) and "Markdown body" in str(err)


def test_layers_merge_field_by_field(dirs: dict[str, Path]) -> None:
    _write(dirs["builtin"] / "helper.yaml", """\
description: built-in helper
tools: [read_file, grep]
limits: {max_turns: 10, timeout: 100}
workspace: {allow_writes: false}
permissions:
  bash: {"*": ask, "git *": allow}
triggers: {slash: /helper}
default_variables: {tone: terse, lang: en}
""")
    _write(dirs["user"] / "helper.json", json.dumps({
        "limits": {"timeout": 200}, "tools": ["bash"], "permissions": {"bash": {"git push*": "deny"}},
        "default_variables": {"lang": "de"}}))
    _write(dirs["local"] / "helper.md", "---\nmodel: openai/gpt-5\nlimits: {max_turns: 20}\n"
                                        "permissions: {write_file: deny}\n---\nProject prompt.\n")
    helper = _load(dirs).get("helper")
    assert helper.description == "built-in helper"  # only the built-in sets it
    assert helper.model == "openai/gpt-5" and helper.prompt == "Project prompt."
    assert (helper.limits.max_turns, helper.limits.timeout) == (20, 200)  # nested: per key
    assert helper.workspace.allow_writes is False
    assert helper.tools == ["bash"]  # lists replace
    assert helper.permissions == {"bash": {"*": "ask", "git *": "allow", "git push*": "deny"},
                                  "write_file": "deny"}
    assert helper.triggers.slash == "/helper"
    assert helper.default_variables == {"tone": "terse", "lang": "de"}
    assert helper.sources == (dirs["builtin"] / "helper.yaml", dirs["user"] / "helper.json",
                              dirs["local"] / "helper.md")


def test_merge_moves_overridden_patterns_last_and_null_replaces() -> None:
    base: dict[str, Any] = {"permissions": {"bash": {"*": "ask", "git *": "allow"}}, "model": "a/b"}
    merged = merge_fields(base, {"permissions": {"bash": {"*": "deny"}}, "model": None})
    assert list(merged["permissions"]["bash"].items()) == [("git *", "allow"), ("*", "deny")]
    assert merged["model"] is None
    assert base["permissions"]["bash"] == {"*": "ask", "git *": "allow"}  # inputs untouched


def test_broken_yaml_names_file_and_line_and_others_still_load(dirs: dict[str, Path]) -> None:
    _write(dirs["builtin"] / "base.yaml", "description: fine\n")
    bad = _write(dirs["local"] / "broken.yaml", "description: x\ntools: [read_file, grep\nthinking: high\n")
    _write(dirs["local"] / "good.yaml", "description: also fine\n")
    result = _load(dirs)
    err = _only_error(result)
    assert err.path == bad and err.line == 3
    assert str(err).startswith(f"Profile file {bad}, line 3: invalid YAML")
    assert "starts on line 2" in str(err) and "skipped" in str(err)
    assert set(result.profiles) == {"base", "good"}


def test_broken_override_keeps_the_lower_layer(dirs: dict[str, Path]) -> None:
    _write(dirs["builtin"] / "helper.yaml", "description: built in\nmodel: anthropic/claude-sonnet-4-5\n")
    _write(dirs["local"] / "helper.yaml", "model: openai/gpt-5\nlimits: {max_turns: lots}\n")
    result = _load(dirs)
    err = _only_error(result)
    assert "line 2" in str(err) and "limits.max_turns" in str(err) and "'lots'" in str(err)
    assert result.get("helper").model == "anthropic/claude-sonnet-4-5"


def test_unknown_keys_name_line_and_suggest(dirs: dict[str, Path]) -> None:
    path = _write(dirs["local"] / "typo.yaml", "description: x\nlimits:\n  max_turn: 3\nworkspace:\n"
                                               "  isolation: worktree\n  alow_writes: false\n")
    err = _only_error(_load(dirs))
    message = str(err)
    assert str(path) in message and err.line == 3
    assert "line 3: unknown field 'limits.max_turn' (did you mean 'max_turns'?)" in message
    assert "line 6: unknown field 'workspace.alow_writes' (did you mean 'allow_writes'?)" in message


def test_unknown_top_level_key_in_front_matter_counts_lines_from_the_file_top(dirs: dict[str, Path]) -> None:
    _write(dirs["local"] / "typo.md", "---\ndescription: x\nmodle: openai/gpt-5\n---\nbody\n")
    err = _only_error(_load(dirs))
    assert err.line == 3 and "unknown field 'modle'" in str(err) and "'model'" in str(err)


def test_wrong_types_and_values_name_the_line(dirs: dict[str, Path]) -> None:
    _write(dirs["local"] / "x.yaml", "description: x\nlimits:\n  timeout: 4000\ncapabilities: [boss]\n"
                                     "model: gpt-5\nthinking: extreme\n")
    message = str(_only_error(_load(dirs)))
    assert "4 problems" in message
    assert "line 3: 'limits.timeout': Input should be less than or equal to 1800 (got 4000)" in message
    assert "line 4: 'capabilities.0'" in message and "'boss'" in message
    assert "line 5: 'model': a model is written 'provider/model'" in message
    assert "line 6: 'thinking'" in message


def test_bad_slash_trigger_names_line(dirs: dict[str, Path]) -> None:
    _write(dirs["local"] / "x.yaml", "description: x\ntriggers:\n  slash: oracle\n")
    err = _only_error(_load(dirs))
    assert err.line == 3 and "'triggers.slash'" in str(err) and "like '/oracle'" in str(err)
    _write(dirs["local"] / "x.yaml", "triggers:\n  slash: /two words\n")
    assert "'triggers.slash'" in str(_only_error(_load(dirs)))


def test_duplicate_slash_trigger_first_profile_keeps_it(dirs: dict[str, Path]) -> None:
    _write(dirs["builtin"] / "first.yaml", "triggers: {slash: /ask}\n")
    second = _write(dirs["local"] / "second.yaml", "description: x\ntriggers:\n  slash: /ASK\n  hotkey: f5\n")
    result = _load(dirs)
    err = _only_error(result)
    assert err.warning and err.path == second and err.line == 3
    assert "'/ASK'" in str(err) and "already used by profile 'first'" in str(err)
    assert result.get("second").triggers.slash is None and result.get("second").triggers.hotkey == "f5"
    assert result.get("second").sources == (second,)
    assert result.by_slash("ask").name == "first" and result.by_hotkey("F5").name == "second"


def test_duplicate_hotkey_is_a_warning(dirs: dict[str, Path]) -> None:
    _write(dirs["builtin"] / "a.yaml", "triggers: {hotkey: f2}\n")
    _write(dirs["user"] / "b.yaml", "triggers: {hotkey: f2}\n")
    result = _load(dirs)
    assert "hotkey trigger 'f2'" in str(_only_error(result))
    assert result.by_hotkey("f2").name == "a" and result.get("b").triggers.hotkey is None


def test_yaml_12_booleans_keep_off_a_string(dirs: dict[str, Path]) -> None:
    _write(dirs["local"] / "x.yaml", "thinking: off\nworkspace: {bash_sandbox: off, allow_writes: false}\n")
    profile = _load(dirs).get("x")
    assert profile.thinking == "off" and profile.workspace.bash_sandbox == "off"
    assert profile.workspace.allow_writes is False


@pytest.mark.parametrize(("name", "text", "line", "words"), [
    ("dup.yaml", "description: a\nmodel: a/b\ndescription: b\n", 3, "appears twice"),
    ("bad.json", '{\n  "description": "x",\n  "model": \n}\n', 4, "invalid JSON"),
    ("dup.json", '{\n "model": "a/b",\n "model": "c/d"\n}', 3, "appears twice"),
    ("open.md", "---\ndescription: x\nno end\n", 1, "never closed"),
    ("list.yaml", "- a\n- b\n", 1, "must be a mapping of fields, not a list"),
    ("bad name.yaml", "description: x\n", 1, "the profile is called 'bad-name'"),  # loads, with a warning
    ("tabs.yaml", "description: x\n\tmodel: a/b\n", 2, "invalid YAML"),
])
def test_bad_files_name_file_and_line(dirs: dict[str, Path], name: str, text: str, line: int,
                                      words: str) -> None:
    path = _write(dirs["local"] / name, text)
    err = _only_error(_load(dirs))
    assert err.path == path and err.line == line, str(err)
    assert str(path) in str(err) and f"line {line}" in str(err) and words in str(err)


def test_not_utf8_is_a_clear_error(dirs: dict[str, Path]) -> None:
    path = dirs["local"] / "latin.yaml"
    path.write_bytes("description: caf\xe9\n".encode("latin-1"))
    assert "not UTF-8" in str(_only_error(_load(dirs)))


def test_same_name_twice_in_one_layer_keeps_the_first(dirs: dict[str, Path]) -> None:
    _write(dirs["local"] / "a.yaml", "name: same\ndescription: first\n")
    _write(dirs["local"] / "b.yaml", "name: same\ndescription: second\n")
    result = _load(dirs)
    err = _only_error(result)
    assert err.warning and err.line == 1 and "b.yaml" in str(err)
    assert result.get("same").description == "first"


def test_schema_key_ignored_and_readme_skipped(dirs: dict[str, Path]) -> None:
    _write(dirs["local"] / "x.json", json.dumps({"$schema": "../schemas/profile.schema.json",
                                                  "description": "x"}))
    _write(dirs["local"] / "README.md", "These are our agents.\n")
    _write(dirs["local"] / "notes.txt", "not a profile\n")
    result = _load(dirs)
    assert result.errors == [] and result.names() == ["x"]


def test_unknown_profile_lists_known_names(dirs: dict[str, Path]) -> None:
    _write(dirs["local"] / "oracle.yaml", "")
    _write(dirs["local"] / "pair.yaml", "")
    with pytest.raises(ProfileError, match=r"no agent profile named 'nope'. Known profiles: oracle, pair\."):
        _load(dirs).get("nope")


def test_allowed_children_must_exist(dirs: dict[str, Path]) -> None:
    _write(dirs["local"] / "boss.yaml", "allowed_children: [worker, ghost]\n")
    _write(dirs["local"] / "worker.yaml", "")
    result = _load(dirs)
    err = _only_error(result)
    assert err.warning and "ghost" in str(err) and "worker" not in str(err).split("exist:")[1]
    assert "boss" in result


def test_capability_queries_and_workflow_check(dirs: dict[str, Path]) -> None:
    _write(dirs["local"] / "w.yaml", "capabilities: [watcher, subtask]\nworkflow: missing\n")
    _write(dirs["local"] / "p.yaml", "capabilities: [primary]\nworkflow: default\n")
    result = _load(dirs)
    assert [p.name for p in result.with_capability("watcher")] == ["w"]
    assert result.get("p").has("primary") and not result.get("p").has("subtask")
    problems = result.check_workflows({"default", "review"})
    assert len(problems) == 1
    assert "'missing'" in str(problems[0]) and "Known workflows: default, review" in str(problems[0])


def test_profiles_are_immutable() -> None:
    profile = Profile(name="x")
    with pytest.raises(ValueError, match="frozen"):
        profile.model = "a/b"  # type: ignore[misc]


def test_validate_single_file(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.yaml", "description: ok\n")
    bad = _write(tmp_path / "bad.yaml", "description: ok\nmax_turns: 3\n")
    assert validate_profile_file(good) == []
    [err] = validate_profile_file(bad)
    assert err.line == 2 and "unknown field 'max_turns'" in str(err)
    claude = _write(tmp_path / ".claude" / "agents" / "c.md", "---\ntools: Read, WebSearch\n---\nhi\n")
    [note] = validate_profile_file(claude)
    assert note.warning and "WebSearch" in str(note) and note.line == 2


def test_missing_dirs_are_fine(tmp_path: Path) -> None:
    result = load_profiles(project_dir=tmp_path / "nope", user_dir=tmp_path / "none",
                           builtin_dir=tmp_path / "x")
    assert result.profiles == {} and result.errors == []
