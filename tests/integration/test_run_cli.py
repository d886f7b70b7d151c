"""`yeetui run` end to end: the real binary, real SDKs, the fake LLM server, a temp project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakellm import Fault, Reply, ToolCall
from tests.integration.helpers import result_text, run_yeetui, tool_results


def test_run_json_creates_file_via_anthropic(fake_env, project: Path) -> None:
    fake_env.script(
        Reply(text="Writing the file.", tool_calls=[ToolCall("write_file", {"path": "hello.txt", "content": "hi"})]),
        Reply.tool("complete", output="Created hello.txt containing hi."),
    )
    done = run_yeetui("run", "--json", "create hello.txt containing hi", cwd=project)
    assert done.returncode == 0, done.stderr
    assert (project / "hello.txt").read_text() == "hi"
    result = done.result
    assert result["type"] == "result"
    assert result["status"] == "completed"
    assert result["output"] == "Created hello.txt containing hi."
    assert result["session_id"]
    kinds = {event["type"] for event in done.events}
    assert {"run_status", "text_delta", "tool_started", "tool_finished", "message", "usage"} <= kinds
    second = fake_env.requests[1]
    assert second.api == "anthropic"
    (written,) = tool_results(second.body)
    assert not written.get("is_error")
    assert "hello.txt" in result_text(written)


def test_run_json_creates_file_via_litellm_openai(fake_env, project: Path) -> None:
    fake_env.script(
        Reply.tool("write_file", path="hello.txt", content="hi"),
        Reply.tool("complete", output="done"),
    )
    done = run_yeetui("run", "--json", "--model", "openai/gpt-4o", "create hello.txt containing hi", cwd=project)
    assert done.returncode == 0, done.stderr
    assert (project / "hello.txt").read_text() == "hi"
    assert done.result["status"] == "completed"
    assert {r.api for r in fake_env.requests} == {"openai"}
    assert tool_results(fake_env.requests[1].body)


def test_plain_output_is_the_final_result(fake_env, project: Path) -> None:
    fake_env.script(Reply.tool("complete", output="All good."))
    done = run_yeetui("run", "say hi", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "All good."


def test_read_only_profile_cannot_write(fake_env, project: Path) -> None:
    fake_env.script(
        Reply.tool("write_file", path="x.txt", content="nope"),
        Reply.tool("complete", output="could not write"),
    )
    done = run_yeetui("run", "--json", "--profile", "oracle", "write x.txt", cwd=project)
    assert done.returncode == 0, done.stderr
    assert not (project / "x.txt").exists()
    offered = {tool["name"] for tool in fake_env.requests[0].body["tools"]}
    assert "write_file" not in offered and "edit_file" not in offered
    refusal = tool_results(fake_env.requests[1].body)[0]
    assert refusal.get("is_error") is True
    assert "write_file" in result_text(refusal)


def test_529_twice_then_success(fake_env, project: Path) -> None:
    fake_env.script(Reply.error(529), Reply.error(529), Reply.tool("complete", output="made it"))
    done = run_yeetui("run", "--json", "go", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.result["output"] == "made it"
    assert sum(1 for e in done.events if e["type"] == "provider_retry") == 2
    assert len(fake_env.requests) == 3


@pytest.mark.parametrize("fault", [Fault.overloaded_in_stream(after_chars=9), Fault.drop(after_chars=9)],
                         ids=["overloaded-in-stream", "dropped-connection"])
def test_stream_fault_is_retried_without_duplicated_text(fake_env, project: Path, fault: Fault) -> None:
    text = "The answer is forty-two, as computed."
    fake_env.script(
        Reply(text=text, fault=fault, chunk_size=3),
        Reply(text=text, tool_calls=[ToolCall("complete", {"output": "42"})], chunk_size=3),
    )
    done = run_yeetui("run", "--json", "compute", cwd=project)
    assert done.returncode == 0, done.stderr
    streamed = "".join(e["text"] for e in done.events if e["type"] == "text_delta")
    assert streamed == text
    assistant = [e for e in done.events if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert assistant[0]["message"]["parts"][0]["text"] == text
    history = fake_env.requests[-1].body["messages"]
    assert history[0]["role"] == "user"


def test_401_fails_with_readable_message_and_no_key(fake_env, project: Path) -> None:
    fake_env.script(Reply.error(401))
    done = run_yeetui("run", "--json", "go", cwd=project)
    assert done.returncode != 0
    assert done.result["status"] == "failed"
    assert "401" in done.result["error"] and "Traceback" not in done.stderr
    assert "MARKERKEY" not in done.stdout + done.stderr
    assert len(fake_env.requests) == 1


def test_malformed_tool_json_gets_an_error_result(fake_env, project: Path) -> None:
    fake_env.script(
        Reply(tool_calls=[ToolCall("write_file", raw='{"path": "a.txt", "content": ')]),
        Reply.tool("complete", output="recovered"),
    )
    done = run_yeetui("run", "--json", "go", cwd=project)
    assert done.returncode == 0, done.stderr
    error = tool_results(fake_env.requests[1].body)[0]
    assert error.get("is_error") is True
    assert "not valid JSON" in result_text(error)
    assert not (project / "a.txt").exists()


def test_stop_rule_nudges_then_waits_for_user(fake_env, project: Path) -> None:
    fake_env.script(Reply(text="I think we are done here.", repeat=True))
    done = run_yeetui("run", "--json", "finish the job", cwd=project)
    assert done.returncode == 3
    assert done.result["status"] == "waiting_user"
    assert len(fake_env.requests) == 4  # the answer, then three reminders
    last_user = fake_env.requests[-1].body["messages"][-1]
    assert "complete" in json.dumps(last_user)


def test_workflow_step_blocks_bash(fake_env, project: Path) -> None:
    (project / ".yeetui" / "workflows").mkdir(parents=True)
    (project / ".yeetui" / "agents").mkdir(parents=True)
    (project / ".yeetui" / "workflows" / "nobash.yaml").write_text(
        "name: nobash\ndescription: read only exploring\nsteps:\n"
        "  - name: explore\n    instructions: Look around without running commands.\n"
        "    blocked_tools: [bash]\n    exit: {tool: complete}\n"
    )
    (project / ".yeetui" / "agents" / "explorer.yaml").write_text(
        "description: explores\ncapabilities: [subtask]\nprompt: You explore.\nworkflow: nobash\n"
    )
    fake_env.script(Reply.tool("bash", command="echo hi"), Reply.tool("complete", output="ok"))
    done = run_yeetui("run", "--json", "--profile", "explorer", "look", cwd=project)
    assert done.returncode == 0, done.stderr
    refusal = tool_results(fake_env.requests[1].body)[0]
    assert refusal.get("is_error") is True
    assert "blocked" in result_text(refusal) and "bash" in result_text(refusal)


def test_broken_profile_is_named_and_others_still_work(fake_env, project: Path) -> None:
    agents = project / ".yeetui" / "agents"
    agents.mkdir(parents=True)
    (agents / "broken.yaml").write_text("description: broken\nprompt: [unclosed\nmodel: x\n")
    check = run_yeetui("profiles", "validate", cwd=project)
    assert check.returncode == 1
    assert "broken.yaml" in check.stderr
    assert ":2" in check.stderr or "line 2" in check.stderr
    fake_env.script(Reply.tool("complete", output="still fine"))
    done = run_yeetui("run", "--json", "go", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.result["output"] == "still fine"
    assert any("broken.yaml" in e.get("text", "") for e in done.events if e["type"] == "notice")


def test_bad_cli_flags_are_clear(project: Path) -> None:
    done = run_yeetui("run", "--bogus", "x", cwd=project)
    assert done.returncode == 2
    assert "unrecognized arguments: --bogus" in done.stderr
    missing = run_yeetui("run", cwd=project)
    assert missing.returncode == 2 and "PROMPT" in missing.stderr
    bad_model = run_yeetui("run", "--model", "gpt-4o", "x", cwd=project)
    assert bad_model.returncode == 1 and "provider/model" in bad_model.stderr
    unknown = run_yeetui("run", "--profile", "nosuch", "x", cwd=project)
    assert unknown.returncode == 1 and "nosuch" in unknown.stderr and "Traceback" not in unknown.stderr


def test_version_and_profiles_list(project: Path) -> None:
    version = run_yeetui("--version", cwd=project)
    assert version.returncode == 0 and version.stdout.startswith("yeetui ")
    listed = run_yeetui("profiles", "list", "--json", cwd=project)
    names = {p["name"] for p in json.loads(listed.stdout)}
    assert {"generic", "oracle", "reviewer", "pair", "orchestrator", "planner", "builder"} <= names
    shown = run_yeetui("profiles", "show", "oracle", "--json", cwd=project)
    assert json.loads(shown.stdout)["workspace"]["allow_writes"] is False


def test_whitespace_text_before_tool_call_is_not_sent_back(fake_env, project: Path) -> None:
    """Claude often streams "\\n\\n" before a tool_use; the API rejects whitespace-only text blocks."""
    (project / "a.txt").write_text("alpha")
    fake_env.script(Reply(text="\n\n", tool_calls=[ToolCall("read_file", {"path": "a.txt"})]),
                    Reply.tool("complete", output="done"))
    done = run_yeetui("run", "--json", "read a.txt", cwd=project)
    assert done.returncode == 0, done.stderr
    assert all(r.status == 200 for r in fake_env.requests)


def test_run_waits_for_background_subagents_before_exiting(fake_env, project: Path) -> None:
    """A non-blocking child still running when the primary completes is waited for (with a progress line on
    stderr), not silently cancelled: its result reaches the session and the exit code says the run's status."""
    fake_env.script(  # the primary's later request holds the child's prompt too: its reply comes first
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "BACKGROUND-Q: why?",
                                                      "blocking": False})], when_contains="delegate it"),
        Reply(tool_calls=[ToolCall("complete", {"output": "Started the oracle."})], when_contains="accepted"),
        Reply(text="pondering " * 40, chunk_size=8, chunk_delay=0.02, when_contains="BACKGROUND-Q",
              tool_calls=[ToolCall("complete", {"output": "BACKGROUND-ANSWER"})]),
    )
    done = run_yeetui("run", "--json", "delegate it to an oracle", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "waiting for 1 subagent" in done.stderr and "oracle#1" in done.stderr
    session = done.result["session_id"]
    shown = run_yeetui("sessions", "show", "--json", session, cwd=project)
    transcript = json.dumps(json.loads(shown.stdout)["messages"])
    assert "BACKGROUND-ANSWER" in transcript  # announced in the primary's session, not lost
    runs = json.loads(run_yeetui("agents", "list", "--all", "--json", cwd=project).stdout)
    assert {r["label"]: r["status"] for r in runs}["oracle#1"] == "completed"


def test_trust_lists_what_it_grants_and_then_the_project_s_rules_apply(fake_env, project: Path) -> None:
    """An untrusted project's agent file (an OpenCode one: it loads beside the built-ins as generic-opencode)
    cannot turn `bash: ask` into allow for a headless run; `yeetui trust` says what trusting grants, and after it
    the file means what it says."""
    agent = project / ".opencode" / "agent" / "generic.md"
    agent.parent.mkdir(parents=True)
    agent.write_text("---\ndescription: x\npermission:\n  bash: allow\n---\nYou do it.\n")
    marker = project / "ran"
    fake_env.script(Reply(tool_calls=[ToolCall("bash", {"command": f"touch {marker}"})], when_contains="TOUCH"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    refused = run_yeetui("run", "-p", "generic-opencode", "TOUCH it", cwd=project)
    assert refused.returncode == 0 and not marker.exists()
    assert "not trusted" in refused.stderr and "yeetui trust" in refused.stderr

    trusted = run_yeetui("trust", cwd=project)
    assert trusted.returncode == 0, trusted.stderr
    assert f"{agent}, line 4: permissions.bash: allow" in trusted.stdout
    fake_env.script(Reply(tool_calls=[ToolCall("bash", {"command": f"touch {marker}"})], when_contains="TOUCH"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    allowed = run_yeetui("run", "-p", "generic-opencode", "TOUCH it", cwd=project)
    assert allowed.returncode == 0 and marker.exists()
    assert "not trusted" not in allowed.stderr


def test_a_missing_key_for_a_litellm_provider_fails_at_once_and_names_the_variable(fake_env, project: Path,
                                                                                   monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    done = run_yeetui("run", "--model", "openai/gpt-5", "hello", cwd=project)
    assert done.returncode != 0
    assert "No OpenAI API key: set OPENAI_API_KEY" in done.stderr and "Traceback" not in done.stderr
    assert "server error" not in done.stderr and "dropped" not in done.stderr
    assert fake_env.requests == []  # nothing was sent, so nothing was retried


def test_a_headless_run_says_what_it_refused_and_a_blocked_task_exits_non_zero(fake_env, project: Path) -> None:
    fake_env.script(Reply(tool_calls=[ToolCall("bash", {"command": "make deploy"})], when_contains="DEPLOY"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "I could not run make.", "status": "blocked"})]))
    done = run_yeetui("run", "DEPLOY it", cwd=project)
    assert done.returncode == 1
    assert "refused 1 tool call that needs your permission: bash 'make deploy'" in done.stderr
    assert "--yes" in done.stderr
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "Nothing to do."})]))
    fine = run_yeetui("run", "--json", "nothing", cwd=project)
    assert fine.returncode == 0 and "refused" not in fine.stderr and fine.result["status"] == "completed"


