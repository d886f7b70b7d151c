"""The use cases behind `yeetui mcp serve`'s tools, without the protocol: no call blocks past its cap, and
what is wrong is said."""

from __future__ import annotations

import time

import pytest

from yeetui.application import mcp_serve
from yeetui.application.mcp_serve import AgentService
from yeetui.application.surface import Surface
from yeetui.errors import YeetuiError
from yeetui.runtime import Runtime


async def test_wait_never_blocks_past_its_cap(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_serve, "MAX_WAIT", 0.3)
    run = await runtime.detached.create(profile_name="oracle", prompt="look", approve=False)  # queued, never run
    service = AgentService(Surface(runtime))
    began = time.monotonic()
    waited = await service.wait(run.id, timeout_s=1_000)
    assert time.monotonic() - began < 5
    assert waited == {"run_id": run.id, "status": "queued", "done": False, "output": "", "error": None}
    assert (await service.result(run.id))["done"] is False


async def test_bad_requests_are_refused_with_the_reason(runtime: Runtime) -> None:
    service = AgentService(Surface(runtime))
    with pytest.raises(YeetuiError, match="needs a prompt"):
        await service.spawn("oracle", "   ")
    with pytest.raises(YeetuiError, match="wizard"):
        await service.spawn("wizard", "x")
    assert {p["name"] for p in service.list_profiles()} >= {"oracle", "reviewer", "builder"}
