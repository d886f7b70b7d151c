"""A provider's quota or billing refusal (not a rate limit): the run ends `quota_exhausted` in the provider's
words, without retries, and runs queued for that provider wait instead of starting into the same refusal."""

from __future__ import annotations

import asyncio

import pytest

from tests.fakellm import Fault, Reply, ToolCall
from yeetui.events import RunStatus, RunStatusChanged
from yeetui.providers.base import is_quota_error
from yeetui.runtime import Runtime
from yeetui.subagents.spawner import SpawnRequest

CREDIT = ("Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or "
          "purchase credits.")


@pytest.mark.parametrize("status, kind, detail, quota", [
    (400, "invalid_request_error", CREDIT, True),
    (429, "insufficient_quota", "You exceeded your current quota, please check your plan and billing details.", True),
    (402, "error", "Payment Required", True),
    (None, "billing_error", "billing", True),
    (429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", False),
    (529, "overloaded_error", "Overloaded", False),
])
def test_what_counts_as_a_quota_refusal(status: int | None, kind: str, detail: str, quota: bool) -> None:
    assert is_quota_error(status, kind, detail) is quota


async def test_a_quota_refusal_ends_the_run_and_holds_its_provider(runtime: Runtime, scripted) -> None:
    scripted.script(Reply(fault=Fault.http(400, message=CREDIT)),
                    Reply(tool_calls=[ToolCall("complete", {"output": "ORACLE-DONE"})], when_contains="HELD-TASK"))
    result = await runtime.launcher.run_prompt("hello")
    assert result.status == RunStatus.QUOTA_EXHAUSTED and "credit balance is too low" in result.error
    assert len(scripted.requests) == 1  # no retry: another attempt gets the same answer
    hold = await runtime.store.provider_holds.active("anthropic")
    assert hold is not None and "credit balance is too low" in hold.reason
    # a subagent for the same provider waits, queued and saying why, while the hold lasts
    held = asyncio.Event()
    runtime.bus.add_listener(lambda e: held.set() if isinstance(e, RunStatusChanged)
                             and e.status == RunStatus.QUEUED and e.reason.startswith("held: anthropic") else None)
    handle = await runtime.spawner.spawn(SpawnRequest(profile="oracle", prompt="HELD-TASK look",
                                                      requested_by="user"))
    await asyncio.wait_for(held.wait(), 30)
    assert len(scripted.requests) == 1 and (await runtime.store.get_run(handle.run_id)).status == RunStatus.QUEUED
    # the user tops up (here: another process's request succeeded and lifted the hold): it goes on
    assert await runtime.store.provider_holds.release("anthropic")
    ended = await asyncio.wait_for(runtime.spawner.wait(handle.run_id), 30)
    assert ended.status == RunStatus.COMPLETED and ended.output == "ORACLE-DONE"


async def test_a_hold_ends_by_itself_and_a_success_lifts_it(runtime: Runtime, scripted) -> None:
    await runtime.store.provider_holds.hold("anthropic", "spent", minutes=-1)  # already over
    assert await runtime.store.provider_holds.active("anthropic") is None
    await runtime.store.provider_holds.hold("anthropic", "spent", minutes=30)
    scripted.script(Reply(text="fine again"))
    result = await runtime.launcher.run_prompt("hello", interactive=True)  # the user's own turn is not held
    assert result.status in (RunStatus.COMPLETED, RunStatus.WAITING_USER)
    assert await runtime.store.provider_holds.active("anthropic") is None
