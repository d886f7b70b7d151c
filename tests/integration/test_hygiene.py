"""Start-up hygiene: what an anthropic run imports, and that keys never leak anywhere."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui, yeetui_env

MARKER = "MARKERKEY"


def test_anthropic_run_imports_neither_textual_nor_litellm(fake_env, tmp_path: Path) -> None:
    fake_env.script(Reply.tool("complete", output="ok"))
    code = (
        "import sys\n"
        "from yeetui.cli import main\n"
        "rc = main(['run', '--json', 'hi'])\n"
        "print('MODULES', 'textual' in sys.modules, 'litellm' in sys.modules, rc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=yeetui_env(), capture_output=True,
                          text=True, timeout=60)
    assert "MODULES False False 0" in proc.stdout, proc.stdout + proc.stderr


def test_domain_import_does_not_load_textual_or_sdks() -> None:
    code = ("import sys, yeetui.runtime, yeetui.cli.common, yeetui.runs.runner\n"
            "print(sorted(m for m in ('textual', 'litellm', 'anthropic') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stderr


def test_api_keys_never_reach_db_logs_or_json(fake_env, tmp_path: Path, isolated_env: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    key = "sk-ant-test-MARKERKEY-0123456789"
    (project / "leak.txt").write_text(f"config says {key}\n")
    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "env; echo key=$ANTHROPIC_API_KEY"}),
                          ToolCall("read_file", {"path": "leak.txt"})]),
        Reply.tool("complete", output="done"),
    )
    done = run_yeetui("run", "--json", "--yes", "inspect", cwd=project)
    assert done.returncode == 0, done.stderr
    assert MARKER not in done.stdout and MARKER not in done.stderr
    data_dir = isolated_env / "data"
    stored = [p for p in data_dir.rglob("*") if p.is_file()]
    assert any(p.name.startswith("yeetui.db") for p in stored)
    for path in stored:
        assert MARKER.encode() not in path.read_bytes(), path
    second = fake_env.requests[1].text
    assert MARKER not in second  # redacted before it was sent back to the model
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert any(e["type"] == "tool_finished" and "[REDACTED]" in e["content"] for e in results)
