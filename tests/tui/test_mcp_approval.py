"""The MCP approval dialog at start: a server a project's file defines starts only once the user has seen what
it runs and chose to start it — remembered for exactly that command — and "Not now" starts nothing. Keys typed
as yeetui starts never approve (the dialog is a `DeliberateScreen`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.fakellm import Reply, ToolCall
from tests.tui.deliberate import SettleClock, shown
from tests.tui.test_app import _main, _text, _type
from tests.waiting import pilot_until
from yeetui.application.mcp import McpServers
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.mcp_approval import McpApprovalScreen
from yeetui.tui.screens.permission import PermissionScreen


def _project_server(project: Path, *, args: list[str] | None = None) -> Path:
    config = project / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"clock": {
        "command": sys.executable, "args": args or ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        "env": {"CLOCK_TOKEN": "s3cr3t-value-in-the-file", "TZ_HOME": "${HOME}"}}}}))
    return config


def _state(project: Path) -> str:
    servers = McpServers(project)
    [spec] = [s for s in servers.discover().servers if s.name == "clock"]
    return servers.state(spec)


async def test_starting_a_projects_server_from_the_dialog_approves_it_and_its_tools_work(
        fake_env, project: Path, settle_clock: SettleClock) -> None:
    config = _project_server(project)
    fake_env.script(Reply.tool("mcp_load", server="clock"),
                    Reply(tool_calls=[ToolCall("mcp__clock__get_current_time", {"timezone": "UTC"})]),
                    Reply(text="It is now.", when_contains="timezone"))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 32)) as pilot:
        screen = await shown(pilot, McpApprovalScreen)
        target = str(screen.query_one("#mcp-target-text").render())
        assert f"runs: {sys.executable} -m mcp_server_time --local-timezone UTC" in target
        # every value as the file writes it: a literal is in the repository for anyone to read; a reference is
        # shown as a reference, never expanded
        assert "env CLOCK_TOKEN: s3cr3t-value-in-the-file" in target and "env TZ_HOME: ${HOME}" in target
        assert "confined: read-only filesystem, yeetui's files hidden, network allowed" in target
        assert str(config) in str(screen.query_one("#mcp-source").render())
        assert app.focused is screen.query_one("#mcp-not-now")
        settle_clock.past_window()
        await pilot.press("tab", "enter")  # to "Start it", then enter
        main = await _main(pilot)
        assert _state(project) == "approved"
        assert "clock" in main.surface.runtime.launcher.mcp.names()
        await _type(pilot, "what time is it")
        # MCP tools ask; the dialog's text is there once it has composed, a moment after it is on top
        await pilot_until(pilot, lambda: isinstance(app.screen, PermissionScreen)
                          and "mcp__clock__get_current_time" in _text(app.screen), timeout=60)
        await pilot.press("y")
        await pilot_until(pilot, lambda: len(fake_env.requests) >= 3, timeout=60)
    assert "timezone" in fake_env.requests[2].text and '"UTC"' in fake_env.requests[2].text


async def test_not_now_starts_nothing_and_asks_again_next_time(fake_env, project: Path,
                                                               settle_clock: SettleClock) -> None:
    marker = project / "started"
    _project_server(project, args=["-c", f"open({str(marker)!r}, 'w').close()"])
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 32)) as pilot:
        screen = await shown(pilot, McpApprovalScreen)
        await pilot.press("tab", "enter")  # typed ahead as the dialog appears: taken by nothing
        await pilot.pause()
        assert app.screen is screen and _state(project) == "needs approval"
        settle_clock.past_window()
        await pilot.press("escape")
        main = await _main(pilot)
        assert main.surface.runtime.launcher.mcp.names() == []  # no server may start
        assert any("MCP server clock" in w and "needs your approval" in w for w in main.surface.warnings)
    assert _state(project) == "needs approval" and not marker.exists()
    async with YeetuiApp(cwd=project).run_test(size=(110, 32)) as pilot:
        await shown(pilot, McpApprovalScreen)  # asked again


async def test_an_edited_command_asks_again(fake_env, project: Path, settle_clock: SettleClock) -> None:
    _project_server(project)
    approved = next(s for s in McpServers(project).discover().servers if s.name == "clock")
    await McpServers(project).approve_shown(approved)
    _project_server(project, args=["-m", "mcp_server_time", "--local-timezone", "Europe/Paris"])
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 32)) as pilot:
        screen = await shown(pilot, McpApprovalScreen)
        assert "Europe/Paris" in str(screen.query_one("#mcp-target-text").render())


async def test_a_file_changed_while_the_dialog_is_open_is_not_approved_unseen(fake_env, project: Path,
                                                                              settle_clock: SettleClock) -> None:
    marker = project / "swapped-in"
    _project_server(project)
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 32)) as pilot:
        await shown(pilot, McpApprovalScreen)
        _project_server(project, args=["-c", f"open({str(marker)!r}, 'w').close()"])  # swapped behind the dialog
        settle_clock.past_window()
        await pilot.press("tab", "enter")
        main = await _main(pilot)
        assert main.surface.runtime.launcher.mcp.names() == []
        assert _state(project) == "needs approval"
    assert not marker.exists()


async def test_the_dialog_shows_the_arguments_once(fake_env, project: Path) -> None:
    """Issue 47, item 6: the command line appears once (the `runs:` line), then what is pinned of it."""
    (project / "tools").mkdir()
    (project / "tools" / "srv.py").write_text("print('a server')\n")
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"clock": {
        "command": "python3", "args": ["tools/srv.py", "--port", "3917"]}}}))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(110, 40)) as pilot:
        screen = await shown(pilot, McpApprovalScreen)
        everything = "\n".join(str(w.render()) for w in screen.query("Static"))
        assert everything.count("3917") == 1 and "runs: python3 tools/srv.py --port 3917" in everything
        assert "pins: executable " in everything and everything.count("tools/srv.py") == 2  # run, and pinned
