"""`SpecBuilder.build` (the launcher's `specs`) makes a run's spec whole at once; nothing changes a spec afterwards."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from yeetui.events import Notice
from yeetui.runtime import Runtime


@pytest.fixture
def project_dir(project_dir: Path) -> Path:
    (project_dir / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return project_dir


async def _spec_for(runtime: Runtime, prompt: str, **kw):
    launcher = runtime.launcher
    profile = runtime.profiles.get(runtime.settings.primary_profile)
    model = launcher.models.resolve(profile)
    session = await launcher.new_session(profile, title="spec", model=model)
    return await launcher.specs.build(session=session, profile=profile, prompt=prompt, model=model, **kw)


async def test_a_spec_cannot_be_changed_once_built(runtime: Runtime) -> None:
    spec = await _spec_for(runtime, "hello")
    for name in ("timeout", "thinking", "attachments"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(spec, name, None)


async def test_thinking_and_deadline_are_given_to_the_builder(runtime: Runtime) -> None:
    plain = await _spec_for(runtime, "hello")
    deadline = asyncio.get_running_loop().time() + 12.0
    chosen = await _spec_for(runtime, "hello", thinking="high", deadline=deadline)
    assert chosen.thinking == "high" and plain.thinking != "high"
    assert 0 < chosen.timeout <= 12.0
    assert plain.timeout != chosen.timeout
    passed = await _spec_for(runtime, "hello", deadline=asyncio.get_running_loop().time() - 5.0)
    assert passed.timeout == 0.001  # a deadline already passed: the run times out at once, never waits forever


async def test_mentioned_files_are_attached_only_when_asked(runtime: Runtime) -> None:
    notices: list[Notice] = []
    runtime.bus.add_listener(lambda event: notices.append(event) if isinstance(event, Notice) else None)
    attached = await _spec_for(runtime, "look at @calc.py and @missing.py", attach_mentions=True)
    assert [a.path for a in attached.attachments] == ["calc.py"]
    assert any("missing.py" in n.text for n in notices)
    notices.clear()
    plain = await _spec_for(runtime, "look at @calc.py and @missing.py")
    assert plain.attachments == () and not notices
