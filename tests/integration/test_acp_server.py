"""`yeetui acp` driven by the ACP SDK's own client over stdio, as an editor drives it: a whole turn streamed as
session updates, a permission asked in the client, a slash command's subagent, cancel, `session/load` and
`session/list`; bad requests come back as errors naming what is wrong."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from acp import PROTOCOL_VERSION, RequestError, schema, text_block
from acp.stdio import spawn_agent_process

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import run_yeetui
from tests.integration.zygote import ZYGOTE
from yeetui import paths
from yeetui.messages import Usage
from yeetui.providers.pricing import cost_usd
from yeetui.system.tmux import TmuxServer, server_name

_PASSED = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "YEETUI_CONFIG_DIR",
           "YEETUI_DATA_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "LITELLM_LOCAL_MODEL_COST_MAP", "YEETUI_NETGUARD",
           "YEETUI_SANDBOX", "PYTHONPATH", "HOME", "PATH", "XDG_RUNTIME_DIR")
"""What the client passes on to the yeetui it starts. XDG_RUNTIME_DIR too, as a desktop session's has it:
without it yeetui's relay folder for each test's data dir was left in /tmp/yeetui-UID."""
WAIT = 60.0


class EditorClient:
    """What an editor does with the updates: keeps them, and answers permission requests as told. It has only the
    methods it answers (the SDK routes those a client has; the protocol class names them all), so it is handed to
    the SDK as `Any`."""

    def __init__(self, answer: str | None = "allow_once") -> None:
        self.updates: list[tuple[str, Any]] = []
        self.asked: list[schema.RequestPermissionRequest] = []
        self.answer = answer

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **_: Any) -> schema.RequestPermissionResponse:
        self.asked.append(schema.RequestPermissionRequest(session_id=session_id, tool_call=tool_call, options=options))
        self.updates.append((session_id, schema.ToolCallProgress(session_update="tool_call_update",
                                                                 tool_call_id="(asked)", title="permission")))
        if self.answer is None:
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        return schema.RequestPermissionResponse(outcome=schema.AllowedOutcome(outcome="selected",
                                                                              option_id=self.answer))

    def of(self, kind: str, session_id: str | None = None) -> list[Any]:
        return [u for s, u in self.updates if u.session_update == kind and (session_id is None or s == session_id)
                and getattr(u, "tool_call_id", None) != "(asked)"]

    def order(self, session_id: str) -> list[str]:
        """What reached the editor, in order: update kinds, `asked` for a permission request."""
        return ["asked" if getattr(u, "tool_call_id", None) == "(asked)" else u.session_update
                for s, u in self.updates if s == session_id]

    def text(self, session_id: str) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk", session_id))


def _env() -> dict[str, str]:
    env = {k: os.environ[k] for k in _PASSED if k in os.environ}
    env["YEETUI_MODEL"] = "anthropic/claude-sonnet-4-5"
    return env


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _agent(client: EditorClient, project: Path):
    """`yeetui acp` as an editor starts it. On leaving, its stdin is closed and it exits on its own; the SDK's
    default 2 s for that was too short beside two CPU hogs, and its terminate() after the wait timed out then
    raised ProcessLookupError for a process that had exited meanwhile."""
    return spawn_agent_process(cast(Any, client), *ZYGOTE.argv("acp"), env=_env(), cwd=project,
                               transport_kwargs={"stderr": subprocess.DEVNULL, "shutdown_timeout": 60.0})


async def test_a_turn_streams_text_tool_calls_and_asks_permission_in_the_client(fake_env, project: Path) -> None:
    fake_env.script(
        Reply(text="Let me look.", tool_calls=[ToolCall("bash", {"command": "echo ACP-RAN > out.txt"})],
              when_contains="ACP-TURN"),
        Reply(text="Done: wrote out.txt.", when_contains="exit"))
    client = EditorClient("allow_once")
    async with _agent(client, project) as (conn, _process):
        init = await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), WAIT)
        assert init.agent_capabilities.load_session and init.agent_info.name == "yeetui"
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        answer = await asyncio.wait_for(conn.prompt(session_id=session.session_id,
                                                    prompt=[text_block("ACP-TURN write a file")]), WAIT)
        assert answer.stop_reason == "end_turn"
        assert answer.usage is not None and answer.usage.output_tokens > 0 and answer.usage.input_tokens > 0
        sid = session.session_id
        measured = client.of("usage_update", sid)[-1]  # the context in use, against the model's window
        assert 0 < measured.used < measured.size == 200_000 and measured.cost.amount > 0
        assert client.text(sid) == "Let me look.Done: wrote out.txt."
        [started] = client.of("tool_call", sid)
        assert started.kind == "execute" and started.raw_input == {"command": "echo ACP-RAN > out.txt"}
        [asked] = client.asked
        assert asked.session_id == sid and asked.tool_call.tool_call_id == started.tool_call_id
        assert {o.kind for o in asked.options} == {"allow_once", "allow_always", "reject_once"}
        [finished] = client.of("tool_call_update", sid)
        assert finished.tool_call_id == started.tool_call_id and finished.status == "completed"
        commands = client.of("available_commands_update", sid)[0].available_commands
        assert {"oracle", "review"} <= {c.name for c in commands}
        # the order an editor relies on: the call, then the question about it, then its end
        order = [k for k in client.order(sid) if k in ("tool_call", "asked", "tool_call_update")]
        assert order == ["tool_call", "asked", "tool_call_update"], client.order(sid)
    assert (project / "out.txt").read_text().strip() == "ACP-RAN"


async def test_a_denied_call_does_not_run_and_the_model_hears_it(fake_env, project: Path) -> None:
    fake_env.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "touch denied.txt"})], when_contains="ACP-DENY"),
        Reply(text="Understood, I will not.", when_contains="denied"))
    client = EditorClient(None)  # the user closed the question: cancelled
    async with _agent(client, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        answer = await asyncio.wait_for(conn.prompt(session_id=session.session_id,
                                                    prompt=[text_block("ACP-DENY touch it")]), WAIT)
        assert answer.stop_reason == "end_turn" and len(client.asked) == 1
        [finished] = client.of("tool_call_update", session.session_id)
        assert finished.status == "failed"
    assert not (project / "denied.txt").exists()


async def test_a_slash_command_runs_its_subagent_as_a_tool_call_and_its_answer_is_the_turns(fake_env,
                                                                                            project: Path) -> None:
    fake_env.script(Reply(tool_calls=[ToolCall("complete", {"output": "Oracle says 42."})],
                          when_contains="ACP-ORACLE"))
    client = EditorClient()
    async with _agent(client, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        answer = await asyncio.wait_for(conn.prompt(session_id=session.session_id,
                                                    prompt=[text_block("/oracle ACP-ORACLE what is 6*7?")]), WAIT)
        assert answer.stop_reason == "end_turn"
        [started] = client.of("tool_call", session.session_id)
        assert started.title.startswith("oracle#") and started.raw_input["profile"] == "oracle"
        [ended] = client.of("tool_call_update", session.session_id)
        assert ended.status == "completed" and ended.content[0].content.text == "Oracle says 42."
        assert client.text(session.session_id) == "Oracle says 42."  # the turn's answer, after its call
        assert [k for k in client.order(session.session_id) if k != "usage_update"][-3:] == [
            "tool_call", "tool_call_update", "agent_message_chunk"]


async def test_cancel_ends_the_turn_as_cancelled(fake_env, project: Path) -> None:
    fake_env.script(Reply(text="slow " * 400, chunk_size=20, chunk_delay=1.0, when_contains="ACP-SLOW"))
    client = EditorClient()
    async with _agent(client, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("ACP-SLOW go")]))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT
        while not client.of("agent_message_chunk", session.session_id):
            assert loop.time() < deadline, "no text streamed"
            await asyncio.sleep(0.02)
        await conn.cancel(session_id=session.session_id)
        answer = await asyncio.wait_for(turn, WAIT)
        assert answer.stop_reason == "cancelled"


async def test_load_replays_a_conversation_and_list_finds_it(fake_env, project: Path) -> None:
    fake_env.script(Reply(text="First answer.", when_contains="ACP-FIRST"))
    client = EditorClient()
    async with _agent(client, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("ACP-FIRST hi")]), WAIT)
    again = EditorClient()
    async with _agent(again, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        listed = await conn.list_sessions(cwd=str(project))
        assert session.session_id in {s.session_id for s in listed.sessions}
        await conn.load_session(cwd=str(project), session_id=session.session_id, mcp_servers=[])
        users = [u.content.text for u in again.of("user_message_chunk", session.session_id)]
        assert users == ["ACP-FIRST hi"] and again.text(session.session_id) == "First answer."
    # another front end on the same data dir sees the editor's conversation, the run and its answer
    shown = run_yeetui("sessions", "show", session.session_id, cwd=project)
    assert shown.returncode == 0 and "ACP-FIRST hi" in shown.stdout and "First answer." in shown.stdout, shown
    resumed = EditorClient()
    fake_env.script(Reply(text="Second answer.", when_contains="First answer."))
    async with _agent(resumed, project) as (conn, _process):
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.agent_capabilities.session_capabilities.resume is not None
        await conn.resume_session(cwd=str(project), session_id=session.session_id, mcp_servers=[])
        assert resumed.text(session.session_id) == ""  # nothing replayed
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("and then?")]), WAIT)
        assert resumed.text(session.session_id) == "Second answer."  # the model saw the earlier turn
    async with _agent(again, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        with pytest.raises(RequestError) as unknown:
            await conn.load_session(cwd=str(project), session_id="ffffffffffffffff", mcp_servers=[])
        assert "ffffffffffffffff" in str(unknown.value.data)
        with pytest.raises(RequestError) as not_open:
            await conn.prompt(session_id="nope", prompt=[text_block("x")])
        assert "nope" in str(not_open.value.data)
        with pytest.raises(RequestError) as relative:
            await conn.new_session(cwd="relative/dir", mcp_servers=[])
        assert "absolute" in str(relative.value.data)


def _shown(updates: list[tuple[str, Any]], session_id: str) -> list[tuple[Any, ...]]:
    """What an editor shows of a conversation: text and thoughts (however they were cut into chunks), each tool
    call and its ending."""
    shown: list[tuple[Any, ...]] = []
    for kind, update in [(u.session_update, u) for s, u in updates if s == session_id]:
        if kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
            if shown and shown[-1][0] == kind:
                shown[-1] = (kind, shown[-1][1] + update.content.text)
            else:
                shown.append((kind, update.content.text))
        elif kind == "tool_call":
            shown.append((kind, update.tool_call_id, update.kind, update.raw_input))
        elif kind == "tool_call_update" and update.tool_call_id != "(asked)":
            shown.append((kind, update.tool_call_id, update.status, [c.content.text for c in update.content or []]))
    return shown


async def test_load_shows_the_conversation_as_the_editor_saw_it_live(fake_env, project: Path) -> None:
    fake_env.script(
        Reply(text="Let me look.", thinking="Where is it?", tool_calls=[ToolCall("bash", {"command": "echo FOUND"})],
              when_contains="ACP-WHOLE"),
        Reply(text="It is there.", tool_calls=[ToolCall("complete", {"output": "WHOLE-ANSWER: found it."})],
              when_contains="FOUND"),
        Reply(text="Second turn.", when_contains="again"))
    live = EditorClient("allow_once")
    async with _agent(live, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        sid = session.session_id
        await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("ACP-WHOLE find it")]), WAIT)
        turn = len(live.updates)
        await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("again")]), WAIT)
    assert live.text(sid) == "Let me look.It is there.\n\nWHOLE-ANSWER: found it.Second turn."
    loaded = EditorClient()
    async with _agent(loaded, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        await conn.load_session(cwd=str(project), session_id=sid, mcp_servers=[])
    first, second = ("user_message_chunk", "ACP-WHOLE find it"), ("user_message_chunk", "again")
    seen = [first, *_shown(live.updates[:turn], sid), second, *_shown(live.updates[turn:], sid)]
    assert _shown(loaded.updates, sid) == seen  # what the user said, then what was shown live of each turn
    assert [k for k, *_ in seen] == ["user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "tool_call",
                                     "tool_call_update", "agent_message_chunk", "user_message_chunk",
                                     "agent_message_chunk"]


async def test_the_model_is_a_config_option_of_the_session(fake_env, project: Path) -> None:
    fake_env.script(Reply(text="from haiku", when_contains="ACP-MODEL"))
    client = EditorClient()
    async with _agent(client, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        model, mode = session.config_options
        assert model.id == "model" and model.category == "model"
        assert model.current_value == "anthropic/claude-sonnet-4-5"
        assert mode.id == "mode" and mode.category == "mode" and mode.current_value == "generic"
        changed = await conn.set_config_option(config_id="model", session_id=session.session_id,
                                               value="anthropic/claude-haiku-4-5")
        assert changed.config_options[0].current_value == "anthropic/claude-haiku-4-5"
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("ACP-MODEL hi")]), WAIT)
        assert fake_env.requests[-1].body["model"] == "claude-haiku-4-5"
        with pytest.raises(RequestError) as bad:
            await conn.set_config_option(config_id="model", session_id=session.session_id, value="no-provider")
        assert "provider/model" in str(bad.value.data)
        with pytest.raises(RequestError):
            await conn.set_config_option(config_id="colour", session_id=session.session_id, value="red")


# -- the subagent tree, for a client that opted in (clientCapabilities.subagents) ----------------------------------

ORACLE = "You are the oracle"
"""In the oracle's system prompt only."""