def test_headless_progress_shows_the_run_id_children_and_retries(fake_env, project: Path) -> None:
    """Long headless work is not silent: stderr gets the run id at once, then each subagent, tool and retry."""
    fake_env.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "All done."})], when_contains="because"),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "CHILD why"})],
              when_contains="PARENT"),
        Reply.error(529, retry_after=0), Reply(tool_calls=[ToolCall("complete", {"output": "because"})]))
    done = run_yeetui("run", "PARENT task", cwd=project)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("[0:00] run ") and " · generic#1 on " in lines[0]
    assert any(line.endswith("generic#1: spawning oracle") for line in lines)
    assert any("oracle#1 started" in line for line in lines)
    assert any("oracle#1: retrying (2/5)" in line and "overloaded" in line for line in lines)
    assert any("oracle#1 done after" in line for line in lines)
    assert done.stdout.strip() == "All done."
    quiet = run_yeetui("run", "--json", "PARENT again", cwd=project)
    assert "[0:0" not in quiet.stderr  # --json: the events say it all


def test_profiles_validate_warns_about_unknown_tools_and_providers_and_exits_by_level(project: Path) -> None:
    agents = project / ".yeetui" / "agents"
    agents.mkdir(parents=True)
    (agents / "odd.yaml").write_text("description: odd\ntools: [read_file, webfetch]\nmodel: copilot/gpt-9\n")
    check = run_yeetui("profiles", "validate", cwd=project)
    assert check.returncode == 0, check.stderr  # warnings alone do not fail
    assert "warning: profile 'odd'" in check.stderr and "webfetch" in check.stderr
    assert "no provider is called 'copilot'" in check.stderr
    assert "Valid, with 2 warnings." in check.stdout
    strict = run_yeetui("profiles", "validate", "--strict", cwd=project)
    assert strict.returncode == 1


