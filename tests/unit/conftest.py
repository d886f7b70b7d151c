"""Unit-test fixtures: a Runtime on a temp project, answered by the in-process scripted provider.

Modules adjust it by overriding the small fixtures it is built from: `project_dir` (files in the project;
override it as `def project_dir(project_dir)` to add to the default), `runtime_env` (environment variables),
or `runtime` itself (e.g. `def runtime(runtime)` to answer permission prompts).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakellm.inprocess import ScriptedLLM
from yeetui.runtime import FrontEnd, Runtime


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    """An empty project directory (the Runtime's cwd)."""
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture
def runtime_env() -> dict[str, str]:
    """Environment variables set before `runtime` opens (retries never wait: YEETUI_RETRY__BASE_DELAY=0)."""
    return {}


@pytest.fixture
def front_end() -> FrontEnd:
    """What the front end opening `runtime` does (`--model`, `--yes`…); a test parametrizes it to change that."""
    return FrontEnd()


@pytest.fixture
async def runtime(scripted: ScriptedLLM, project_dir: Path, runtime_env: dict[str, str], front_end: FrontEnd,
                  monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Runtime]:
    """A Runtime opened on `project_dir` whose every model is answered by `scripted`; closed afterwards."""
    monkeypatch.setenv("YEETUI_RETRY__BASE_DELAY", "0")
    for name, value in runtime_env.items():
        monkeypatch.setenv(name, value)
    rt = await Runtime.open(cwd=project_dir, provider_factory=scripted.provider_factory, front_end=front_end)
    try:
        yield rt
    finally:
        await rt.close()
