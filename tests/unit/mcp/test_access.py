"""Which MCP servers and tools a run may use: the profile's `mcp`, and read-only workspaces."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from yeetui.errors import ConfigError
from yeetui.mcp.client import McpConnections
from yeetui.mcp.servers import ServerSpec
from yeetui.mcp.tools import McpTool
from yeetui.runs.mcp_tools import McpAccess, server_allowed, tool_allowed
from yeetui.tools.registry import ToolRegistry


def test_profile_policies() -> None:
    assert server_allowed("inherit", "git") and not server_allowed("none", "git")
    assert server_allowed(["git", "ti*"], "time") and not server_allowed(["git"], "time")
    assert server_allowed(["git/git_status"], "git")
    assert tool_allowed("inherit", "git", "git_commit") and not tool_allowed("none", "git", "git_status")
    assert tool_allowed(["git"], "git", "git_commit")
    assert tool_allowed(["git/git_s*"], "git", "git_status") and not tool_allowed(["git/git_s*"], "git", "git_commit")


async def test_loading_a_server_the_run_may_not_use_is_refused() -> None:
    spec = ServerSpec(name="git", transport="stdio", scope="user", source="t", path=Path("/t"), command=("x",))
    access = McpAccess(McpConnections([spec]), ["git"], "inherit", ToolRegistry([]))
    refused = await access.load("time", None)
    assert refused.is_error and "No MCP server 'time' is available to this agent (available: git)" in refused.content
    assert access.loaded == []


async def test_a_read_only_workspace_gets_only_servers_the_user_marked_read_only(isolated_env, tmp_path: Path) -> None:
    from yeetui.runtime import Runtime

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (isolated_env / "config" / "config.yaml").write_text(
        "mcp_servers:\n  writer: {command: [w]}\n  reader: {command: [r], read_only: true}\n"
        "  other: {command: [o], read_only: true}\n")
    runtime = await Runtime.open(cwd=project, recover=False)
    try:
        specs = runtime.launcher.specs
        oracle, generic = runtime.profiles.get("oracle"), runtime.profiles.get("generic")
        read_only = specs.binding_for(oracle)
        writable = specs.binding_for(generic)
        assert specs.mcp_access(oracle, read_only).servers == ["reader", "other"]
        assert specs.mcp_access(generic, writable).servers == ["writer", "reader", "other"]
        scoped = generic.model_copy(update={"mcp": ["reader", "oth*/x"]})
        assert specs.mcp_access(scoped, writable).servers == ["reader", "other"]
        assert specs.mcp_access(generic.model_copy(update={"mcp": "none"}), writable) is None
        withheld = generic.model_copy(update={"disallowed_tools": ["mcp__writer", "mcp__reader__*", "mcp__other__x"]})
        access = specs.mcp_access(withheld, writable)
        assert access is not None and access.servers == ["other"]  # a whole server withheld by either form
        assert not access.allows(McpTool("other", "x", "mcp__other__x", "", {}))
        assert access.allows(McpTool("other", "y", "mcp__other__y", "", {}))
        assert "mcp_load" not in specs.offered_tools(generic, writable)
        assert "mcp_load" in specs.offered_tools(generic, writable, mcp=True)
    finally:
        await runtime.close()


async def test_the_index_waits_as_long_as_the_setting_says_for_a_server_that_does_not_answer(
        isolated_env, tmp_path: Path) -> None:
    """`mcp_index_wait` bounds how long a run's first request waits for its servers: a server that never
    answers is listed as still starting once it has passed (and the setting refuses an hour)."""
    from yeetui.runtime import Runtime
    from yeetui.settings.config import load_settings

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    config = isolated_env / "config" / "config.yaml"
    hung = f"[{sys.executable}, -c, 'import time; time.sleep(60)']"
    config.write_text(f"mcp_index_wait: 0.3\nmcp_servers:\n  slow: {{command: {hung}}}\n")
    runtime = await Runtime.open(cwd=project, recover=False)
    try:
        generic = runtime.profiles.get("generic")
        access = runtime.launcher.specs.mcp_access(generic, runtime.launcher.specs.binding_for(generic))
        assert access is not None and access.index_wait == 0.3
        assert "- slow: still starting (mcp_load waits for it)" in await access.index()
    finally:
        await runtime.close()
    config.write_text("mcp_index_wait: 3600\n")
    with pytest.raises(ConfigError, match="mcp_index_wait"):
        load_settings(project_dir=project)
