"""The agent-file corpus (tests/agent_corpus: Claude Code and OpenCode files written for these tests) loads
as its authors meant, and what each agent is offered reaches the model: every test below asserts the loaded
profile *and* the tools and model of the request the fake LLM server received from a real run."""

from __future__ import annotations

import shutil
import tracemalloc
from pathlib import Path
from typing import Any, cast

import pytest

from tests.fakellm import Reply
from tests.integration.helpers import run_yeetui
from yeetui.definitions.profile_loader import load_profiles
from yeetui.definitions.profiles import ProfileFileError, ProfileSet
from yeetui.resources import builtin_dir
from yeetui.runtime import Runtime

CORPUS = Path(__file__).parent.parent / "agent_corpus"
EXITS = {"complete", "ask_user"}
ALL_TOOLS = {"read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "bash"}
DEFAULT_MODEL = "claude-sonnet-4-6"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(CORPUS, root)
    return root


def _load(project: Path, *, trusted: bool = False) -> ProfileSet:
    return load_profiles(project_dir=project, user_dir=project.parent / "user", builtin_dir=builtin_dir("agents"),
                         trusted=trusted)


def _offered(body: dict[str, Any]) -> set[str]:
    names = {t.get("name") or t.get("function", {}).get("name") for t in body.get("tools", [])}
    return names - EXITS


async def _sent(fake_env, project: Path, profile: str) -> tuple[str, str, set[str], str]:
    """Run `profile` once in `project` against the fake server: (api, model, tools offered, system prompt)."""
    fake_env.script(Reply.tool("complete", output="done"))
    before = len(fake_env.requests)
    rt = await Runtime.open(cwd=project)
    try:
        result = await rt.launcher.run_prompt("CORPUS-TASK", profile_name=profile)
    finally:
        await rt.close()
    assert result.status.value == "completed", result.error
    request = fake_env.requests[before]
    body = request.body
    system = body.get("system") or body["messages"][0]["content"]
    system = system if isinstance(system, str) else " ".join(part.get("text", "") for part in system)
    return request.api, body["model"], _offered(body), system


def _warning(profiles: ProfileSet, file: str, words: str) -> str:
    found = [str(e) for e in profiles.errors if file in str(e) and words in str(e)]
    assert found, f"no warning about {file} saying {words!r} in {[str(e) for e in profiles.errors]}"
    return found[0]


# -- lenient front matter -------------------------------------------------------------------------------


async def test_claude_generator_one_line_examples_and_literal_newlines(fake_env, project: Path) -> None:
    profiles = _load(project)
    agent = profiles.get("release-notes-writer")
    assert agent.description.startswith("Use this agent when a release is being cut")
    assert 'user: "Write the notes for 2.3"' in agent.description  # the value holding ': ' is kept whole
    assert "</example>\n\n<example>Context: A hotfix shipped." in agent.description  # literal \n → line breaks
    assert agent.tools == ["read_file", "grep", "glob"] and agent.model == "anthropic/claude-opus-4-5"
    assert agent.prompt.startswith("You write release notes.\n\nRead the changelog")
    assert agent.prompt.endswith("---\n\nA horizontal rule above is part of the prompt, as is this: key: value.")
    assert "line 3" in _warning(profiles, "release-notes-writer.md", "read leniently")
    api, model, tools, system = await _sent(fake_env, project, "release-notes-writer")
    assert (api, model, tools) == ("anthropic", "claude-opus-4-5", {"read_file", "grep", "glob"})
    assert "as is this: key: value." in system


async def test_claude_unindented_multiline_examples(fake_env, project: Path) -> None:
    profiles = _load(project)
    agent = profiles.get("migration-checker")
    lines = agent.description.splitlines()
    assert lines[0] == "Checks database migrations before they are merged."
    assert 'user: "Can you look at migration 0042?"' in lines and lines.count("</example>") == 2
    assert agent.tools == ["read_file", "bash"] and agent.model == "anthropic/claude-sonnet-4-6"
    assert agent.prompt == "You check migrations for locking, data loss and reversibility."
    _warning(profiles, "migration-checker.md", "read leniently")
    api, model, tools, _ = await _sent(fake_env, project, "migration-checker")
    assert (api, model, tools) == ("anthropic", "claude-sonnet-4-6", {"read_file", "bash"})


# -- restrictions and wildcards -------------------------------------------------------------------------


async def test_claude_plan_mode_disallowed_tools_and_max_turns(fake_env, project: Path) -> None:
    agent = _load(project).get("plan-auditor")
    assert agent.read_only and agent.disallowed_tools == ["bash"] and agent.limits.max_turns == 7
    _api, model, tools, system = await _sent(fake_env, project, "plan-auditor")
    assert (model, tools) == ("claude-haiku-4-5", {"read_file", "list_dir", "glob", "grep"})  # no write, no bash
    assert "read-only" in system


@pytest.mark.parametrize("name", ["anything-goes", "every-tool-list"])
async def test_tools_star_means_every_tool(fake_env, project: Path, name: str) -> None:
    agent = _load(project).get(name)
    assert agent.tools is None
    _, model, tools, _ = await _sent(fake_env, project, name)
    assert tools == ALL_TOOLS and model == DEFAULT_MODEL  # `model: inherit` and no model: the default


async def test_opencode_tools_wildcard_false_offers_only_what_is_named(fake_env, project: Path) -> None:
    agent = _load(project).get("read-only-wildcard")
    assert agent.tools == ["read_file", "grep"]
    _, _, tools, _ = await _sent(fake_env, project, "read-only-wildcard")
    assert tools == {"read_file", "grep"}


async def test_opencode_permission_deny_wildcard(fake_env, project: Path) -> None:
    profiles = _load(project)
    agent = profiles.get("deny-by-default")
    assert {"write_file", "edit_file", "glob", "grep", "list_dir", "spawn_subagent"} <= set(agent.disallowed_tools)
    assert agent.permissions["bash"] == {"*": "deny"}  # untrusted: the allow patterns are dropped, fail closed
    _warning(profiles, "deny-by-default.md", "'git status': allow")
    _, _, tools, _ = await _sent(fake_env, project, "deny-by-default")
    assert tools == {"read_file", "bash"}
    trusted = _load(project, trusted=True).get("deny-by-default")
    assert trusted.permissions["bash"] == {"git status": "allow", "git diff *": "allow", "*": "deny"}


async def test_opencode_nested_plural_folder_with_tool_switches_and_steps(fake_env, project: Path) -> None:
    agent = _load(project).get("deploy-checker")
    assert agent.disallowed_tools == ["write_file", "edit_file"] and agent.limits.max_turns == 4
    _, _, tools, _ = await _sent(fake_env, project, "deploy-checker")
    assert tools == ALL_TOOLS - {"write_file", "edit_file"}


# -- names ---------------------------------------------------------------------------------------------


async def test_collisions_load_beside_the_builtins(fake_env, project: Path) -> None:
    profiles = _load(project)
    builtin = profiles.get("reviewer")
    assert builtin.sources == (builtin_dir("agents") / "reviewer.md",) and builtin.read_only
    ours = profiles.get("reviewer-claude")
    assert ours.prompt.startswith("Review like our team does") and "renamed from reviewer" in ours.note
    assert profiles.get("planner-opencode").prompt == "Plan in bullet points."
    assert profiles.get("planner").sources == (builtin_dir("agents") / "planner.md",)
    _warning(profiles, "reviewer.md", "loads as 'reviewer-claude'")
    _, _, tools, _ = await _sent(fake_env, project, "reviewer-claude")
    assert tools == {"read_file", "grep"}
    assert "Review like our team does" not in builtin.prompt  # the built-in is as shipped


async def test_nested_non_slug_and_unicode_names(fake_env, project: Path) -> None:
    profiles = _load(project)
    frontend = profiles.get("frontend-developer")
    assert frontend.sources[0].name == "Frontend Developer.md"
    assert frontend.tools == ["read_file", "write_file", "edit_file", "glob"]
    _warning(profiles, "Frontend Developer.md", "the profile is called 'frontend-developer'")
    french = profiles.get("relecteur-elegant")
    assert french.description == "Relit la documentation — 日本語のドキュメントも 📚"
    assert french.prompt.endswith("日本語の文書も読む。Ünïcödé stays intact: « ça va ».")
    _, _, tools, _ = await _sent(fake_env, project, "frontend-developer")
    assert tools == {"read_file", "write_file", "edit_file", "glob"}
    _, _, tools, system = await _sent(fake_env, project, "relecteur-elegant")
    assert tools == {"read_file"} and "« ça va »" in system


async def test_crlf_file(fake_env, project: Path) -> None:
    agent = _load(project).get("crlf-agent")
    assert agent.description == "Written on Windows" and agent.prompt == "First line.\nSecond line."
    _, model, tools, _ = await _sent(fake_env, project, "crlf-agent")
    assert (model, tools) == ("claude-haiku-4-5", {"read_file", "list_dir"})


# -- models --------------------------------------------------------------------------------------------


async def test_foreign_model_warns_and_runs_on_the_default(fake_env, project: Path) -> None:
    profiles = _load(project)
    assert profiles.get("copilot-model").model is None
    assert "line 4" in _warning(profiles, "copilot-model.md", "github-copilot/gpt-4.1")
    api, model, _, _ = await _sent(fake_env, project, "copilot-model")
    assert (api, model) == ("anthropic", DEFAULT_MODEL)


async def test_bare_model_name_resolves_like_an_alias(fake_env, project: Path) -> None:
    assert _load(project).get("bare-gpt").model == "openai/gpt-5"
    api, model, _, _ = await _sent(fake_env, project, "bare-gpt")
    assert (api, model) == ("openai", "gpt-5")


# -- OpenCode prompt fields ----------------------------------------------------------------------------


async def test_opencode_prompt_file_and_disable(fake_env, project: Path) -> None:
    profiles = _load(project)
    assert profiles.get("docs-writer").prompt == "You write documentation from the prompt file."
    assert "retired" not in profiles
    _warning(profiles, "retired.md", "disable: true")
    _, _, _, system = await _sent(fake_env, project, "docs-writer")
    assert system.startswith("You write documentation from the prompt file.")


def test_a_prompt_file_outside_the_project_is_not_read(project: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("HOST SECRET")
    (project / ".opencode" / "agent" / "docs-writer.md").write_text(
        "---\ndescription: x\nmode: subagent\nprompt: '{file:../../../secret.txt}'\n---\nThe body.\n")
    profiles = _load(project)
    assert profiles.get("docs-writer").prompt == "The body."
    _warning(profiles, "docs-writer.md", "outside the project")


# -- hostile sizes -------------------------------------------------------------------------------------


def test_alias_bomb_is_refused_with_file_and_line_and_flat_memory(project: Path) -> None:
    tracemalloc.start()
    try:
        profiles = _load(project)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [bomb] = [cast(ProfileFileError, e) for e in profiles.errors if "alias-bomb.md" in str(e)]
    assert not bomb.warning and bomb.line == 8 and "alias bomb" in str(bomb)
    assert "alias-bomb" not in profiles and "release-notes-writer" in profiles  # the others still load
    assert peak < 20 * 1024 * 1024  # 9^9 values expanded would be gigabytes


async def test_huge_prompt_is_refused(fake_env, project: Path) -> None:
    huge = project / ".claude" / "agents" / "huge.md"
    huge.write_text("---\ndescription: too much\n---\n" + "Be thorough." * 25_000)  # 300 KB
    profiles = _load(project)
    [error] = [e for e in profiles.errors if "huge.md" in str(e)]
    assert "300,000 characters" in str(error) and "200,000" in str(error) and "skipped" in str(error)
    assert "huge" not in profiles
    _, _, tools, _ = await _sent(fake_env, project, "anything-goes")  # everything else still runs
    assert tools == ALL_TOOLS


def test_profiles_list_from_a_subfolder(fake_env, project: Path) -> None:
    (project / ".git").mkdir()
    (project / "src" / "deep").mkdir(parents=True)
    listed = run_yeetui("profiles", "list", cwd=project / "src" / "deep")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    names = [line.split()[0] for line in lines if not line.startswith(" ")]
    assert names == sorted(names) and "release-notes-writer" in names and "reviewer-claude" in names
    row = next(line for line in lines if line.startswith("release-notes-writer "))
    assert ".claude/agents/release-notes-writer.md" in row and row.endswith("Examples: <exa…")
    assert "hotfix" not in row  # only the first line of a long description
    assert "↳ renamed from reviewer" in listed.stdout
    columns = {line.index(".claude/agents/") for line in lines if ".claude/agents/" in line}
    assert len(columns) == 1  # aligned
