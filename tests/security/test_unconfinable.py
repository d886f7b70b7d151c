"""Where no OS sandbox can confine a project's MCP server or hook, it does not start — unless the user's own config
names it (`project_grants`) — and the notice says which and how. The user's own servers and hooks run as
configured. A project's config cannot grant itself anything."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from yeetui.bus import Bus
from yeetui.events import Notice
from yeetui.hooks.runner import HookConfinement, HookRunner
from yeetui.hooks.sources import load_hooks
from yeetui.mcp import consent
from yeetui.mcp.sources import discover
from yeetui.settings.config import load_settings
from yeetui.system import sandbox


def _server(project: Path) -> None:
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"srv": {"command": sys.executable,
                                                                           "args": ["srv.py"]}}}))
    (project / "srv.py").write_text("print('hi')\n")


def _admit(project: Path, **grants: object):  # type: ignore[no-untyped-def]
    [spec] = discover(project, home=project.parent, env=os.environ, config_dir=project.parent).servers
    consent.approve(spec, project)
    return consent.admit(spec, project, sandbox=lambda: None, home=project.parent, **grants)  # type: ignore[arg-type]


def test_an_approved_project_server_does_not_start_unconfined(project_dir: Path) -> None:
    _server(project_dir)
    refused = _admit(project_dir)
    assert refused.state == "refused"
    assert "project_grants: {unconfined_mcp_servers: [srv]}" in refused.reason
    granted = _admit(project_dir, unconfined=["srv"])
    assert granted.state == "approved" and granted.spec.unconfined


def test_a_project_server_naming_a_secret_is_refused_unless_the_user_grants_it(project_dir: Path) -> None:
    cases = [{"command": "node", "env": {"DEBUG_LEVEL": "${ANTHROPIC_API_KEY}"}},
             {"type": "http", "url": "https://example.invalid/mcp", "headers": {"X-Trace": "${OPENAI_API_KEY}"}},
             {"command": "node", "args": ["--token=${GITHUB_TOKEN}"]},
             {"type": "http", "url": "https://example.invalid/mcp?k=${MY_SECRET}"}]
    for n, entry in enumerate(cases):
        (project_dir / ".mcp.json").write_text(json.dumps({"mcpServers": {f"s{n}": entry}}))
        [spec] = discover(project_dir, home=project_dir.parent, env={"ANTHROPIC_API_KEY": "sk-ant-x" * 3,
                                                                     "OPENAI_API_KEY": "sk-o" * 5,
                                                                     "GITHUB_TOKEN": "ghp_" + "x" * 36,
                                                                     "MY_SECRET": "hunter22"},
                          config_dir=project_dir.parent).servers
        refused = consent.admit(spec, project_dir, home=project_dir.parent)
        assert refused.state == "refused", entry
        assert "may hold a key or password" in refused.reason and "mcp_secrets" in refused.reason
        named = spec.secret_references()
        assert consent.admit(spec, project_dir, home=project_dir.parent,
                             secrets_for={f"s{n}": named}).state == "needs approval"


def test_a_projects_config_cannot_grant_itself(project_dir: Path) -> None:
    (project_dir / ".yeetui").mkdir()
    (project_dir / ".yeetui" / "config.yaml").write_text(
        "project_grants: {unconfined_mcp_servers: [srv], mcp_secrets: {srv: [ANTHROPIC_API_KEY]}}\n")
    loaded = load_settings(project_dir=project_dir, trusted=True)
    assert loaded.settings.project_grants.unconfined_mcp_servers == []
    assert any("ignored project_grants" in w for w in loaded.warnings)


async def _fire_project_hook(project: Path, marker: Path, monkeypatch: pytest.MonkeyPatch,
                             unconfined: tuple[str, ...] = ()) -> list[str]:
    command = f"touch {marker}"
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": command}]}]}}))
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: None)
    bus = Bus()
    said: list[str] = []
    bus.add_listener(lambda event: said.append(event.text) if isinstance(event, Notice) else None)
    runner = HookRunner(load_hooks(None, project_dir=project, trusted=True), project_dir=project, bus=bus,
                        env=dict(os.environ), confinement=HookConfinement(unconfined=unconfined))
    await runner.fire("Stop", session_id="s1")
    await runner.close()
    return said


async def test_a_projects_hook_does_not_run_unconfined(project_dir: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "hook-ran"
    said = await _fire_project_hook(project_dir, marker, monkeypatch)
    assert not marker.exists()
    assert any("no OS sandbox works here" in text and "unconfined_hooks" in text for text in said), said
    granted = await _fire_project_hook(project_dir, marker, monkeypatch, unconfined=(f"touch {marker}",))
    assert marker.exists(), granted


def _approved_server_and_trusted_hook(project_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project with an approved server and a trusted hook (`make fmt`), on a machine where no sandbox works."""
    from yeetui.settings.trust import set_trusted

    _server(project_dir)
    [spec] = discover(project_dir, home=project_dir.parent, env=os.environ, config_dir=project_dir.parent).servers
    consent.approve(spec, project_dir)
    (project_dir / ".claude").mkdir()
    (project_dir / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "make fmt"}]}]}}))
    set_trusted(project_dir)
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: None)


async def test_doctor_says_which_of_the_projects_servers_and_hooks_cannot_start(project_dir: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from yeetui.application.doctor import run_checks

    _approved_server_and_trusted_hook(project_dir, monkeypatch)
    [check] = [c for c in await run_checks(project_dir) if c.name == "project servers and hooks"]
    assert check.state == "warning", check
    assert "Not started for want of a sandbox: the MCP server srv, the hook `make fmt`" in check.detail, check


async def test_a_projects_hook_is_not_run_unconfined_where_the_user_accepted_unshielded_bash(
        project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tools.bash_sandbox: unshielded` lets an agent's bash run with no sandbox where none works; a project's
    hook is the project's code and still needs one (or its own grant)."""
    marker = tmp_path / "hook-ran"
    command = f"touch {marker}"
    (project_dir / ".claude").mkdir()
    (project_dir / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": command}]}]}}))
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: None)
    runner = HookRunner(load_hooks(None, project_dir=project_dir, trusted=True), project_dir=project_dir, bus=Bus(),
                        env=dict(os.environ), confinement=HookConfinement(bash_sandbox="unshielded"))
    await runner.fire("Stop", session_id="s1")
    await runner.close()
    assert not marker.exists()


async def test_the_start_up_notice_names_the_projects_servers_and_hooks_that_cannot_start(
        project_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The notice at start (what the app shows before the first prompt) names both, not only doctor: a trusted
    project's hook that will not run for want of a sandbox was said only when it would have fired."""
    from yeetui.runtime import Runtime

    _approved_server_and_trusted_hook(project_dir, monkeypatch)
    runtime = await Runtime.open(cwd=project_dir)
    try:
        notice = "\n".join(runtime.warnings)
    finally:
        await runtime.close()
    assert "The MCP server srv" in notice and "unconfined_mcp_servers: [srv]" in notice, notice
    assert "The project's hook `make fmt` will not run: no OS sandbox works here" in notice, notice
    assert 'unconfined_hooks: ["make fmt"]' in notice, notice
