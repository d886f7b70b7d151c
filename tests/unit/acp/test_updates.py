"""yeetui's events as ACP updates: edits as diffs, outputs capped and terminal-safe, an orchestrator's steps as
the plan, an editor's prompt blocks as prompt text."""

from __future__ import annotations

from acp import schema

from yeetui.acp import updates
from yeetui.events import ToolCallFinished, ToolCallStarted


def test_an_edit_is_a_diff_and_a_write_a_new_file() -> None:
    edit = updates.tool_started(ToolCallStarted("r", "s", "c1", "edit_file", {"path": "a.py", "old": "x", "new": "y"}))
    assert edit.kind == "edit" and edit.content[0].type == "diff"
    assert (edit.content[0].path, edit.content[0].old_text, edit.content[0].new_text) == ("a.py", "x", "y")
    assert edit.locations[0].path == "a.py" and edit.status == "in_progress"
    write = updates.tool_started(ToolCallStarted("r", "s", "c2", "write_file", {"path": "b.py", "content": "z"}))
    assert write.content[0].old_text is None and write.content[0].new_text == "z"
    bash = updates.tool_started(ToolCallStarted("r", "s", "c3", "bash", {"command": "make"}, activity="running make"))
    assert bash.kind == "execute" and bash.title == "running make" and bash.content is None


def test_a_tool_output_is_capped_and_made_terminal_safe() -> None:
    hostile = "\x1b]52;c;ZXZpbA==\x07ok " + "x" * 50_000
    done = updates.tool_finished(ToolCallFinished("r", "s", "c1", "bash", hostile, is_error=True))
    text = done.content[0].content.text
    assert done.status == "failed" and "\x1b" not in text and len(text) < 21_000 and text.startswith("ok ")


def test_an_orchestrators_steps_are_the_plan() -> None:
    shown = updates.plan((("plan (planner#1): split it", "done"), ("build (builder#1): do it", "running"),
                          ("review (reviewer#1): check it", "pending"), ("docs (builder#2): write", "blocked")))
    assert [e.status for e in shown.entries] == ["completed", "in_progress", "pending", "pending"]
    assert shown.entries[3].priority == "high" and shown.entries[3].content.endswith("[blocked]")


def test_prompt_blocks_become_the_prompt_text() -> None:
    blocks = [schema.TextContentBlock(type="text", text="Fix this:"),
              schema.EmbeddedResourceContentBlock(type="resource", resource=schema.TextResourceContents(
                  uri="file:///p/a.py", text="print(1)")),
              schema.ResourceContentBlock(type="resource_link", uri="file:///p/b.py", name="b.py")]
    text = updates.prompt_text(blocks)
    assert text.startswith("Fix this:") and "Contents of file:///p/a.py:\n```\nprint(1)\n```" in text
    assert "[b.py](file:///p/b.py)" in text


def test_the_call_a_turn_ends_with_carries_its_answer() -> None:
    assert updates.answer("complete", {"output": "It is 42."}) == "It is 42."
    assert updates.answer("ask_user", {"question": "Which one?"}) == "Which one?"
    assert updates.answer("complete", {"output": "  "}) is None and updates.answer("bash", {"output": "x"}) is None
    assert updates.answer("complete", {}) is None  # arguments that did not parse: shown as the call it is
    # a paragraph of its own after what the agent said in the turn
    assert [updates.after(said, "A.") for said in ("", "Hm.", "Hm.\n", "Hm.\n\n")] == [
        "A.", "\n\nA.", "\nA.", "A."]
