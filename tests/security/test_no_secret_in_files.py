"""No key leaves in a file: a run that uses an MCP server, fires a hook and hands work to an external agent, each
of which had a secret in reach and printed it, leaves that secret in no file outside yeetui's 0600 data dir —
not under /tmp, not in the home folder, not in the project. (The ACP frame dump that wrote every frame to
/tmp/acpdump.log, mode 644, is what this would have caught.)"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui

PRINTS_ITS_ENV = ("import os, runpy, sys\nsys.stderr.write(os.environ.get('LEAK_TOKEN', 'none') + '\\n')\n"
                  "sys.argv = ['mcp_server_time', '--local-timezone', 'UTC']\n"
                  "runpy.run_module('mcp_server_time', run_name='__main__')\n")


def _files(root: Path, since: float, skip: tuple[Path, ...]) -> Iterator[Path]:
    """Regular files under `root` changed since `since`, outside the folders in `skip`."""
    for folder, folders, files in os.walk(root, followlinks=False):
        here = Path(folder)
        folders[:] = [f for f in folders if here / f not in skip]
        for name in files:
            path = here / name
            try:
                info = path.lstat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_mtime >= since and info.st_size < 64 << 20:
                yield path


def test_a_secret_in_reach_of_a_server_a_hook_and_an_external_agent_is_in_no_file_outside_the_data_dir(
        fake_env, tmp_path: Path) -> None:
    started = time.time() - 1
    secret = f"leak-{uuid.uuid4().hex}-{uuid.uuid4().hex}"
    home, project = tmp_path / "userhome", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    config_dir, data_dir = Path(os.environ["YEETUI_CONFIG_DIR"]), Path(os.environ["YEETUI_DATA_DIR"])
    agents = config_dir / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    script = [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"EXT-SAYS {secret}"}}]
    agent_env = {"FAKE_ACP_SCRIPT": json.dumps(script), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    (agents / "ext.yaml").write_text(f"description: an external agent\nrunner: acp\ncapabilities: [subtask]\n"
                                     f"acp:\n  command: {sys.executable}\n  args: [-m, tests.fake_acp_agent]\n"
                                     f"  env: {json.dumps(agent_env)}\n")
    hook = tmp_path / "hook.sh"
    hook.write_text("#!/bin/sh\ncat > /dev/null\necho \"hook saw ${LEAK_TOKEN:-nothing}\"\n")
    hook.chmod(0o755)
    config = config_dir / "config.yaml"
    config.write_text((config.read_text() if config.exists() else "")
                      + f"mcp_servers:\n  time:\n    command: [{sys.executable}, -c, {json.dumps(PRINTS_ITS_ENV)}]\n"
                      f"    env: {{LEAK_TOKEN: '${{LEAK_TOKEN}}'}}\n"
                      f"hooks:\n  UserPromptSubmit:\n    - hooks: [{{type: command, command: {hook}}}]\n"
                      f"  PostToolUse:\n    - hooks: [{{type: command, command: {hook}}}]\n")
    fake_env.script(
        Reply(tool_calls=[ToolCall("mcp_load", {"server": "time"})]),
        Reply(tool_calls=[ToolCall("mcp__time__get_current_time", {"timezone": "UTC"})], when_contains="Loaded"),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "ext", "prompt": "say it", "blocking": True})],
              when_contains="timezone"),
        Reply(tool_calls=[ToolCall("bash", {"command": f"echo {secret} > echoed.txt; cat echoed.txt; rm echoed.txt"})],
              when_contains="EXT-SAYS"),
        Reply(tool_calls=[ToolCall("complete", {"output": "done"})], when_contains="exit code"))
    done = run_yeetui("run", "--json", "--yes", "go", cwd=project, timeout=180, HOME=str(home), LEAK_TOKEN=secret)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert any("hook saw" in r.text for r in fake_env.requests)  # the hook and
    assert any("EXT-SAYS" in r.text for r in fake_env.requests)  # the external agent ran
    assert secret not in done.stdout + done.stderr

    leaked = []
    # /tmp less the test runner's own folders (other tests' files are there; this test's are walked itself)
    for root, skip in ((project, ()), (home, ()), (tmp_path, (data_dir, config_dir)),  # (the test wrote the config)
                       (Path("/tmp"), tuple(Path("/tmp").glob("pytest-of-*")))):
        for path in _files(root, started, skip):
            try:
                if secret.encode() in path.read_bytes():
                    leaked.append(path)
            except OSError:
                continue
    assert leaked == [], f"the secret is in {leaked}"
