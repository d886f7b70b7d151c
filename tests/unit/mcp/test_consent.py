"""A server a project's file defines starts only once the user approved exactly that server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yeetui.application.mcp import McpServers
from yeetui.errors import YeetuiError
from yeetui.settings.trust import set_trusted


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "userhome"
    folder.mkdir()
    return folder


def servers(project_dir: Path, home: Path, **env: str) -> McpServers:
    import os

    return McpServers(project_dir, env={**os.environ, "HOME": str(home), **env}, home=home)


def write_mcp(project_dir: Path, servers_: dict) -> None:
    (project_dir / ".mcp.json").write_text(json.dumps({"mcpServers": servers_}))


async def states(desk: McpServers) -> dict[str, str]:
    return {row.spec.name: row.state for row in (await desk.listing()).rows}


async def test_approval_is_of_the_exact_server_and_an_edit_asks_again(project_dir: Path, home: Path) -> None:
    write_mcp(project_dir, {"git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"T": "${REPO_PATH}"}}})
    desk = servers(project_dir, home, REPO_PATH="one")
    assert await states(desk) == {"git": "needs approval"}
    approved = await desk.approve("git")
    assert approved.target == "uvx mcp-server-git"
    assert await states(desk) == {"git": "approved"}

    # the value is not keyed on
    assert await states(servers(project_dir, home, REPO_PATH="rotated")) == {"git": "approved"}

    write_mcp(project_dir, {"git": {"command": "uvx", "args": ["mcp-server-git", "--evil"],
                                    "env": {"T": "${REPO_PATH}"}}})
    assert await states(desk) == {"git": "needs approval"}  # an edited command
    write_mcp(project_dir, {"git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"T": "${REPO_PATH}",
                                                                                       "NODE_OPTIONS": "-r x"}}})
    assert await states(desk) == {"git": "needs approval"}  # a new env entry
    write_mcp(project_dir, {"git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"T": "literal"}}})
    assert await states(desk) == {"git": "needs approval"}  # an env entry edited as written


async def test_a_same_named_server_in_another_project_asks_again(project_dir: Path, home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    for folder in (project_dir, other):
        write_mcp(folder, {"git": {"command": "uvx", "args": ["mcp-server-git"]}})
    await servers(project_dir, home).approve("git")
    assert await states(servers(other, home)) == {"git": "needs approval"}


async def test_enable_all_settings_and_trust_are_not_consent(project_dir: Path, home: Path) -> None:
    write_mcp(project_dir, {"git": {"command": "uvx"}})
    (project_dir / ".claude").mkdir()
    (project_dir / ".claude" / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True,
                                                                    "enabledMcpjsonServers": ["git"]}))
    real = str(project_dir.resolve())  # noqa: ASYNC240  (a test's own setup)
    (home / ".claude.json").write_text(json.dumps({"projects": {real: {
        "enableAllProjectMcpServers": True, "enabledMcpjsonServers": ["git"]}}}))
    set_trusted(project_dir)
    assert await states(servers(project_dir, home)) == {"git": "needs approval"}


async def test_user_servers_need_no_approval_and_revoke_withdraws_it(project_dir: Path, home: Path) -> None:
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"time": {"command": "mcp-server-time"}}}))
    write_mcp(project_dir, {"git": {"command": "uvx"}})
    desk = servers(project_dir, home)
    assert await states(desk) == {"git": "needs approval", "time": "user"}
    with pytest.raises(YeetuiError, match="needs no approval"):
        await desk.approve("time")
    with pytest.raises(YeetuiError, match=r"No MCP server called 'nope'.*known: git, time"):
        await desk.approve("nope")
    await desk.approve("git")
    assert await desk.revoke("git") == 1
    assert await states(desk) == {"git": "needs approval", "time": "user"}
    assert await desk.revoke("git") == 0


async def test_an_unreadable_approvals_file_approves_nothing(project_dir: Path, home: Path, isolated_env: Path) -> None:
    write_mcp(project_dir, {"git": {"command": "uvx"}})
    desk = servers(project_dir, home)
    await desk.approve("git")
    approvals = isolated_env / "data" / "mcp-approvals.json"
    assert approvals.stat().st_mode & 0o077 == 0  # private to the user
    approvals.write_text("{garbage")
    assert await states(desk) == {"git": "needs approval"}
    approvals.write_text(json.dumps({"approved": ["not", "a", "mapping"]}))
    assert await states(desk) == {"git": "needs approval"}
    await desk.approve("git")  # and approving again repairs it
    assert await states(desk) == {"git": "approved"}


async def test_the_executable_a_command_resolves_to_is_pinned(project_dir: Path, home: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 46, item 1: the approval pins the program the command resolves to as well as the project's files —
    a binary replaced in place, or another one put first on PATH, asks again naming the executable."""
    first, earlier = tmp_path / "bin1", tmp_path / "bin0"
    first.mkdir()
    earlier.mkdir()
    tool = first / "mytool"
    tool.write_text("#!/bin/sh\nexec cat\n")
    tool.chmod(0o755)
    write_mcp(project_dir, {"t": {"command": "mytool", "args": ["--stdio"]}})
    monkeypatch.setenv("PATH", f"{earlier}:{first}:/usr/bin:/bin")  # the user's PATH, which the server runs on
    desk = servers(project_dir, home)
    await desk.approve("t")
    assert await states(desk) == {"t": "approved"}

    tool.write_text("#!/bin/sh\nexec cat # and something else\n")  # replaced in place
    [row] = (await desk.listing()).rows
    assert row.state == "needs approval" and f"executable {tool.resolve()}" in (row.reason or ""), row.reason
    await desk.approve("t")

    shadow = earlier / "mytool"  # another program of the same name, earlier on PATH
    shadow.write_text("#!/bin/sh\nexec cat\n")
    shadow.chmod(0o755)
    [row] = (await desk.listing()).rows
    assert row.state == "needs approval" and f"executable {shadow.resolve()}" in (row.reason or ""), row.reason
