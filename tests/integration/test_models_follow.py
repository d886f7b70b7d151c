"""Models follow the user: a profile's tier (`strong` for the oracle, `fast` for the pair) resolves within the
provider of the model the user chose for the conversation (the window's `/model`), or else within a provider
they have a key for; a profile pinned to a model of a provider without a key runs on the chosen model, with a
notice naming both. Against the fake LLM over HTTP, with the real providers and their key checks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.fakellm.server import FakeLLM
from tests.integration.helpers import run_yeetui
from yeetui.application.sessions import SessionDesk
from yeetui.events import LedgerChanged, Notice, RunStatus
from yeetui.runtime import FrontEnd, Runtime
from yeetui.subagents.ledger import Ledger

ORACLE = "the oracle: a senior engineer consulted when someone is stuck"
"""A phrase of agents/oracle.md's prompt: it occurs only in the oracle's requests."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    agents = root / ".yeetui" / "agents"
    agents.mkdir(parents=True)
    (agents / "pinned.md").write_text("---\nname: pinned\ndescription: pinned to an Anthropic model\n"
                                      "capabilities: [subtask]\nmodel: anthropic/claude-opus-4-5\n---\n"
                                      "You are PINNED-PROFILE.\n")
    return root


@pytest.fixture
def openai_only(fake_env: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    """The user has an OpenAI key and no Anthropic one (the config's default model stays Anthropic's)."""
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    return fake_env


@pytest.fixture
async def runtime(project: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Runtime]:
    """The runtime the app opens, on the real providers (pointed at the fake by `fake_env`)."""
    monkeypatch.chdir(project)
    rt = await Runtime.open(cwd=project, front_end=FrontEnd(answers_asks=True))
    try:
        yield rt
    finally:
        await rt.close()


def _complete(output: str) -> Reply:
    return Reply(tool_calls=[ToolCall("complete", {"output": output})], when_contains=output.upper())


async def _app_conversation(runtime: Runtime, model: str) -> str:
    """What the app does: a new conversation, `/model MODEL` for the window, one turn on it; the session id."""
    session = await SessionDesk(runtime).new()
    control = runtime.session_control(session.id)
    control.model = model  # `/model` sets it on every open conversation of the window
    await control.submit("HELLO-PRIMARY")
    await control.wait_idle()
    return session.id


async def _spawned(runtime: Runtime, session_id: str, profile: str, prompt: str) -> tuple[str, RunStatus]:
    """`/oracle …` (or `@profile …`) from the conversation: the child's run id and how it ended."""
    handle = await runtime.session_control(session_id).spawn(profile, prompt)
    await asyncio.wait_for(runtime.spawner.wait(handle.run_id), 60)  # None: it has ended already
    run = await runtime.store.get_run(handle.run_id)
    assert run is not None
    return run.id, run.status


async def test_with_only_an_openai_key_the_oracle_the_pair_and_a_pinned_profile_run_on_openai(
        openai_only: FakeLLM, runtime: Runtime) -> None:
    openai_only.script(_complete("oracle-answer"), _complete("pinned-answer"),
                       Reply(text="Hello from gpt-5.", when_contains="HELLO-PRIMARY"))
    heard: list[object] = []
    runtime.bus.add_listener(heard.append)
    ledger = Ledger(runtime.bus)
    session_id = await _app_conversation(runtime, "openai/gpt-5")
    primary = [r for r in openai_only.requests if "HELLO-PRIMARY" in r.text]
    assert [(r.api, r.body["model"]) for r in primary] == [("openai", "gpt-5")]

    # /oracle: the strong tier of OpenAI, the provider of the window's model (not claude-opus-4-5)
    run_id, status = await _spawned(runtime, session_id, "oracle", "ORACLE-ANSWER: why?")
    asked = [r for r in openai_only.requests if ORACLE in r.text]
    assert status == RunStatus.COMPLETED, await runtime.store.get_run(run_id)
    assert [(r.api, r.body["model"]) for r in asked] == [("openai", "gpt-5.1")]
    stored = await runtime.store.get_run(run_id)
    assert stored is not None and stored.model == "openai/gpt-5.1"
    shown = {e.row.model for e in heard if isinstance(e, LedgerChanged) and e.run_id == run_id and e.row}
    assert shown == {"gpt-5.1"}  # the ledger's row names the model the child runs on

    # a profile pinned to an Anthropic model runs on the window's model, and says so naming both
    run_id, status = await _spawned(runtime, session_id, "pinned", "PINNED-ANSWER please")
    asked = [r for r in openai_only.requests if "PINNED-PROFILE" in r.text]
    assert status == RunStatus.COMPLETED and [(r.api, r.body["model"]) for r in asked] == [("openai", "gpt-5")]
    notices = [e.text for e in heard if isinstance(e, Notice) and "pinned" in e.text]
    assert len(notices) == 1 and "anthropic/claude-opus-4-5" in notices[0] and "openai/gpt-5 instead" in notices[0]

    # /pair: the fast tier of OpenAI, the provider of the window's model
    watcher = await runtime.watchers.toggle(session_id)
    assert watcher is not None and watcher.model == "openai/gpt-5-mini"
    assert watcher.session_id is not None and watcher.session_id in {r.session_id for r in ledger.rows()}
    assert {r.model for r in ledger.rows() if r.session_id == watcher.session_id} == {"gpt-5-mini"}


async def test_with_both_keys_the_oracle_follows_the_windows_provider(fake_env: FakeLLM, runtime: Runtime) -> None:
    """The user could run the oracle on Anthropic, but chose OpenAI for this window: its tier follows that."""
    fake_env.script(_complete("oracle-answer"), Reply(text="Hello from gpt-5.", when_contains="HELLO-PRIMARY"))
    session_id = await _app_conversation(runtime, "openai/gpt-5")
    _, status = await _spawned(runtime, session_id, "oracle", "ORACLE-ANSWER: why?")
    asked = [r for r in fake_env.requests if ORACLE in r.text]
    assert status == RunStatus.COMPLETED
    assert [(r.api, r.body["model"]) for r in asked] == [("openai", "gpt-5.1")]
    watcher = await runtime.watchers.toggle(session_id)  # F2: the pair follows the window's provider too
    assert watcher is not None and watcher.model == "openai/gpt-5-mini"


def test_a_detached_oracle_of_an_openai_only_user_runs_on_openai(openai_only: FakeLLM, project: Path) -> None:
    """`yeetui agents start oracle` with only an OpenAI key and the default (Anthropic) model configured: the
    oracle's tier resolves for the provider the user has a key for."""
    openai_only.script(_complete("oracle-answer"))
    done = run_yeetui("agents", "start", "oracle", "ORACLE-ANSWER: why is CI slow?", "--wait", "--json",
                      cwd=project, timeout=120)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr)
    asked = [r for r in openai_only.requests if ORACLE in r.text]
    assert [(r.api, r.body["model"]) for r in asked] == [("openai", "gpt-5.1")]
    listed = run_yeetui("agents", "list", "--all", "--json", cwd=project)
    [run] = json.loads(listed.stdout)
    assert run["model"] == "openai/gpt-5.1" and run["status"] == "completed", run
