"""The session's lifecycle as Claude Code's hooks hear it: SessionStart by how the session started (`startup`,
`resume`, `clear`, `compact`), SessionEnd with why it ended, PreCompact before a compaction, Notification only
when somebody is asked, `YEETUI_RUN_ID` for every event, and what a SessionStart hook writes in
`CLAUDE_ENV_FILE` run before the session's bash commands."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.waiting import until_async
from yeetui.application.surface import Surface
from yeetui.bus import Bus
from yeetui.events import Notice, PermissionRequested, RunStatus
from yeetui.hooks.runner import ENV_FILE_CAP, HookRunner
from yeetui.hooks.sources import load_hooks
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runtime import Runtime

LOG = "hook-log.jsonl"


def _recorder(tag: str) -> str:
    """A hook that appends its payload, its tag and its `YEETUI_RUN_ID` to the project's log."""
    return ("python3 -c 'import json,os,sys; d=json.load(sys.stdin); "
            "open(os.path.join(os.environ[\"CLAUDE_PROJECT_DIR\"], \"" + LOG + "\"), \"a\").write("
            f"json.dumps({{**d, \"tag\": \"{tag}\", \"env_run\": os.environ[\"YEETUI_RUN_ID\"]}}) + chr(10))'")


def _group(tag: str, matcher: str | None = None, command: str | None = None) -> dict:
    group: dict = {"hooks": [{"type": "command", "command": command or _recorder(tag)}]}
    return {**group, "matcher": matcher} if matcher else group


def _config(hooks: dict) -> None:
    config = Path(os.environ["YEETUI_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(json.dumps({"hooks": hooks}))


def _log(project: Path) -> list[dict]:
    path = project / LOG
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _fired(project: Path) -> list[tuple[str, str]]:
    return [(entry["hook_event_name"], entry["tag"]) for entry in _log(project)]


@pytest.fixture
def project_dir(project_dir: Path) -> Path:
    _config({
        "SessionStart": [_group("startup", "startup"), _group("resume", "resume"), _group("clear", "clear"),
                         _group("compact", "compact", "echo 'COMPACT-CONTEXT the build uses make'")],
        "SessionEnd": [_group("end")],
        "PreCompact": [_group("pre-compact-manual", "manual"), _group("pre-compact-auto", "auto")],
    })
    return project_dir


async def test_session_start_by_source_and_session_end_by_reason(runtime: Runtime, scripted,
                                                                 project_dir: Path) -> None:
    scripted.script(Reply(text="First answer.", when_contains="FIRST"),
                    Reply(text="Cleared answer.", when_contains="AFTER-CLEAR"),
                    Reply(text="Resumed answer.", when_contains="RESUMED"))
    first = await runtime.launcher.run_prompt("FIRST prompt", interactive=True)
    again = await runtime.launcher.run_prompt("FIRST again", session_id=first.session_id, interactive=True)
    assert _fired(project_dir) == [("SessionStart", "startup")]  # once per session in a process
    started = _log(project_dir)[0]
    assert (started["source"], started["env_run"], started["session_id"]) == \
        ("startup", first.run_id, first.session_id)

    # /clear (the TUI's /new): the conversation left ends as `clear`, the new one starts as `clear`
    cleared = await Surface(runtime).sessions.new(replacing=first.session_id)
    after = await runtime.launcher.run_prompt("AFTER-CLEAR", session_id=cleared.id, interactive=True)
    assert _fired(project_dir)[1:] == [("SessionEnd", "end"), ("SessionStart", "clear")]
    ended, restarted = _log(project_dir)[1:]
    assert (ended["reason"], ended["session_id"], ended["env_run"]) == ("clear", first.session_id, again.run_id)
    assert (restarted["source"], restarted["env_run"]) == ("clear", after.run_id)

    # another process takes the first conversation up again: `resume`; closing it ends it (`other`)
    other = await Runtime.open(cwd=project_dir, provider_factory=scripted.provider_factory)
    try:
        resumed = await other.launcher.run_prompt("RESUMED it", session_id=first.session_id, interactive=True)
        assert resumed.status == RunStatus.WAITING_USER
    finally:
        await other.close()
    assert _fired(project_dir)[3:] == [("SessionStart", "resume"), ("SessionEnd", "end")]
    assert _log(project_dir)[4]["reason"] == "other" and _log(project_dir)[4]["env_run"] == resumed.run_id


async def test_compaction_runs_pre_compact_then_session_start_compact(runtime: Runtime, scripted,
                                                                      project_dir: Path) -> None:
    scripted.script(Reply(text="Answer.", when_contains="TALK"),
                    Reply(text="SUMMARY of the talk", when_contains="Summarise it."))
    done = await runtime.launcher.run_prompt("TALK about it", interactive=True)
    await runtime.launcher.compact(done.session_id)
    assert _fired(project_dir) == [("SessionStart", "startup"), ("PreCompact", "pre-compact-manual")]
    assert _log(project_dir)[1]["trigger"] == "manual" and _log(project_dir)[1]["env_run"] == done.run_id
    # the SessionStart `compact` hook's output is in the conversation after the summary, framed as data
    said = [m.message.text for m in await runtime.store.messages(done.session_id)]
    assert "SUMMARY of the talk" in said[-2] and "COMPACT-CONTEXT the build uses make" in said[-1]
    assert "<hook-output" in said[-1]


async def test_notification_fires_only_when_somebody_is_asked(scripted, project_dir: Path) -> None:
    _config({"Notification": [_group("notification", "permission_prompt")]})
    project = project_dir
    runtime = await Runtime.open(cwd=project_dir, provider_factory=scripted.provider_factory)
    try:
        await _asked_then_not(runtime, scripted, project)
    finally:
        await runtime.close()


async def _asked_then_not(runtime: Runtime, scripted, project: Path) -> None:
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": "touch asked.txt"})], when_contains="ASK-ME"),
                    Reply(text="Done.", when_contains="asked.txt"))
    # somebody answers, a moment after the question was put
    loop = asyncio.get_running_loop()

    def answer_later(event: object) -> None:
        if isinstance(event, PermissionRequested):
            loop.call_soon(event.reply.set_result, "allow_once")

    with runtime.bus.listen(answer_later):
        asked = await runtime.launcher.run_prompt("ASK-ME now", interactive=True)
    entries = await until_async("the Notification hook's record", lambda: _log(project) or None)
    assert [(e["hook_event_name"], e["notification_type"], e["env_run"]) for e in entries] == \
        [("Notification", "permission_prompt", asked.run_id)]
    assert "needs your permission to use Bash" in entries[0]["message"]

    # headless: nobody can be asked (the question is refused as it is put), so nobody is notified
    answer_permissions_headless(runtime.bus, approve=False)
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": "touch refused.txt"})],
                          when_contains="NOBODY-HERE"),
                    Reply(text="Refused.", when_contains="nobody to ask"))
    refused = await runtime.launcher.run_prompt("NOBODY-HERE", interactive=True)
    assert refused.output == "Refused." and not (project / "refused.txt").exists()
    assert len(_log(project)) == 1


