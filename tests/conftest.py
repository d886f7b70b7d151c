"""Shared fixtures: every test gets private config/data dirs and no real provider credentials."""

from __future__ import annotations

import compileall
import contextlib
import gc
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakellm.inprocess import ScriptedLLM

pytest_plugins = ["tests.fakellm.fixtures"]

_PROVIDER_ENV = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "OPENAI_BASE_URL",
    "OPENAI_API_BASE", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "OLLAMA_API_BASE", "YEETUI_MODEL",
)

_KEPT_ENV = ("YEETUI_NETGUARD", "YEETUI_SANDBOX")
"""Set by the test harness, not by a user: the network guard, and CI's `YEETUI_SANDBOX=landlock` pass (which
hides bubblewrap so the fallback is what the tests prove; dropped, that pass would test bubblewrap again)."""


def pytest_configure(config: pytest.Config) -> None:
    """Compile yeetui and the tests to bytecode once, before any worker starts. The suite starts hundreds of
    Python processes (the real binary, pane and detached workers); where the environment says
    PYTHONDONTWRITEBYTECODE (sandboxes often do) none of them would write a cache, and each would compile
    yeetui from source again — unlike an installed yeetui, whose bytecode pip writes at install. Likewise
    each worker would rewrite every test module's asserts again, every run (about 10 s of CPU a worker)."""
    sys.dont_write_bytecode = False  # and pytest may keep the test modules it rewrote for their asserts
    _private_runtime_dir()
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller has done the rest
    root = Path(__file__).resolve().parents[1]
    for folder in ("yeetui", "tests", "bench"):
        compileall.compile_dir(root / folder, quiet=1)


def _private_runtime_dir() -> None:
    """Each test process (the controller, each xdist worker) gets an XDG_RUNTIME_DIR of its own: the warm
    servers that the workers yeetui starts fork from (`yeetui/system/warm/`) and the relay sockets live
    there, so a test run shares one warm server per process and leaves none behind (`pytest_unconfigure`)."""
    folder = tempfile.mkdtemp(prefix="yr-", dir="/tmp")  # short: socket paths are limited to 108 bytes
    os.environ["XDG_RUNTIME_DIR"] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    """End the warm servers this process's tests started, and remove their folder."""
    from yeetui.system.warm.build import build_key
    from yeetui.system.warm.files import Place, place, server_alive

    folder = os.environ.get("XDG_RUNTIME_DIR", "")
    if not os.path.basename(folder).startswith("yr-"):
        return
    # Pane workers start from tmux's environment, which may not carry XDG_RUNTIME_DIR: their server is then this
    # build's in the default folder (SIGTERM: it ends once the commands it runs have ended).
    default = place({}, key=build_key())
    for lock in [*Path(folder).glob("yeetui-*/warm-*.lock"), *([default.lock] if default else [])]:
        with contextlib.suppress(OSError, ValueError):
            if server_alive(Place(lock.with_suffix(".sock"), lock)):
                os.kill(int(lock.read_text().split()[0]), signal.SIGTERM)
    shutil.rmtree(folder, ignore_errors=True)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: a worker more than there are cores. Many tests spend part of their time waiting on a process
    they started (the real binary, a worker, tmux) and the cores sit idle meanwhile: on 2 cores, 3 workers kept
    the machine 87 % busy against 75 % for 2, and the README's command ran in 10 min 14 s instead of 12 min 24 s
    (with the slow areas first, below)."""
    return len(os.sched_getaffinity(0)) + 1


_SLOW_FIRST = ("tests/e2e/", "tests/test_types.py", "tests/bench/", "tests/integration/", "tests/tui/",
               "tests/security/", "tests/fakellm/", "tests/unit/")
"""The test areas, slowest tests first (the real binary in tmux, the type checker, the benchmarks' smoke runs,
the CLI in subprocesses, Pilot apps; then the quick ones)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the slow areas first, so that the workers end together: pytest-xdist hands out tests in collection
    order, a few at a time (`--maxschedchunk` in pyproject.toml), and a worker that gets a 20-second test
    last would run alone at the end while the others wait. The order inside an area is kept."""
    root = config.rootpath

    def area(item: pytest.Item) -> int:
        path = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        return next((i for i, prefix in enumerate(_SLOW_FIRST) if path.startswith(prefix)), len(_SLOW_FIRST))

    items.sort(key=area)


_frozen_modules = 0
"""How many modules were loaded when the worker last froze what it holds (`_calm_collector`)."""
FREEZE_EVERY = 20
"""Tests after which a worker freezes again what survived them (`_calm_collector`)."""
_since_frozen = 0


def pytest_collection_finish(session: pytest.Session) -> None:
    _freeze_what_is_loaded()


def _freeze_what_is_loaded() -> None:
    """Collect, then move every object that survived out of the collector's sight (`gc.freeze`).

    A test worker lives for the whole run. What its imports built (modules, classes, Textual's and pydantic's
    tables: 70,000–400,000 objects, more once a test has loaded litellm) stays for good, and each automatic
    full collection walked all of it again: 30–40 of them per worker in `tests/tui` alone, a third of a second
    each, about a sixth of the workers' CPU. Frozen, they are still there and still counted in `gc.get_objects()`;
    a full collection just no longer walks them. Garbage is collected first, so none is frozen with them."""
    global _frozen_modules, _since_frozen
    gc.collect()
    gc.freeze()
    _frozen_modules, _since_frozen = len(sys.modules), 0


@pytest.fixture(autouse=True)
def _calm_collector() -> Iterator[None]:
    """Freeze again after a test that loaded a library, and every `FREEZE_EVERY` tests: what lasts past a test
    is mostly what a library built on its first use (litellm's import adds ~400,000 objects, its price map
    ~300,000 more once read), and unfrozen it was walked again by every full collection — and five times over
    by pytest's own at the end of the session (`gc_collect_harder`: 3 s in the worker that had loaded it)."""
    global _since_frozen
    yield
    _since_frozen += 1
    if _since_frozen >= FREEZE_EVERY or len(sys.modules) > _frozen_modules + 50:
        _freeze_what_is_loaded()


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point yeetui's XDG locations at a temp dir and drop real credentials from the environment."""
    # pytest-xdist's workers export COLUMNS=80 LINES=24; the real binary started in a 110-column tmux window
    # would then draw 80 columns wide (Python's terminal size reads them first).
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    for name in list(os.environ):
        if name in _PROVIDER_ENV or (name.startswith("YEETUI_") and name not in _KEPT_ENV):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "data").mkdir(parents=True)
    monkeypatch.setenv("YEETUI_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("YEETUI_DATA_DIR", str(home / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg-data"))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if os.environ.get("YEETUI_SANDBOX") == "landlock":
        # CI's fallback pass: a machine without bubblewrap whose user accepted the Landlock fallback for agents
        # that write (without it their bash is refused, as tests/security/test_writable_sandbox.py proves with
        # the setting given explicitly).
        (home / "config" / "config.yaml").write_text("tools: {bash_sandbox: unshielded}\n")
    return home


@pytest.fixture
def scripted() -> ScriptedLLM:
    """The fake LLM in-process: the `fake_env` script API (`script`, `requests`, `pending`, plus the async
    `until_requests`/`until`) answered by a real Provider without HTTP. `scripted.provider_factory` goes to
    `Runtime.open(provider_factory=...)`; a test switches between the two by the fixture name."""
    return ScriptedLLM()