class Wire:
    """Every message the editor received, as it came (the SDK's models do not know the subagent messages)."""

    def __init__(self) -> None:
        self.incoming: list[dict[str, Any]] = []

    def observe(self, event: Any) -> None:
        if event.direction == "incoming":
            self.incoming.append(event.message)

    def updates(self, session_id: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        return [m["params"]["update"] for m in self.incoming if m.get("method") == "session/update"
                and (session_id is None or m["params"]["sessionId"] == session_id)
                and (kind is None or m["params"]["update"].get("sessionUpdate") == kind)]

    def first_index(self, predicate: Any) -> int:
        return next(i for i, m in enumerate(self.incoming) if predicate(m))


async def _opt_in(conn: Any) -> None:
    """`initialize` as a client that knows subagents sends it (the SDK's own model would drop the field)."""
    await conn._conn.send_request("initialize", {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": {
        "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False, "subagents": {}}})


def _tree_script(fake_env) -> None:
    fake_env.script(
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "TREE-CHILD look around",
                                                      "blocking": True})], when_contains="TREE-PARENT",
              usage={"input_tokens": 1000, "output_tokens": 10}),
        Reply(text="Child looked.", tool_calls=[ToolCall("complete", {"output": "CHILD-RESULT"})],
              when_contains=ORACLE, usage={"input_tokens": 400, "output_tokens": 20}),
        Reply(text="Parent done.", when_contains="CHILD-RESULT", usage={"input_tokens": 2000, "output_tokens": 5}))