async def test_claude_env_file_runs_before_each_bash_command(runtime_env, scripted, project_dir: Path,
                                                             tmp_path: Path) -> None:
    _config({"SessionStart": [_group("env", None, 'echo "export FROM_HOOK=set-by-session-start" >> '
                                                  '"$CLAUDE_ENV_FILE"; echo \'cd_and_say() { echo "said-$1"; }\' '
                                                  '>> "$CLAUDE_ENV_FILE"')]})
    rt = await Runtime.open(cwd=project_dir, provider_factory=scripted.provider_factory)
    answer_permissions_headless(rt.bus, approve=True)
    try:
        scripted.script(
            Reply(tool_calls=[ToolCall("bash", {"command": 'echo "var=$FROM_HOOK"; cd_and_say it; '
                                                           'echo "argv=$(tr "\\0" " " < /proc/$$/cmdline)"; '
                                                           'echo "left=${YEETUI_SESSION_ENV_SCRIPT:-none}"'})],
                  when_contains="ENV-NOW"),
            Reply(text="Seen.", when_contains="said-it"))
        done = await rt.launcher.run_prompt("ENV-NOW", interactive=True)
    finally:
        await rt.close()
    assert done.output == "Seen."
    [said] = [block["content"] for m in scripted.requests[1].body["messages"] if isinstance(m["content"], list)
              for block in m["content"] if block.get("type") == "tool_result"]
    said = said if isinstance(said, str) else json.dumps(said)
    assert "var=set-by-session-start\nsaid-it" in said, said
    # what the hook wrote is not in the command's arguments (any user's `ps` shows those), nor left behind
    argv = said.split("argv=", 1)[1].split("\n", 1)[0]
    assert "set-by-session-start" not in argv and "left=none" in said, said


async def test_an_env_file_over_the_cap_is_cut_and_reported(tmp_path: Path) -> None:
    hooks = load_hooks({"SessionStart": [_group("big", None, f'head -c {ENV_FILE_CAP * 2} /dev/zero | '
                                                            f'tr "\\0" "#" | fold -w 100 > "$CLAUDE_ENV_FILE"')]},
                       project_dir=tmp_path, trusted=False)
    bus = Bus()
    said: list[str] = []
    bus.add_listener(lambda event: said.append(event.text) if isinstance(event, Notice) else None)
    runner = HookRunner(hooks, project_dir=tmp_path, bus=bus)
    await runner.fire("SessionStart", session_id="s1", run_id="r1", target="startup", source="startup")
    kept = runner.env_script(["s1"])
    assert 0 < len(kept) <= ENV_FILE_CAP and kept.endswith("#")
    assert any("CLAUDE_ENV_FILE is over 64 KB" in text for text in said), said
