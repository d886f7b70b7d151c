"""The permission dialog's "Always" lasts for the session: the next prompt and the session resumed in another
Runtime (another process) are not asked again about the same command; other sessions still are."""

from __future__ import annotations

from pathlib import Path

from tests.fakellm import Reply
from tests.fakellm.inprocess import ScriptedLLM
from yeetui.events import PermissionRequested, RunStatus
from yeetui.runs.permissions import Permissions
from yeetui.runtime import Runtime


def answer_always(runtime: Runtime) -> list[PermissionRequested]:
    """Play the dialog: every question is answered "Always"; returns the questions asked."""
    asked: list[PermissionRequested] = []

    def on_event(event: object) -> None:
        if isinstance(event, PermissionRequested):
            asked.append(event)
            event.reply.set_result("allow_always")

    runtime.bus.add_listener(on_event)
    return asked


def touch(name: str) -> tuple[Reply, Reply]:
    return Reply.tool("bash", command=f"touch {name}"), Reply.tool("complete", output="ok")


async def test_always_holds_for_the_next_prompt_of_the_session(runtime: Runtime, scripted: ScriptedLLM) -> None:
    asked = answer_always(runtime)
    scripted.script(*touch("made"), Reply.tool("bash", command="touch made"), Reply.tool("complete", output="ok"))
    first = await runtime.launcher.run_prompt("make it")
    assert first.status == RunStatus.COMPLETED and [a.subject for a in asked] == ["touch made"]
    (runtime.project_dir / "made").unlink()
    second = await runtime.launcher.run_prompt("make it again", session_id=first.session_id)
    assert second.status == RunStatus.COMPLETED
    assert len(asked) == 1, "the second prompt's identical command was asked about again"
    assert (runtime.project_dir / "made").exists()


async def test_always_holds_when_the_session_is_resumed(runtime: Runtime, scripted: ScriptedLLM,
                                                        project_dir: Path) -> None:
    answer_always(runtime)
    scripted.script(*touch("made"))
    first = await runtime.launcher.run_prompt("make it")
    assert first.status == RunStatus.COMPLETED
    resumed = await Runtime.open(cwd=project_dir, provider_factory=scripted.provider_factory)
    try:
        asked = answer_always(resumed)
        scripted.script(*touch("made"))
        again = await resumed.launcher.run_prompt("again", session_id=first.session_id)
        assert again.status == RunStatus.COMPLETED and asked == []
    finally:
        await resumed.close()


async def test_always_covers_only_its_session_and_its_exact_command(runtime: Runtime,
                                                                    scripted: ScriptedLLM) -> None:
    asked = answer_always(runtime)
    scripted.script(*touch("made"))
    first = await runtime.launcher.run_prompt("make it")
    scripted.script(*touch("other"))
    await runtime.launcher.run_prompt("make another", session_id=first.session_id)
    scripted.script(*touch("made"))
    await runtime.launcher.run_prompt("make it elsewhere")  # a new session
    assert [a.subject for a in asked] == ["touch made", "touch other", "touch made"]
    assert await runtime.store.remembered_permissions(first.session_id) == [("bash", "touch made"),
                                                                            ("bash", "touch other")]


def test_a_remembered_answer_never_outranks_a_deny_rule() -> None:
    perms = Permissions.from_config({"bash": {"*": "ask", "rm -rf *": "deny"}})
    perms.remember_all([("bash", "rm -rf build"), ("bash", "make test")])
    assert perms.decide("bash", "rm -rf build") == "deny"
    assert perms.decide("bash", "make test") == "allow"
    assert perms.decide("bash", "make test && curl x") == "ask"


async def test_a_command_holding_a_key_is_not_written_down(runtime: Runtime) -> None:
    key = "sk-ant-api03-" + "Q" * 40
    runtime.store.secrets = (key,)
    session = await runtime.store.create_session(profile="generic")
    await runtime.store.remember_permission(session.id, "bash", f"curl -H 'x-api-key: {key}' x")
    assert await runtime.store.remembered_permissions(session.id) == []
