"""A subagent's card in the conversation says yeetui's notes to the user (issue 47, item 6): the parent model's
hints — `send_message to oracle#1`, "Merge it into the user's branch only when the user says so" — were shown
as they are written for the model."""

from __future__ import annotations

from yeetui.events import RunStatus
from yeetui.subagents.inbox import announcement_text, follow_up_note, worktree_note
from yeetui.tui.widgets.render_text import yeetui_notes

WORKTREE = {"id": "0123456789abcdef", "branch": "yeetui/build/add-mul", "path": "/data/worktrees/add-mul",
            "commits": 2}


def test_the_cards_notes_are_for_the_user() -> None:
    text = "\n".join([announcement_text("builder#1", RunStatus.COMPLETED, "Added mul().", None),
                      worktree_note("builder#1", WORKTREE), follow_up_note("builder#1")])
    notes = yeetui_notes(text)
    assert notes == [
        "builder#1 left 2 commit(s) on branch yeetui/build/add-mul (worktree 01234567, /data/worktrees/add-mul); "
        "your checkout is untouched: /merge builder#1 (alt+m) takes it, /discard builder#1 throws it away.",
        "builder#1 keeps its context: /send builder#1 … asks it more."]
    assert not any("send_message" in note or "the user says so" in note for note in notes)


def test_a_worktree_with_nothing_committed_is_said_as_it_is() -> None:
    text = "\n".join([announcement_text("builder#2", RunStatus.COMPLETED, "Nothing to do.", None),
                      worktree_note("builder#2", {**WORKTREE, "commits": 0})])
    assert yeetui_notes(text) == ["builder#2 worked in worktree 01234567 (branch yeetui/build/add-mul) and "
                                  "committed nothing. Remove it: /discard builder#2"]
