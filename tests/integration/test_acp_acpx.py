"""`yeetui acp` as editors drive it, through a real ACP client: acpx (npm `acpx`, pinned in .ci/run), against the
fake LLM. The answer an agent ends its turn with is the agent's text (what `--format quiet` prints), the session's
mode is a config option (`--config-option mode=…`), and the mode is the conversation's: a later acpx process,
whose `yeetui acp` resumes the session, has it still."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.test_acp_server import _env
from tests.integration.zygote import ZYGOTE
from tests.waiting import until

NPM_BIN = Path(__file__).resolve().parents[2] / ".ci" / "cache" / "npm" / "node_modules" / ".bin"
ACPX = NPM_BIN / "acpx"
pytestmark = pytest.mark.skipif(not ACPX.exists(), reason="acpx (with Node 22) is installed by .ci/run "
                                                           "(npm install --prefix .ci/cache/npm)")
TERSE = "You are TERSE-PROFILE."
"""In the system prompt of the `terse` profile only."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def terse() -> None:
    """A second profile a conversation can be had with: a mode."""
    agents = Path(os.environ["YEETUI_CONFIG_DIR"]) / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "terse.md").write_text(f"---\ndescription: Short answers\ncapabilities: [primary]\nexit_tools: []\n"
                                     f"---\n{TERSE}\n")


def acpx(project: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`acpx --agent 'yeetui acp' ARGS` in the project, as a user types it (its state under a HOME of the test's;
    Node 22 from the npm cache first on PATH). A session's queue owner — the acpx process that keeps `yeetui acp`
    running between prompts — ends a second after its last prompt."""
    env = {**_env(), "HOME": str(tmp_path / "home"), "PATH": f"{NPM_BIN}:{os.environ['PATH']}"}
    return subprocess.run([str(ACPX), "--agent", shlex.join(ZYGOTE.argv("acp")), "--ttl", "1", *args], cwd=project,
                          env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def _no_owner(project: Path, tmp_path: Path) -> None:
    """Until the session's queue owner (and the `yeetui acp` it ran) has ended."""
    until("acpx's queue owner ended", lambda: "pid: -" in acpx(project, tmp_path, "status").stdout)


def test_the_answer_an_agent_ends_with_is_its_text(fake_env, project: Path, tmp_path: Path) -> None:
    fake_env.script(Reply(text="Let me see.", tool_calls=[ToolCall("complete", {"output": "The answer is 42."})],
                          when_contains="ACPX-ASK"))
    done = acpx(project, tmp_path, "--format", "quiet", "exec", "ACPX-ASK what is 6*7?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Let me see.\n\nThe answer is 42.\n"


def test_a_slash_commands_subagent_answers_the_turn(fake_env, project: Path, tmp_path: Path) -> None:
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "Oracle says 42."})],
                          when_contains="ACPX-ORACLE"))
    done = acpx(project, tmp_path, "--format", "quiet", "exec", "/oracle ACPX-ORACLE what is 6*7?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Oracle says 42.\n"


def test_the_mode_is_a_config_option(fake_env, project: Path, tmp_path: Path, terse: None) -> None:
    fake_env.script(Reply(text="Short.", when_contains=TERSE))
    done = acpx(project, tmp_path, "--format", "quiet", "exec", "--config-option", "mode=terse", "--config-option",
                "model=anthropic/claude-haiku-4-5", "ACPX-MODE hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Short.\n" and fake_env.requests[-1].body["model"] == "claude-haiku-4-5"
    refused = acpx(project, tmp_path, "exec", "--config-option", "mode=oracle", "ACPX-MODE hi")
    assert refused.returncode != 0 and "Invalid params" in refused.stdout, refused  # not a conversation's profile


def test_the_mode_stays_with_the_conversation_in_a_new_process(fake_env, project: Path, tmp_path: Path,
                                                               terse: None) -> None:
    fake_env.script(Reply(text="Terse answer.", when_contains=TERSE))
    created = acpx(project, tmp_path, "sessions", "new")
    assert created.returncode == 0, created.stderr
    chosen = acpx(project, tmp_path, "set-mode", "terse")
    assert chosen.returncode == 0, chosen.stderr
    _no_owner(project, tmp_path)  # the next prompt is a new `yeetui acp`'s, which resumes the session
    answered = acpx(project, tmp_path, "--format", "quiet", "ACPX-LATER hi")
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == "Terse answer.\n"
    _no_owner(project, tmp_path)
