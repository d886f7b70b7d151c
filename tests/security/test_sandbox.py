"""Class 6 (in part): the read-only sandbox holds even against root. A read-only agent's bash, run as root
(as in containers and CI), cannot remount the read-only binds and write the project; under bubblewrap it
holds no capability at all. Run under each sandbox this machine has (bubblewrap, Landlock)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runtime import Runtime
from yeetui.system import sandbox

MECHANISMS = [m for m, works in (("bwrap", sandbox.probe_bwrap), ("landlock", sandbox.probe_landlock)) if works()]


@pytest.mark.skipif(not MECHANISMS, reason="no read-only sandbox (bubblewrap or Landlock) works on this machine")
@pytest.mark.parametrize("mechanism", MECHANISMS or ["none"])
async def test_a_read_only_agent_cannot_remount_its_way_to_a_write(runtime: Runtime, scripted, project_dir: Path,
                                                                  mechanism: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: mechanism)
    answer_permissions_headless(runtime.bus, approve=True)  # the user said yes: only the sandbox stands
    attack = (f"mount -o remount,bind,rw {project_dir} ; mount -o remount,rw / ; mount -t tmpfs none {project_dir} ; "
              f"echo x > {project_dir}/PWNED ; grep CapEff /proc/self/status")
    scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": attack})], when_contains="LOOK"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    result = await runtime.launcher.run_prompt("LOOK", profile_name="oracle")
    assert result.status.value == "completed"
    assert not (project_dir / "PWNED").exists()
    said = scripted.requests[-1].text
    assert "CapEff" in said  # the command ran, inside the sandbox
    if mechanism == "bwrap":
        assert "CapEff:\\t0000000000000000" in said
