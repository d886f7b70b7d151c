"""An MCP server asks the user something (elicitation): the real `server-everything`'s
`trigger-elicitation-request` tool, called by an agent. In the app it is a form — its fields with their
defaults, checked before they go back — and what the user sent (or that they declined) is what the server, and
so the agent, hears. Headless, nobody can fill it in: it is refused, and the server hears why."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fakellm import Reply
from tests.integration.helpers import run_yeetui
from tests.tui.test_app import _main, _type
from tests.waiting import pilot_until
from yeetui.mcp.forms import FormRequest, checked, form_request
from yeetui.tui.app import YeetuiApp
from yeetui.tui.screens.form import FormScreen

EVERYTHING = Path(__file__).resolve().parents[2] / ".ci" / "cache" / "npm" / "node_modules" / ".bin" / \
    "mcp-server-everything"
needs_everything = pytest.mark.skipif(not EVERYTHING.exists(), reason="npm's @modelcontextprotocol/server-everything "
                                      "is installed by .ci/run")
TOOL = "mcp__everything__trigger-elicitation-request"


@pytest.fixture
def everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    config = Path(os.environ["YEETUI_CONFIG_DIR"]) / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"mcp_index_wait: 60\nmcp_servers:\n  everything: {{command: [{EVERYTHING}, stdio]}}\n"
                      f"permissions:\n  'mcp__everything__*': allow\n")


def _script(fake_env) -> None:
    fake_env.script(Reply.tool("mcp_load", server="everything", tools=["trigger-elicitation-request"]),
                    Reply.tool(TOOL),
                    Reply(text="Heard it.", when_contains="trigger-elicitation-request", repeat=True))


def _tool_result(fake_env) -> str:
    """What the elicitation tool answered the agent (its result, as the last request carried it)."""
    messages = fake_env.requests[-1].body["messages"]
    results = [block for m in messages if isinstance(m["content"], list) for block in m["content"]
               if block.get("type") == "tool_result"]
    content = results[-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


@needs_everything
async def test_a_servers_form_is_filled_in_checked_and_sent(fake_env, project: Path, everything) -> None:
    _script(fake_env)
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(140, 50)) as pilot:
        await _main(pilot)
        await _type(pilot, "ask me for my details")
        await pilot_until(pilot, lambda: isinstance(app.screen, FormScreen), timeout=60)
        form: FormScreen = app.screen  # type: ignore[assignment]  # the wait above says it is one
        assert form.request.server == "everything"
        assert form.values()["firstLine"] == "It was a dark and stormy night."  # the schema's default
        assert form.values()["integer"] == "42"
        # a wrong value is said beside its field, and nothing is sent
        # the first field has the focus: what the user types goes there at once
        await pilot_until(pilot, lambda: app.focused is form.query_one("#form-field-name"))
        await pilot.press(*"Ada Lovelace")
        assert form.values()["name"] == "Ada Lovelace"
        form.query_one("#form-field-email").value = "not an email"  # type: ignore[attr-defined]
        form.send()
        await pilot.pause()
        assert isinstance(app.screen, FormScreen)
        assert "needs an email address" in str(form.query_one("#form-wrong-email").render())
        form.query_one("#form-field-email").value = "ada@example.com"  # type: ignore[attr-defined]
        await pilot_until(pilot, lambda: form.query_one("#form-send").region.width > 0)
        assert await pilot.click("#form-send"), "the Send button was not clicked"
        await pilot_until(pilot, lambda: not isinstance(app.screen, FormScreen) and len(fake_env.requests) >= 3,
                          timeout=60)
    said = _tool_result(fake_env)
    assert "Ada Lovelace" in said and "ada@example.com" in said and "accept" in said, said
    assert "It was a dark and stormy night." in said  # a default the user left is sent as shown


@needs_everything
async def test_a_declined_form_is_heard_as_declined(fake_env, project: Path, everything) -> None:
    _script(fake_env)
    app = YeetuiApp(cwd=project)
    async with app.run_test(size=(140, 50)) as pilot:
        await _main(pilot)
        await _type(pilot, "ask me for my details")
        await pilot_until(pilot, lambda: isinstance(app.screen, FormScreen), timeout=60)
        await pilot.wait_for_scheduled_animations()
        await pilot_until(pilot, lambda: app.screen.query("#form-decline") and
                          app.screen.query_one("#form-decline").region.width > 0)
        clicked = await pilot.click("#form-decline")
        assert clicked, "the Decline button was not clicked"
        await pilot_until(pilot, lambda: not isinstance(app.screen, FormScreen), timeout=10)
        await pilot_until(pilot, lambda: len(fake_env.requests) >= 3, timeout=60)
    said = _tool_result(fake_env)
    assert "decline" in said and "Ada" not in said, said


@needs_everything
def test_headless_the_form_is_refused_and_the_server_hears_why(fake_env, project: Path, everything) -> None:
    fake_env.script(Reply.tool("mcp_load", server="everything", tools=["trigger-elicitation-request"]),
                    Reply.tool(TOOL), Reply.tool("complete", output="done"))
    done = run_yeetui("run", "--json", "ask me", cwd=project, timeout=180)
    assert done.returncode == 0, done.stderr
    said = _tool_result(fake_env)
    assert "nobody can fill in a form here" in said, said


def test_a_hostile_form_is_refused_or_shown_safely() -> None:
    class Params:
        mode = "form"
        message = "\x1b[2Jhello" + "x" * 5000
        requested_schema = {"type": "object", "required": ["n"], "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 5, "title": "\x1b]0;pwned\x07N"},
            "pick": {"type": "string", "enum": ["a", "b"]}}}

    request = form_request("srv", Params())
    assert isinstance(request, FormRequest) and "\x1b" not in request.message and len(request.message) < 2100
    assert "\x1b" not in request.fields[0].title and "\x07" not in request.fields[0].title
    assert checked(request, {"n": "9", "pick": "c"})[1] == {"n": "at most 5", "pick": "one of the choices"}
    assert checked(request, {"n": "3", "pick": "a"}) == ({"n": 3, "pick": "a"}, {})
    assert checked(request, {})[1] == {"n": "needed"}

    class Nested(Params):
        requested_schema = {"type": "object", "properties": {"deep": {"type": "object"}}}

    with pytest.raises(ValueError, match="type a form cannot ask for"):
        form_request("srv", Nested())

    class Page(Params):
        mode = "url"
        url = "javascript:alert(1)"

    with pytest.raises(ValueError, match="https://"):
        form_request("srv", Page())