async def test_an_opted_in_client_sees_each_subagent_as_a_session_of_its_own(fake_env, project: Path) -> None:
    _tree_script(fake_env)
    client, wire = EditorClient(), Wire()
    async with spawn_agent_process(cast(Any, client), *ZYGOTE.argv("acp"), env=_env(), cwd=project,
                                   transport_kwargs={"stderr": subprocess.DEVNULL},
                                   observers=[wire.observe]) as (conn, _process):
        await _opt_in(conn)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        root = session.session_id
        answer = await asyncio.wait_for(conn.prompt(session_id=root, prompt=[text_block("TREE-PARENT ask it")]), WAIT)
        assert answer.stop_reason == "end_turn"
    announced = wire.updates(root, "subagent_update")
    child = announced[0]["sessionId"]
    assert announced[0]["title"].startswith("oracle#") and announced[0]["capabilities"] == {"cancel": {}}
    where = str(await asyncio.to_thread(project.resolve))
    assert announced[0]["state"] == {"state": "running"} and announced[0]["cwd"] == where
    # idle, with the tokens it used
    assert announced[-1]["state"] == {"state": "idle", "stopReason": "end_turn",
                                      "usage": {"inputTokens": 400, "outputTokens": 20, "totalTokens": 420}}
    # what the session cost, its subagent's included (the parent's model at $3 / $15 per million tokens)
    child_cost = cost_usd(announced[0]["description"].split(" · ")[1], Usage(input_tokens=400, output_tokens=20))
    assert child_cost and wire.updates(root, "usage_update")[-1]["cost"]["amount"] == pytest.approx(
        (3000 * 3 + 15 * 15) / 1e6 + child_cost)
    first_about_child = wire.first_index(lambda m: m.get("method") == "session/update" and (
        m["params"]["sessionId"] == child or m["params"]["update"].get("sessionId") == child))
    assert wire.incoming[first_about_child]["params"]["update"]["sessionUpdate"] == "subagent_update"
    texts = "".join(u["content"]["text"] for u in wire.updates(child, "agent_message_chunk"))
    assert texts == "Child looked.\n\nCHILD-RESULT"  # the child's stream under its own id, its answer last
    assert "Child looked." not in "".join(u["content"]["text"] for u in wire.updates(root, "agent_message_chunk"))
    # its task, from its parent, as the first message of its session (before anything it said)
    [told] = wire.updates(child, "session_message")
    assert told["senderSessionId"] == root and told["recipientSessionId"] == child and told["messageId"]
    assert "TREE-CHILD look around" in told["content"][0]["text"]
    kinds = [u["sessionUpdate"] for u in wire.updates(child)]
    assert kinds.index("session_message") < kinds.index("agent_message_chunk")
    assert "session_message" not in [u["sessionUpdate"] for u in wire.updates(root)]
    assert client.text(root) == "Parent done."
    linked = [u for u in wire.updates(root, "tool_call_update") if {"type": "session", "sessionId": child}
              in u.get("content", [])]
    assert linked, "the spawning tool call links to the child's session"


