"""SessionDesk: which session a front end opens at start, a new conversation, compacting one, and the tree of
sessions with their labels and statuses (on a real store through a Runtime)."""

from __future__ import annotations

import pytest

from tests.fakellm import Reply
from yeetui.application.sessions import SessionDesk, SessionToOpen, SessionTreeNode
from yeetui.events import RunStatus
from yeetui.messages import Message, Usage
from yeetui.runtime import Runtime
from yeetui.subagents.ledger import LedgerRow


async def test_a_new_session_of_the_primary_profile_opens_when_nothing_is_asked(runtime: Runtime) -> None:
    desk = SessionDesk(runtime)
    opened = await desk.to_open(model="fake/other")
    session = await desk.get(opened.session_id)
    assert opened.note is None
    assert session is not None and session.profile == runtime.settings.primary_profile
    assert session.origin == "primary" and session.model == "fake/other"


async def test_resume_opens_the_session_named_by_an_id_prefix(runtime: Runtime) -> None:
    desk = SessionDesk(runtime)
    first = await desk.new()
    await desk.new()
    assert await desk.to_open(resume=first.id[:10]) == SessionToOpen(first.id)


async def test_continue_prefers_the_apps_latest_conversation_over_a_later_run(runtime: Runtime) -> None:
    desk = SessionDesk(runtime)
    conversation = await desk.new()
    later = await runtime.store.create_session(profile="generic", origin="run", cwd=runtime.project_dir)
    for session in (conversation, later):  # (one left empty is skipped: test_continue.py)
        await runtime.store.append_message(session.id, Message.user("hello"))
    latest = await desk.latest()
    assert latest is not None and latest.id == later.id
    assert await desk.to_open(continue_latest=True) == SessionToOpen(conversation.id)


async def test_continue_without_a_conversation_reopens_the_latest_run_and_says_so(runtime: Runtime) -> None:
    desk = SessionDesk(runtime)
    run_session = await runtime.store.create_session(profile="generic", title="nightly check", origin="run",
                                                     cwd=runtime.project_dir)
    await runtime.store.append_message(run_session.id, Message.user("check"))
    opened = await desk.to_open(continue_latest=True)
    assert opened.session_id == run_session.id
    assert opened.note is not None and "a run run: nightly check" in opened.note


async def test_continue_goes_on_with_this_projects_conversation_never_another_projects(runtime: Runtime,
                                                                                       tmp_path) -> None:
    """As Claude Code's `--continue`: the latest conversation in this directory, though another project's on the
    same data dir was active later (it would carry on in this project's files)."""
    desk = SessionDesk(runtime)
    here = await desk.new()
    elsewhere = await runtime.store.create_session(profile="generic", origin="primary", cwd=tmp_path / "other")
    for session in (here, elsewhere):
        await runtime.store.append_message(session.id, Message.user("hello"))
    assert await desk.to_open(continue_latest=True) == SessionToOpen(here.id)
    latest = await desk.latest()
    assert latest is not None and latest.id == here.id


async def test_continue_with_no_session_at_all_starts_one(runtime: Runtime) -> None:
    opened = await SessionDesk(runtime).to_open(continue_latest=True)
    assert opened.note is None and (await runtime.store.get_session(opened.session_id)) is not None


async def test_compact_returns_the_summary_that_replaces_the_earlier_turns(runtime: Runtime, scripted) -> None:
    scripted.script(Reply(text="first answer", when_contains="EARLY-QUESTION"))
    first = await runtime.launcher.run_prompt("EARLY-QUESTION", interactive=True)
    scripted.script(Reply(text="THE-SUMMARY", when_contains="compacting a coding-agent conversation"))
    assert "THE-SUMMARY" in await SessionDesk(runtime).compact(first.session_id)


async def test_tree_lists_each_top_session_then_those_below_it(runtime: Runtime) -> None:
    store = runtime.store
    desk = SessionDesk(runtime)
    primary = await desk.new()
    child = await store.create_session(profile="oracle", title="look it up", parent_id=primary.id)
    run = await store.create_run(session_id=child.id, profile="oracle", model=None, prompt="look",
                                 label="oracle#1", status=RunStatus.COMPLETED)
    waiting = await store.create_run(session_id=primary.id, profile="generic", model=None, prompt="hi",
                                     status=RunStatus.WAITING_USER)
    await store.inbox.add(session_id=child.id, kind="completion", title="oracle#1 done", run_id=run.id)
    detached = await store.create_session(profile="builder", title="build it", origin="detached")
    tree = await desk.tree()
    assert [n.id for n in tree] == [detached.id, primary.id, child.id]
    assert tree[0] == SessionTreeNode(id=detached.id, parent_id=None, label="detached builder", profile="builder",
                                      title="build it", status="new", unread=0, depth=0)
    assert (tree[1].label, tree[1].status) == ("primary", "answered")  # waiting for the user: it has answered
    assert waiting.status == RunStatus.WAITING_USER
    assert (tree[2].label, tree[2].status, tree[2].unread, tree[2].depth) == ("oracle#1", "completed", 1, 1)


async def test_a_live_ledger_row_names_its_session_in_the_tree(runtime: Runtime) -> None:
    desk = SessionDesk(runtime)
    primary = await desk.new()
    pair = await runtime.store.create_session(profile="pair", parent_id=primary.id)
    row = LedgerRow(run_id="watcher", session_id=pair.id, parent_session_id=primary.id, label="pair#1",
                    profile="pair", model="fake", status="watching", registered=0.0)
    tree = await desk.tree([row])
    assert (tree[-1].label, tree[-1].status) == ("pair#1", "watching")


async def test_each_session_in_the_tree_shows_what_it_and_the_sessions_below_it_spent(runtime: Runtime) -> None:
    store = runtime.store
    desk = SessionDesk(runtime)
    primary = await desk.new()
    oracle = await store.create_session(profile="oracle", parent_id=primary.id)
    builder = await store.create_session(profile="builder", parent_id=primary.id)
    helper = await store.create_session(profile="oracle", parent_id=builder.id)
    spent = [(primary.id, 1000, 0.01), (primary.id, 500, 0.005), (oracle.id, 200, 0.002),
             (builder.id, 3000, 0.03), (helper.id, 40, None)]  # the helper's model has no price
    for session_id, tokens, cost in spent:
        run = await store.create_run(session_id=session_id, profile="x", model=None, prompt="p")
        await store.update_run(run.id, usage=Usage(input_tokens=tokens), cost=cost)
    quiet = await store.create_session(profile="oracle", parent_id=primary.id)  # ran nothing yet
    tree = {node.id: node for node in await desk.tree()}
    assert (tree[oracle.id].tokens, tree[oracle.id].cost) == (200, 0.002)
    assert (tree[helper.id].tokens, tree[helper.id].cost) == (40, None)
    assert (tree[builder.id].tokens, tree[builder.id].cost) == (3040, None)  # unknown below: unknown in total
    assert (tree[quiet.id].tokens, tree[quiet.id].cost) == (0, 0.0)
    assert tree[primary.id].tokens == 1000 + 500 + 200 + 3000 + 40 and tree[primary.id].cost is None
    await store.update_run((await store.list_runs(session_id=helper.id))[0].id, cost=0.0004)
    tree = {node.id: node for node in await desk.tree()}
    assert tree[primary.id].cost == pytest.approx(0.01 + 0.005 + 0.002 + 0.03 + 0.0004)
