"""Class 9: `context: session_id:<prefix>` — as a model passes it to `spawn_subagent` — reaches only sessions of
the caller's own conversation tree. Another project's session, and another conversation of the same project,
are not pulled into the child's prompt, and the refusal names no other session's id (not even a prefix, which
would let a model walk the store one character at a time)."""

from __future__ import annotations

from pathlib import Path

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import result_text, tool_results
from yeetui.runtime import Runtime

THEIRS = "PROJECT-B-TRANSCRIPT-41d7"
OTHER_CONVERSATION = "OTHER-CONVERSATION-9ae2"
MINE = "OWN-CONVERSATION-c03b"


async def _session_of(runtime: Runtime, scripted, prompt: str) -> str:
    scripted.script(Reply(tool_calls=[ToolCall("complete", {"output": "noted"})], when_contains=prompt))
    result = await runtime.launcher.run_prompt(prompt)
    assert result.status.value == "completed", result.error
    return result.session_id


async def test_session_context_stays_in_the_caller_s_conversation(runtime: Runtime, scripted, tmp_path: Path) -> None:
    other_project = tmp_path / "project-b"
    other_project.mkdir()
    theirs_rt = await Runtime.open(cwd=other_project, provider_factory=scripted.provider_factory)
    try:
        theirs = await _session_of(theirs_rt, scripted, f"remember {THEIRS}")
    finally:
        await theirs_rt.close()
    for _ in range(17):  # 17+ sessions of project B: some first hex digit is shared by two (pigeonhole), so a
        # one-character probe is ambiguous among strangers, the case where an error listed the candidates
        await runtime.store.create_session(profile="generic", title="b", cwd=other_project)
    other = await _session_of(runtime, scripted, f"remember {OTHER_CONVERSATION}")
    mine = await _session_of(runtime, scripted, f"remember {MINE}")

    def spawn(ref: str) -> ToolCall:
        return ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "CHILD-TASK: summarise it",
                                           "context": f"session_id:{ref}"})

    probes = [theirs[:8], theirs, other[:8], other, *"0123456789abcdef"]
    scripted.script(
        Reply(tool_calls=[ToolCall("complete", {"output": "done"})], when_contains="Cannot resolve session_context"),
        Reply(tool_calls=[spawn(mine[:8]), *(spawn(ref) for ref in probes)], when_contains="SPAWN-NOW"),
        Reply(tool_calls=[ToolCall("complete", {"output": "child done"})], when_contains="CHILD-TASK", repeat=True))
    result = await runtime.launcher.run_prompt("SPAWN-NOW", session_id=mine)
    assert result.status.value == "completed", result.error

    def first_message(request) -> str:
        content = request.body["messages"][0]["content"]
        return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)

    children = [r for r in scripted.requests if "CHILD-TASK" in first_message(r)]
    assert children and MINE in children[0].text  # its own conversation is pulled in, as asked
    for child in children:  # a one-character probe may name a session of this conversation: that is allowed
        assert THEIRS not in child.text and OTHER_CONVERSATION not in child.text
    (parent_after,) = [r for r in scripted.requests if "Cannot resolve session_context" in r.text]
    results = tool_results(parent_after.body)[-(1 + len(probes)):]  # this turn's

    assert not results[0].get("is_error"), result_text(results[0])
    tree = set(await runtime.store.session_tree_ids(mine))
    strangers = [s.id for s in await runtime.store.list_sessions(parent_id=..., limit=100_000) if s.id not in tree]
    assert theirs in strangers and other in strangers
    for ref, block in zip(probes, results[1:], strict=True):
        said = result_text(block)
        if len(ref) == 1 and not block.get("is_error"):
            continue  # it named a session of this conversation (checked above: no stranger's text)
        assert block.get("is_error") is True and "Cannot resolve session_context" in said, said
        for stranger in strangers:
            assert stranger[:6] not in said.replace(f"session_id:{ref}", "").replace(repr(ref), ""), \
                f"the refusal names another session: {said}"
