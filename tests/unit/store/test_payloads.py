"""An inbox item's data read as the typed payload of its kind, written back unchanged, and read defensively."""

from __future__ import annotations

from typing import Any

import pytest

from yeetui.store.payloads import (
    BudgetAlert,
    Completion,
    Interjection,
    OrchestratorStep,
    OtherPayload,
    payload_of,
)

STORED: list[tuple[str, dict[str, Any]]] = [
    # as Delivery.completion writes a builder's ending (its worktree beside the result)
    ("completion", {"status": "completed", "label": "builder#1", "child_session_id": "c1", "announce": True,
                    "announcement": "builder#1 completed", "result": {"output": "done"},
                    "worktree": {"id": "wt1", "branch": "yeetui/add"}}),
    # as an external agent's subagent ending is kept (never announced, no announcement)
    ("completion", {"status": "failed", "label": "task#2", "child_session_id": "c2", "announce": False,
                    "result": {"output": "broke"}}),
    ("review", {"status": "completed", "label": "reviewer#1", "child_session_id": "c3", "announce": True,
                "announcement": "…", "result": {"artifacts": {"verdict": "approve", "findings": []}}}),
    ("interjection", {"severity": "concern", "watcher_session_id": "w", "run_id": "r", "label": "pair",
                      "child_session_id": "w"}),
    ("interjection", {"severity": "blocker", "watcher_session_id": "w", "run_id": "r", "label": "pair",
                      "child_session_id": "w", "announce": True, "announcement": "pair: stop"}),
    ("orchestrator", {"progress": "2/4", "step": "s2", "event": "blocked", "status": "blocked",
                      "child_run_id": None}),
    ("orchestrator", {"progress": "4/4", "step": None, "event": "end", "status": "completed",
                      "child_run_id": None, "worktrees": [{"id": "a"}, {"id": "b"}]}),
    ("budget", {"run_id": "r", "label": "oracle#1", "session_id": "s"}),
    ("note", {"anything": [1, 2], "label": "x"}),
]


@pytest.mark.parametrize(("kind", "data"), STORED)
def test_what_yeetui_writes_reads_back_and_writes_the_same(kind: str, data: dict[str, Any]) -> None:
    assert payload_of(kind, data).to_data() == data


def test_each_kind_reads_as_its_type_with_what_the_front_ends_show() -> None:
    builder = payload_of(*STORED[0])
    assert isinstance(builder, Completion) and builder.worktree_ids == ["wt1"] and builder.status == "completed"
    review = payload_of(*STORED[2])
    assert isinstance(review, Completion) and review.verdict == "approve"
    blocker = payload_of(*STORED[4])
    assert isinstance(blocker, Interjection) and blocker.severity == "blocker" and blocker.announce
    end = payload_of(*STORED[6])
    assert isinstance(end, OrchestratorStep) and end.worktree_ids == ["a", "b"]
    assert isinstance(payload_of(*STORED[7]), BudgetAlert)
    other = payload_of(*STORED[8])
    assert isinstance(other, OtherPayload) and other.label == "x" and other.worktree_ids == []


@pytest.mark.parametrize("data", [None, [], "text", {"status": 7, "label": ["x"], "result": "nope",
                                                      "worktree": "wt", "announce": "yes"}])
def test_damaged_data_reads_as_defaults_never_an_error(data: Any) -> None:
    found = payload_of("completion", data)
    assert isinstance(found, Completion)
    assert (found.run_status, found.label, found.result, found.worktree, found.announce) == (
        "completed", None, {}, None, False)
    assert found.worktree_ids == [] and found.verdict is None
    interjection = payload_of("interjection", {"severity": None, "accepted": "true"})
    assert isinstance(interjection, Interjection) and interjection.severity == "aside" and not interjection.accepted
    ending = payload_of("orchestrator", {"worktrees": ["a", {"id": 3}, {"no": "id"}]})
    assert isinstance(ending, OrchestratorStep) and ending.worktree_ids == ["3"]