async def test_a_client_that_did_not_opt_in_sees_no_subagent_messages(fake_env, project: Path) -> None:
    _tree_script(fake_env)
    client, wire = EditorClient(), Wire()
    async with spawn_agent_process(cast(Any, client), *ZYGOTE.argv("acp"), env=_env(), cwd=project,
                                   transport_kwargs={"stderr": subprocess.DEVNULL},
                                   observers=[wire.observe]) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        answer = await asyncio.wait_for(conn.prompt(session_id=session.session_id,
                                                    prompt=[text_block("TREE-PARENT ask it")]), WAIT)
        assert answer.stop_reason == "end_turn"
    assert {m["params"]["sessionId"] for m in wire.incoming if m.get("method") == "session/update"} == {
        session.session_id}
    assert not wire.updates(kind="subagent_update")
    assert not any(c.get("type") == "session" for u in wire.updates() for c in u.get("content") or []
                   if isinstance(c, dict))
    [spawn_done] = [u for u in client.of("tool_call_update", session.session_id) if u.status == "completed"]
    assert "CHILD-RESULT" in spawn_done.content[0].content.text  # the child, flattened into its tool call


async def test_a_childs_question_is_asked_on_its_session_and_a_child_is_cancelled_alone(fake_env,
                                                                                       project: Path) -> None:
    fake_env.script(
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "generic", "prompt": "KID-ASK run it",
                                                      "blocking": True})], when_contains="TREE-ASK"),
        Reply(tool_calls=[ToolCall("bash", {"command": "echo KID-RAN"})], when_contains="KID-ASK"),
        Reply(text="slow " * 400, chunk_size=20, chunk_delay=1.0, when_contains="KID-RAN"),
        Reply(text="Parent carries on.", when_contains="cancel"))
    client, wire = EditorClient("allow_once"), Wire()
    async with spawn_agent_process(cast(Any, client), *ZYGOTE.argv("acp"), env=_env(), cwd=project,
                                   transport_kwargs={"stderr": subprocess.DEVNULL},
                                   observers=[wire.observe]) as (conn, _process):
        await _opt_in(conn)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        root = session.session_id
        turn = asyncio.ensure_future(conn.prompt(session_id=root, prompt=[text_block("TREE-ASK go")]))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT
        while not (announced := wire.updates(root, "subagent_update")) or not wire.updates(
                announced[0]["sessionId"], "agent_message_chunk"):
            assert loop.time() < deadline and not turn.done(), wire.incoming[-3:]
            await asyncio.sleep(0.02)
        child = announced[0]["sessionId"]
        [asked] = client.asked
        assert asked.session_id == child  # the child's question, on the child's session
        states = [u["state"]["state"] for u in wire.updates(root, "subagent_update") if "state" in u]
        assert "requires_action" in states
        await conn.cancel(session_id=child)  # only the child
        answer = await asyncio.wait_for(turn, WAIT)
        assert answer.stop_reason == "end_turn" and client.text(root) == "Parent carries on."
    ended = wire.updates(root, "subagent_update")[-1]["state"]
    assert {k: v for k, v in ended.items() if k != "usage"} == {"state": "idle", "stopReason": "cancelled"}


