"""Issue 47, item 7, in the app: an MCP server that failed to start is said in the conversation — once, naming
the server, the file that defines it and why — and `/mcp` shows every server with its state, where it comes
from, what it runs, a failed one's reason and how to approve one that waits for approval."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.fakellm import Reply
from tests.tui.deliberate import SettleClock, shown
from tests.tui.test_app import _main, _text, _type
from tests.waiting import pilot_until
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.help import HelpScreen
from yeetui.tui.screens.mcp_approval import McpApprovalScreen
from yeetui.tui.widgets.conversation import ConversationView
from yeetui.tui.widgets.message_views import NoticeView

PY = sys.executable
GONE = "no-such-mcp-server-anywhere"


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Your own config with a server that works, one whose command is missing and one that exits at once after
    writing to stderr; a home of the test's own (no real ~/.claude.json is read). The config file's path."""
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    config = Path(os.environ["YEETUI_CONFIG_DIR"]) / "config.yaml"
    config.write_text(
        "mcp_index_wait: 60\n"  # a loaded machine's slow start is not a failure here
        "mcp_servers:\n"
        f"  time: {{command: [{PY}, -m, mcp_server_time, --local-timezone, UTC]}}\n"
        f"  gone: {{command: [{GONE}, --stdio]}}\n"
        f"  crash: {{command: [{PY}, -c, 'import sys; sys.exit(\"no such database: app.db\")']}}\n")
    return config


def _notices(app: YeetuiApp) -> list[str]:
    return [str(n.render()) for n in app.screen.query_one(ConversationView).query(NoticeView)]


def _told(app: YeetuiApp, server: str) -> list[str]:
    return [text for text in _notices(app) if f"The MCP server {server} from " in text]


async def test_a_server_that_fails_to_start_is_said_once_in_the_conversation(fake_env, project: Path,
                                                                             servers: Path) -> None:
    fake_env.script(Reply(text="First answer."), Reply(text="Second answer."))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 40)) as pilot:
        await _main(pilot)
        await _type(pilot, "hello")  # the first agent that may use them starts them
        await pilot_until(pilot, lambda: _told(app, "gone") and _told(app, "crash") and len(fake_env.requests) >= 1,
                     timeout=60)
        [gone] = _told(app, "gone")
        assert f"from yeetui {servers} (your own config) did not start: command not found: {GONE}." in gone
        [crash] = _told(app, "crash")
        assert "did not start: exited with status 1: no such database: app.db" in crash
        assert not _told(app, "time")
        await _type(pilot, "and again")
        await pilot_until(pilot, lambda: len(fake_env.requests) >= 2, timeout=60)
        await pilot_until(pilot, lambda: "Second answer." in _text(app.screen), timeout=30)
        assert len(_told(app, "gone")) == 1 and len(_told(app, "crash")) == 1  # once, not once per turn


async def test_slash_mcp_shows_every_server_its_state_source_target_and_why(
        fake_env, project: Path, servers: Path, settle_clock: SettleClock) -> None:
    marker = project / "theirs-started"
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"theirs": {
        "command": PY, "args": ["-c", f"open({str(marker)!r}, 'w').close()"]}}}))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(160, 50)) as pilot:
        await shown(pilot, McpApprovalScreen)
        settle_clock.past_window()
        await pilot.press("escape")  # not now
        await _main(pilot)
        await _type(pilot, "/mcp")  # no prompt yet: /mcp starts those that may start, and waits for them
        await pilot_until(pilot, lambda: any(t.startswith("ℹ MCP servers (4") for t in _notices(app)), timeout=60)
        [card] = [t for t in _notices(app) if t.startswith("ℹ MCP servers (4")]
        lines = card.splitlines()
        at = {line.split(" — ")[0]: n for n, line in enumerate(lines) if " — " in line and not line.startswith(" ")}
        assert lines[at["time"]] == "time — connected, 2 tools"
        assert lines[at["time"] + 1] == f"  from yeetui {servers} (your own config)"
        assert lines[at["time"] + 2] == f"  runs: {PY} -m mcp_server_time --local-timezone UTC"
        assert lines[at["time"] + 3] == "  tools (mcp__time__…): get_current_time, convert_time"
        assert lines[at["gone"]] == f"gone — failed: command not found: {GONE}"
        assert lines[at["gone"] + 2] == f"  runs: {GONE} --stdio"
        assert lines[at["crash"]] == "crash — failed: exited with status 1: no such database: app.db"
        assert lines[at["theirs"]].startswith("theirs — needs your approval: run `yeetui mcp approve theirs` in a "
                                              "shell")
        assert "then start yeetui again" in lines[at["theirs"]]
        assert lines[at["theirs"] + 1] == f"  from Claude Code .mcp.json (the project's file): {project / '.mcp.json'}"
        assert not marker.exists()  # /mcp starts nothing that waits for approval
        # the failures /mcp's start found are said too, once
        await pilot_until(pilot, lambda: len(_told(app, "gone")) == 1 and len(_told(app, "crash")) == 1)

        await _type(pilot, "/help")
        await pilot_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert "/mcp" in _text(app.screen)


async def test_slash_mcp_with_no_server_says_where_servers_are_read(fake_env, project: Path,
                                                                    tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(120, 40)) as pilot:
        await _main(pilot)
        await _type(pilot, "/mcp")
        await pilot_until(pilot, lambda: any("No MCP servers are configured" in t for t in _notices(app)))
