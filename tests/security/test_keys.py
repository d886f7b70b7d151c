"""Class 7 through the agent loop: with provider keys in yeetui's environment, an agent's `bash` — `env`,
`env | base64 -w0`, `/proc/$PPID/environ` and `/proc/self/environ`, plain and base64 — gets no key. Neither
a key nor its base64 (at any alignment) reaches a request sent to the model, the database (its WAL included)
or the `--json` output. Base64 matters because redaction cannot recognise it: only keeping keys out of the
agents' reach does.

The real `yeetui run` against the fake LLM server, in an untrusted project, bash approved with `--yes`, under
each sandbox this machine has (bubblewrap, and Landlock with bubblewrap hidden). Run as root (CI), the Landlock
case is the one that read the keys through /proc/$PPID/environ while its commands kept root's capabilities."""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import result_text, run_yeetui, tool_results
from yeetui.system import sandbox

MECHANISMS = [m for m, works in (("bwrap", sandbox.probe_bwrap), ("landlock", sandbox.probe_landlock)) if works()]

ANTHROPIC_KEY = "plainkey-7c1d4e5f6a7b8c9d0e1f-MARKERKEY"
"""Not shaped like any known key format, so only yeetui knowing it could redact it."""
OPENAI_KEY = "otherkey-0a9b8c7d6e5f4a3b2c1d-MARKERKEY"

COMMANDS = ("env", "env | base64 -w0", "cat /proc/$PPID/environ | base64 -w0", "cat /proc/self/environ",
            "cat /proc/$PPID/environ", "cat /proc/self/environ | base64 -w0", "cat /proc/1/environ | base64 -w0")


def b64_cores(secret: str) -> list[bytes]:
    """What base64 of any text holding `secret` must contain, for each of the three alignments."""
    cores = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + secret.encode())
        cores.append(encoded[4:-4])  # the first and last groups depend on the neighbouring bytes
    return cores


def leaks(data: bytes, secret: str) -> bool:
    return secret.encode() in data or any(core in data for core in b64_cores(secret))


def decoded_blobs(text: str) -> list[bytes]:
    """Every long base64 run in `text`, decoded (what the agent's `| base64` printed)."""
    found = []
    for run in re.findall(r"[A-Za-z0-9+/]{40,}={0,2}", text):
        try:
            found.append(base64.b64decode(run + "=" * (-len(run) % 4)))
        except ValueError:
            continue
    return found


@pytest.mark.parametrize("mechanism", MECHANISMS or ["none"])
def test_an_agent_s_commands_get_no_key(fake_env, tmp_path: Path, mechanism: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    if mechanism == "landlock":  # the weaker fallback runs a writable agent's bash only when the user says so
        (Path(os.environ["YEETUI_CONFIG_DIR"]) / "config.yaml").write_text("tools: {bash_sandbox: unshielded}\n")
    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": command}) for command in COMMANDS], when_contains="SHOW"),
        Reply(tool_calls=[ToolCall("complete", {"output": "shown"})]))
    done = run_yeetui("run", "--json", "--yes", "SHOW me the environment", cwd=project,
                      ANTHROPIC_API_KEY=ANTHROPIC_KEY, OPENAI_API_KEY=OPENAI_KEY,
                      YEETUI_SANDBOX="landlock" if mechanism == "landlock" else "")
    assert done.returncode == 0, done.stderr
    answered = fake_env.requests[1]
    outputs = [result_text(block) for block in tool_results(answered.body)]
    assert len(outputs) == len(COMMANDS)
    assert "PATH=" in outputs[0]  # the commands ran and their output reached the model
    assert any(b"PATH=" in blob for blob in decoded_blobs(outputs[1]))
    stored = b"".join(p.read_bytes() for p in Path(os.environ["YEETUI_DATA_DIR"]).rglob("*") if p.is_file())
    assert b"SHOW me the environment" in stored  # the database was written where we look
    for key in (ANTHROPIC_KEY, OPENAI_KEY):
        for request in fake_env.requests:
            assert not leaks(request.text.encode(), key), f"a key reached the model in request {request.number}"
            assert not any(key.encode() in blob for blob in decoded_blobs(request.text))
        assert not leaks(stored, key), "a key reached the data dir"
        assert not leaks((done.stdout + done.stderr).encode(), key)
