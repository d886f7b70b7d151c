"""Token usage is stored with every provider response (a crash loses none), a resumed run adds to what its
earlier attempts used, and a run's usage rolls up over its subagents; timeouts read as people write them."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.fakellm import Reply, ToolCall
from yeetui.application.agents import run_json
from yeetui.events import RunStatus, TextDelta
from yeetui.messages import Usage
from yeetui.providers.base import UsageChunk
from yeetui.providers.litellm import ChunkAccumulator
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runtime import Runtime
from yeetui.store.records import RunRecord
from yeetui.subagents.spawner import SpawnRequest
from yeetui.text import seconds_text


def _complete(output: str) -> ToolCall:
    return ToolCall("complete", {"output": output})


async def test_usage_is_stored_after_each_response_not_only_at_the_end(runtime: Runtime, scripted,
                                                                        tmp_path: Path) -> None:
    answer_permissions_headless(runtime.bus, approve=True)
    flag = runtime.project_dir / "go-on"  # where the sandboxed command sees it
    scripted.script(
        Reply(tool_calls=[ToolCall("bash", {"command": f"until [ -e {flag} ]; do sleep 0.02; done"})],
              usage={"input_tokens": 700, "output_tokens": 30}, when_contains="USAGE-TASK"),
        Reply(tool_calls=[_complete("done")], usage={"input_tokens": 800, "output_tokens": 5}),
    )
    task = asyncio.create_task(runtime.launcher.run_prompt("USAGE-TASK"))
    await scripted.until_requests(1, finished=True)

    async def stored_usage() -> int:
        (run,) = await runtime.store.list_runs()
        return run.usage.input_tokens + run.usage.output_tokens

    for _ in range(1000):  # the first response's whole usage is written before its tool call runs (its
        if await stored_usage() == 730:  # prompt's tokens may be stored first, as they stream)
            break
        await asyncio.sleep(0.01)
    assert await stored_usage() == 730
    assert not task.done()
    flag.touch()
    result = await task
    assert result.status == RunStatus.COMPLETED
    assert await stored_usage() == 730 + 805


async def test_a_resumed_run_adds_to_its_earlier_usage(runtime: Runtime, scripted) -> None:
    scripted.script(  # one answer, then a provider error ends the first attempt; the resume completes
        Reply(text="thinking it over", usage={"input_tokens": 100, "output_tokens": 10}, when_contains="FIRST-TRY"),
        Reply.error(400),
        Reply(tool_calls=[_complete("answer")], usage={"input_tokens": 200, "output_tokens": 20}),
    )
    parent = await runtime.launcher.new_session(runtime.profiles.get("generic"))
    handle = await runtime.spawner.spawn(SpawnRequest("oracle", "FIRST-TRY: why?", parent_session_id=parent.id,
                                                      requested_by="user", blocking=True))
    first = await runtime.store.get_run(handle.run_id)
    assert first.status == RunStatus.FAILED
    assert (first.usage.input_tokens, first.usage.output_tokens) == (100, 10)
    await runtime.spawner.start_existing(handle.run_id, blocking=True, resume=True)
    again = await runtime.store.get_run(handle.run_id)
    assert again.status == RunStatus.COMPLETED
    assert (again.usage.input_tokens, again.usage.output_tokens) == (300, 30)


async def test_usage_rolls_up_over_the_subagents(runtime: Runtime, scripted) -> None:
    scripted.script(
        Reply(tool_calls=[_complete("both answered")], when_contains="[Subagent: oracle#",
              usage={"input_tokens": 50, "output_tokens": 5}),
        Reply(tool_calls=[ToolCall("spawn_subagent", {"profile": "oracle", "prompt": f"ROLLUP-{q}"}) for q in "AB"],
              when_contains="ROLLUP-PARENT", usage={"input_tokens": 40, "output_tokens": 4}),
        *[Reply(tool_calls=[_complete(q)], when_contains=f"ROLLUP-{q}",
                usage={"input_tokens": 300, "output_tokens": 30}) for q in "AB"],
    )
    result = await runtime.launcher.run_prompt("ROLLUP-PARENT")
    assert result.status == RunStatus.COMPLETED, result.error
    primary = await runtime.store.get_run(result.run_id)
    data = await run_json(runtime.store, primary)
    tree = data["tree"]["usage"]
    assert (tree["input_tokens"], tree["output_tokens"]) == (40 + 50 + 600, 4 + 5 + 60)
    assert (primary.usage.input_tokens, primary.usage.output_tokens) == (90, 9)


def test_durations_read_as_people_write_them() -> None:
    assert seconds_text(2.99919) == "3 s"
    assert seconds_text(0.5) == "0.5 s"
    assert seconds_text(300) == "300 s"
    assert seconds_text(12.4) == "12 s"


async def test_a_request_cancelled_mid_stream_still_counts_its_tokens(runtime: Runtime, scripted) -> None:
    """Anthropic reports the input tokens when the answer starts (message_start): a run cancelled while the
    answer streams has spent them, and its record and cost say so."""
    scripted.script(Reply(text="a long answer " * 200, chunk_size=4, chunk_delay=0.02, when_contains="CUT-OFF",
                          usage={"input_tokens": 900, "output_tokens": 400}))
    streaming = asyncio.Event()
    runtime.bus.add_listener(lambda e: streaming.set() if isinstance(e, TextDelta) else None)
    task = asyncio.create_task(runtime.launcher.run_prompt("CUT-OFF: explain"))
    await asyncio.wait_for(streaming.wait(), 20)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    (run,) = await runtime.store.list_runs()
    assert run.status == RunStatus.CANCELLED
    assert run.usage.input_tokens == 900
    assert run.cost is not None and run.cost > 0


def test_litellm_reports_usage_as_soon_as_a_chunk_carries_it() -> None:
    """Some providers behind litellm (Anthropic's among them) send the prompt's usage on an early chunk: it is
    passed on at once, and the final usage counts nothing twice."""
    acc = ChunkAccumulator()
    early = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=500, completion_tokens=1), choices=[
        SimpleNamespace(delta=SimpleNamespace(content="Hi", reasoning_content=None, tool_calls=None),
                        finish_reason=None)])
    items = acc.feed(early)
    assert UsageChunk(Usage(input_tokens=500, output_tokens=1)) in items
    assert acc.done().usage.beyond(Usage(input_tokens=500, output_tokens=1)) == Usage()


async def test_usage_sent_with_every_chunk_is_stored_a_few_times_not_per_chunk(runtime: Runtime, scripted) -> None:
    """Gemini's API (through litellm) sends the usage so far with every chunk: it counts as it comes, but the
    store is written at once and then at most once per checkpoint interval, not once per streamed chunk."""
    scripted.script(Reply(text="x" * 300, chunk_size=1, usage_every_chunk=True, tool_calls=[_complete("ok")],
                          usage={"input_tokens": 900, "output_tokens": 320}))
    writes: list[Usage | None] = []
    update_run = runtime.store.update_run

    async def counted(run_id: str, **changes: Any) -> RunRecord:
        writes.append(changes.get("usage"))  # what the runner stored, when it did
        return await update_run(run_id, **changes)

    runtime.store.update_run = counted  # type: ignore[method-assign]  # the real store, its writes counted
    result = await runtime.launcher.run_prompt("go", model="gemini/gemini-2.5-flash")
    assert result.usage.input_tokens == 900 and result.usage.output_tokens == 320
    usage_writes = [u for u in writes if u is not None]
    assert usage_writes, "the usage was never stored"
    assert len(usage_writes) < 40, f"{len(usage_writes)} store writes for {300} streamed chunks"
    (run,) = await runtime.store.list_runs()
    assert run.usage.output_tokens == 320
