"""Class 11 and 13: credentials never reach the database or `--json` output, whichever part of a conversation
carries them; and model text printed to a terminal cannot drive it (clipboard, title, screen).

The credentials are of the kinds that slipped through before: a key in the user's prompt, `Authorization:
Basic`, a PEM private key body, a password in a URL, in a tool's arguments, the assistant's text and the
`complete` output."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import result_text, run_yeetui, tool_results, yeetui_argv, yeetui_env
from tests.terminal import run_on_terminal
from yeetui.runtime import Runtime

API_KEY = "sk-ant-api03-PROMPTKEY-abcdefghijklmnop"
BASIC = "dXNlcjpodW50ZXIyc2VjcmV0"
URL_PASSWORD = "hunter2urlpass"
PEM = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
       "-----END OPENSSH PRIVATE KEY-----")
PEM_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"
SECRETS = (API_KEY, BASIC, URL_PASSWORD, PEM_BODY)


def _script(fake) -> None:
    fake.script(
        Reply(text=f"Using Authorization: Basic {BASIC} as you said.",
              tool_calls=[ToolCall("bash", {"command": f"echo https://deploy:{URL_PASSWORD}@example.com/x"})],
              when_contains="DEPLOY"),
        Reply(tool_calls=[ToolCall("complete", {"output": f"Your key:\n{PEM}\nand {API_KEY}"})]))


def _stored_bytes(data_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in data_dir.rglob("*") if p.is_file())


async def test_no_part_of_a_conversation_stores_a_credential(runtime: Runtime, scripted) -> None:
    from yeetui.runs.permissions import answer_permissions_headless

    answer_permissions_headless(runtime.bus, approve=True)
    _script(scripted)
    result = await runtime.launcher.run_prompt(f"DEPLOY with key {API_KEY}")
    assert result.status.value == "completed"
    await runtime.close()
    stored = _stored_bytes(Path(os.environ["YEETUI_DATA_DIR"]))
    assert b"[REDACTED]" in stored
    for secret in SECRETS:
        assert secret.encode() not in stored, f"{secret[:12]}… reached the data dir"


def test_json_output_carries_no_credential(fake_env, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    _script(fake_env)
    done = run_yeetui("run", "--json", "--yes", f"DEPLOY with key {API_KEY}", cwd=project)
    assert done.returncode == 0, done.stderr
    for secret in SECRETS:
        assert secret not in done.stdout and secret not in done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["status"] == "completed"


HOSTILE = ("Done.\x1b]52;c;cm0gLXJmIH4K\x07 Clipboard\x1b]0;pwned-title\x1b\\ set.\x1b[2J\x1b[H"
           "\rOVERWRITTEN\x9b31m end")


def test_model_text_printed_to_a_terminal_has_no_escape_sequences(fake_env, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": HOSTILE})]))
    run = run_on_terminal(yeetui_argv("run", "say it"), cwd=project, env=yeetui_env())
    assert run.exit_status == 0, run.raw
    text = run.raw.decode("utf-8", "replace")
    assert "Done." in text and "end" in text
    for control in ("\x1b]52", "\x1b]0", "\x1b[2J", "\x1b[H", "\x9b"):
        assert control not in text, f"{control!r} reached the terminal"


PASTED = {  # formats people paste into files and prompts; every value here is made up
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJkZXBsb3kiLCJpYXQiOjE3MDAwMDAwMDB9"
           ".c2lnbmF0dXJlLW9mLXRoZS10b2tlbi1oZXJl",
    "netrc": "Zq9-netrc-oneline",
    "netrc-multiline": "Mx7-netrc-multiline",
    "huggingface": "hf_PastedHuggingFaceToken0123456789ab",
    "stripe-live": "sk_live_51PastedStripeLiveKey0123",
    "stripe-restricted": "rk_live_51PastedStripeRestricted",
    "stripe-test": "sk_test_51PastedStripeTestKey0123",
    "gitlab": "glpat-PastedGitLabToken012",
    "groq": "gsk_PastedGroqKey0123456789abcdefghijklmnopqrstuvwxyzAB",
}
PASTED_FILE = (f"session {PASTED['jwt']}\n"
               f"machine api.example.com login alice password {PASTED['netrc']}\n"
               f"machine git.example.org\n  login bob\n  password {PASTED['netrc-multiline']}\n"
               f"HF {PASTED['huggingface']} stripe {PASTED['stripe-live']} {PASTED['stripe-restricted']} "
               f"{PASTED['stripe-test']}\ngitlab {PASTED['gitlab']} groq {PASTED['groq']}\n"
               "ordinary: sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855, "
               "id 123e4567-e89b-12d3-a456-426614174000, hf_hub_download, machine learning\n")


async def test_pasted_credential_formats_reach_neither_the_model_nor_the_database(runtime: Runtime, scripted,
                                                                                  project_dir: Path) -> None:
    """A file of pasted credentials read by a tool: what the model gets back and what is stored hold none of
    them; the user's prompt and the model's own answer carrying them are stored redacted too."""
    (project_dir / "notes.txt").write_text(PASTED_FILE)
    scripted.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})], when_contains="READ"),
        Reply(tool_calls=[ToolCall("complete", {"output": f"Found {PASTED['groq']} and {PASTED['jwt']}"})]))
    result = await runtime.launcher.run_prompt(f"READ notes.txt; my HF token is {PASTED['huggingface']}")
    assert result.status.value == "completed", result.error
    sent = "\n".join(result_text(block) for block in tool_results(scripted.requests[-1].body))
    assert "hf_hub_download" in sent and "426614174000" in sent and "machine learning" in sent  # the rest stays
    await runtime.close()
    stored = _stored_bytes(Path(os.environ["YEETUI_DATA_DIR"]))
    for kind, secret in PASTED.items():
        assert secret not in sent, f"the {kind} credential reached the model in a tool result"
        assert secret.encode() not in stored, f"the {kind} credential reached the data dir"
