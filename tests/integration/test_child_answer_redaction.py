"""A child's answer reaches its parent as the child wrote it, credentials aside: the real binary, the fake LLM
server, the real store. The store redacts each message serialised as JSON, where the line break after a short
word reads `secret=KIWI\\n…`; that escape once made the word look long enough to be a credential."""

from __future__ import annotations

from pathlib import Path

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import result_text, run_yeetui, tool_results

KEY = "Zq7rT2mXw9LpV4kN8sJc"
"""A random 20-character token: a credential wherever it appears after `secret=`."""


def test_a_childs_short_plain_answer_reaches_the_parent_unredacted_and_a_real_token_does_not(
        fake_env, project: Path) -> None:
    answer = f"The password is secret=KIWI\nand the token is secret={KEY}\n**secret=PEAR**."
    fake_env.script(
        Reply(tool_calls=[ToolCall("complete", {"output": answer})], when_contains="ORACLE-TASK"),
        Reply(tool_calls=[ToolCall("complete", {"output": "parent done"})], when_contains="and the token is"),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": "ORACLE-TASK what is it?",
                                                      "blocking": True})]))
    done = run_yeetui("run", "--json", "PARENT ask the oracle", cwd=project, timeout=120)
    assert done.result["status"] == "completed", done.stderr
    told = next(r for r in fake_env.requests if "and the token is" in r.text)
    delivered = "".join(result_text(block) for block in tool_results(told.body))
    assert "secret=KIWI\n" in delivered and "**secret=PEAR**." in delivered
    assert KEY not in delivered and "secret=[REDACTED]" in delivered
    shown = run_yeetui("sessions", "show", "--json", done.result["session_id"], cwd=project).stdout
    assert "secret=KIWI" in shown and KEY not in shown