async def test_mcp_servers_the_client_passes_reach_the_agent(fake_env, project: Path) -> None:
    fake_env.script(Reply.tool("mcp_load", server="clock"),
                    Reply(tool_calls=[ToolCall("mcp__clock__get_current_time", {"timezone": "UTC"})]),
                    Reply(text="It is now.", when_contains="timezone"))
    client = EditorClient("allow_once")
    clock = schema.McpServerStdio(name="clock", command=sys.executable,
                                  args=["-m", "mcp_server_time", "--local-timezone", "UTC"], env=[])
    bad = schema.HttpMcpServer(type="http", name="weird", url="file:///etc/passwd", headers=[])
    async with _agent(client, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(project), mcp_servers=[clock, bad])
        answer = await asyncio.wait_for(conn.prompt(session_id=session.session_id,
                                                    prompt=[text_block("ACP-MCP what time is it")]), WAIT)
        assert answer.stop_reason == "end_turn"
    first = fake_env.requests[0].body
    system = first["system"] if isinstance(first["system"], str) else " ".join(b["text"] for b in first["system"])
    assert "clock" in system and "weird" not in system
    [asked] = client.asked
    assert "mcp__clock__get_current_time" in asked.tool_call.title
    answered = [u for u in client.of("tool_call_update", session.session_id) if u.status == "completed"]
    assert any('"timezone": "UTC"' in u.content[0].content.text for u in answered)


