"""Permission questions as a front end answers them: a tool call under an `ask` rule, of a run in this process
or of a pane child whose worker asks through this one (both arrive as `PermissionRequested` on the bus)."""

from __future__ import annotations

from yeetui.events import PermissionAnswer, PermissionRequested

__all__ = ["USER_ANSWERS", "answer_permission"]

USER_ANSWERS: dict[str, PermissionAnswer] = {"allow_once": "allow_once", "allow_always": "allow_always",
                                             "deny": "deny"}
"""What the user can answer; `unattended` is for nobody-was-there, never a user's word."""


def answer_permission(request: PermissionRequested, answer: str | None) -> bool:
    """Give the user's answer to the asking run; no answer (the dialog dismissed) or an unknown one denies.
    False when the question was answered already (elsewhere, or the run stopped waiting)."""
    if request.reply.done():
        return False
    request.reply.set_result(USER_ANSWERS.get(answer or "", "deny"))
    return True