def test_run_with_trust_trusts_first_and_says_what_it_grants(fake_env, project: Path) -> None:
    agent = project / ".yeetui" / "agents" / "generic.yaml"
    agent.parent.mkdir(parents=True)
    agent.write_text("permissions:\n  bash: allow\n")
    marker = project / "ran"
    fake_env.script(Reply(tool_calls=[ToolCall("bash", {"command": f"touch {marker}"})], when_contains="TOUCH"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    done = run_yeetui("run", "--trust", "TOUCH it", cwd=project)
    assert done.returncode == 0, done.stderr
    assert f"Trusted {project.resolve()}" in done.stderr
    assert f"{agent}, line 2: permissions.bash: allow" in done.stderr
    assert marker.exists() and "not trusted" not in done.stderr
    listed = run_yeetui("trust", "--json", cwd=project)
    assert json.loads(listed.stdout)["was_trusted"] is True  # remembered


def test_an_agent_file_written_after_trust_is_not_trusted_until_the_user_says_so(fake_env, project: Path) -> None:
    """Trust is pinned to the files' content: after `yeetui trust`, a new agent file allowing bash (as an agent's
    command could write one) is refused by a headless run, which names the file; trusting again applies it."""
    (project / ".yeetui").mkdir()
    (project / ".yeetui" / "config.yaml").write_text("permissions:\n  bash: {'git push *': deny}\n")
    trusted = run_yeetui("trust", "--json", cwd=project)
    assert trusted.returncode == 0 and not json.loads(trusted.stdout).get("changed")
    agent = project / ".opencode" / "agent" / "generic.md"
    agent.parent.mkdir(parents=True)
    agent.write_text("---\ndescription: x\npermission:\n  bash: allow\n---\nYou do it.\n")
    marker = project / "ran"
    touch = (Reply(tool_calls=[ToolCall("bash", {"command": f"touch {marker}"})], when_contains="TOUCH"),
             Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    fake_env.script(*touch)
    refused = run_yeetui("run", "-p", "generic-opencode", "TOUCH it", cwd=project)
    assert refused.returncode in (0, 1) and not marker.exists()
    assert "changed since you trusted it (.opencode/agent/generic.md (added))" in refused.stderr
    doctor = json.loads(run_yeetui("doctor", "--json", cwd=project).stdout)
    (check,) = [c for c in doctor["checks"] if c["name"] == "project"]
    assert "not trusted" in check["detail"] and ".opencode/agent/generic.md (added)" in check["detail"]

    again = run_yeetui("trust", cwd=project)
    assert again.returncode == 0, again.stderr
    assert "changed since you trusted it: .opencode/agent/generic.md (added)" in again.stdout
    assert f"{agent}, line 4: permissions.bash: allow" in again.stdout
    fake_env.script(*touch)
    allowed = run_yeetui("run", "-p", "generic-opencode", "TOUCH it", cwd=project)
    assert allowed.returncode == 0 and marker.exists()
    assert "not trusted" not in allowed.stderr and "changed since" not in allowed.stderr


def test_a_load_warning_is_said_once_not_on_every_run(fake_env, project: Path) -> None:
    """Issue 24, item 13: the same warning about the project's files on every `yeetui run` is noise; it is said
    the first time, then counted in one line; a new warning is said; `--json` always lists every one."""
    (project / ".yeetui").mkdir()
    (project / ".yeetui" / "config.yaml").write_text("permissions:\n  bash: allow\n")
    fake_env.script(*[Reply(tool_calls=[ToolCall("complete", {"output": f"ok {n}"})]) for n in range(4)])
    first = run_yeetui("run", "hello", cwd=project)
    assert first.returncode == 0, first.stderr
    assert "ignored permissions.bash: allow" in first.stderr
    second = run_yeetui("run", "hello again", cwd=project)
    assert second.returncode == 0, second.stderr
    assert "ignored permissions.bash" not in second.stderr
    assert "1 warning about this project said before is not repeated" in second.stderr
    (project / ".yeetui" / "config.yaml").write_text("permissions:\n  bash: allow\n  write_file: allow\n")
    third = run_yeetui("run", "and again", cwd=project)
    assert "ignored permissions.write_file: allow" in third.stderr and "ignored permissions.bash" not in third.stderr
    scripted = run_yeetui("run", "--json", "json please", cwd=project)
    notices = [json.loads(line) for line in scripted.stdout.splitlines() if '"notice"' in line]
    assert any("permissions.bash" in n["text"] for n in notices)