async def test_a_mode_is_a_profile_of_the_conversation(fake_env, project: Path) -> None:
    agents = Path(os.environ["YEETUI_CONFIG_DIR"]) / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "terse.md").write_text("---\ndescription: Short answers\ncapabilities: [primary]\nexit_tools: []\n"
                                     "---\nYou are TERSE-PROFILE.\n")
    fake_env.script(Reply(text="ok.", when_contains="TERSE-PROFILE"))
    client = EditorClient()
    async with _agent(client, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        assert session.modes.current_mode_id == "generic"
        assert {"generic", "terse"} <= {m.id for m in session.modes.available_modes}
        assert "oracle" not in {m.id for m in session.modes.available_modes}  # not a conversation's profile
        await conn.set_session_mode(session_id=session.session_id, mode_id="terse")
        assert client.of("current_mode_update", session.session_id)[-1].current_mode_id == "terse"
        [*_, options] = client.of("config_option_update", session.session_id)  # the mode option follows the mode
        assert {o.id: o.current_value for o in options.config_options}["mode"] == "terse"
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("hi")]), WAIT)
        assert client.text(session.session_id) == "ok."
        with pytest.raises(RequestError) as refused:
            await conn.set_session_mode(session_id=session.session_id, mode_id="oracle")
        assert "oracle" in str(refused.value.data)
        with pytest.raises(RequestError) as refused:
            await conn.set_config_option(config_id="mode", session_id=session.session_id, value="oracle")
        assert "oracle" in str(refused.value.data)
        back = await conn.set_config_option(config_id="mode", session_id=session.session_id, value="generic")
        assert {o.id: o.current_value for o in back.config_options}["mode"] == "generic"
        assert client.of("current_mode_update", session.session_id)[-1].current_mode_id == "generic"
        await conn.set_config_option(config_id="mode", session_id=session.session_id, value="terse")
    # another process that resumes the conversation has it in that mode still
    fake_env.script(Reply(text="still terse.", when_contains="TERSE-PROFILE"))
    again = EditorClient()
    async with _agent(again, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        resumed = await conn.resume_session(cwd=str(project), session_id=session.session_id, mcp_servers=[])
        assert resumed.modes.current_mode_id == "terse"
        assert {o.id: o.current_value for o in resumed.config_options}["mode"] == "terse"
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("and now?")]), WAIT)
        assert again.text(session.session_id) == "still terse."


async def test_command_files_are_the_editors_commands_too(fake_env, project: Path) -> None:
    commands = project / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "explain.md").write_text("---\ndescription: Explain a thing\nargument-hint: <topic>\n---\n"
                                         "Explain $ARGUMENTS in CMD-FILE style.\n")
    fake_env.script(Reply(text="Recursion is recursion.", when_contains="Explain recursion in CMD-FILE style."))
    client = EditorClient()
    async with _agent(client, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=[text_block("/explain recursion")]),
                               WAIT)
        offered = {c.name: c for c in client.of("available_commands_update", session.session_id)[0].available_commands}
        assert offered["explain"].description == "Explain a thing"
        assert client.text(session.session_id) == "Recursion is recursion."


async def test_a_conversation_another_yeetui_is_running_is_followed_not_interrupted(fake_env, project: Path) -> None:
    """Loaded while a detached worker runs it: the editor sees what the worker stores as it is stored, and a
    prompt meanwhile is refused, saying where the conversation runs."""
    fake_env.script(Reply(text="slow " * 300, chunk_delay=0.03,
                          tool_calls=[ToolCall("complete", {"output": "followed"})], when_contains="FOLLOW-ME"))
    started = await asyncio.to_thread(run_yeetui, "agents", "start", "--json", "generic", "FOLLOW-ME work",
                                      cwd=project)
    assert started.returncode == 0, started.stderr
    session_id = json.loads(started.stdout)["session_id"]
    client = EditorClient()
    async with _agent(client, project) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT
        while True:  # the worker has written the task (its run is live) before the editor looks
            await conn.load_session(cwd=str(project), session_id=session_id, mcp_servers=[])
            if client.of("user_message_chunk", session_id):
                break
            assert loop.time() < deadline
            await asyncio.sleep(0.1)
        with pytest.raises(RequestError) as busy:
            await conn.prompt(session_id=session_id, prompt=[text_block("me too")])
        assert "running in another yeetui" in str(busy.value.data)
        while "slow slow" not in client.text(session_id):
            assert loop.time() < deadline, client.updates[-3:]
            await asyncio.sleep(0.1)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
async def test_a_pane_childs_question_is_asked_in_the_editor(fake_env, project: Path) -> None:
    """A subagent the turn started in a tmux pane has no dialog of its own: its question comes to the editor."""
    fake_env.script(
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "generic", "prompt": "PANE-KID run it",
                                                      "mode": "tmux", "blocking": True})], when_contains="PANE-ROOT"),
        Reply(tool_calls=[ToolCall("bash", {"command": "echo PANE-ACP-RAN"})], when_contains="PANE-KID"),
        Reply(tool_calls=[ToolCall("complete", {"output": "kid done"})], when_contains="PANE-ACP-RAN"),
        Reply(text="Root done.", when_contains="kid done"))
    client = EditorClient("allow_once")
    try:
        async with _agent(client, project) as (conn, _process):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            answer = await asyncio.wait_for(conn.prompt(session_id=session.session_id,
                                                        prompt=[text_block("PANE-ROOT delegate")]), WAIT * 2)
            assert answer.stop_reason == "end_turn" and client.text(session.session_id) == "Root done."
        [asked] = client.asked
        assert "echo PANE-ACP-RAN" in asked.tool_call.title and asked.session_id == session.session_id
    finally:
        await TmuxServer(server_name(paths.data_dir())).kill_server()
