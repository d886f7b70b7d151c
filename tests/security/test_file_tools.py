"""Classes that held — the file tools (`read_file`, `write_file`, `edit_file`, `list_dir`, `glob`, `grep`) stay
inside the project whatever path an agent gives them: a sibling sharing the project's name prefix
(`../project-evil`), `..`, absolute paths, symlinks to files and directories outside (a symlinked parent for
`write_file` too), and a symlink swapped in while a call is under way. And part of class 14: `.git/`,
`.yeetui/`, `.claude/` and `.opencode/` are never written by them, in any letter case and by any route.

Every call goes through the real agent loop (the scripted model asks for it, the user approves every prompt),
so what is proven is what a model gets: nothing from outside reaches a request sent to it, and nothing outside
the project changes."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakellm import Reply, ToolCall
from tests.integration.helpers import result_text, tool_results
from yeetui.runtime import Runtime
from yeetui.system import safepath

SECRET = "HOSTFILE-CONTENT-5f1e9a"
"""In every file outside the project; deliberately not key-shaped, so redaction cannot hide a leak."""
SECRET_NAME = "SECRETNAME-83c2.txt"
"""The name of a file outside the project: listing or globbing outside would show it."""
HARMLESS = "harmless in-project text"


def _snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under `root`: file bytes, or a symlink's target (what writing outside would change)."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            found[rel] = path.read_bytes()
        else:
            found[rel] = "dir"
    return found


@pytest.fixture
def project_dir(project_dir: Path, tmp_path: Path) -> Path:
    """The project beside a prefix sibling (`project-evil`) and an outside folder, with symlinks out of it."""
    assert project_dir.name == "project"
    sibling = tmp_path / "project-evil"
    sibling.mkdir()
    (sibling / "x").write_text(f"sibling {SECRET}\n")
    (sibling / SECRET_NAME).write_text(f"{SECRET}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"outside {SECRET}\n")
    (outside / SECRET_NAME).write_text(f"{SECRET}\n")
    (project_dir / "inside.txt").write_text(f"{HARMLESS}\n")
    (project_dir / "sub").mkdir()
    (project_dir / "link_file").symlink_to(outside / "secret.txt")
    (project_dir / "link_dir").symlink_to(outside)
    (project_dir / "rel_link").symlink_to("../outside/secret.txt")
    (project_dir / "sub" / "up").symlink_to("../..")
    return project_dir


@pytest.fixture
def runtime(runtime: Runtime) -> Runtime:
    """The user approves every prompt: what stops these calls is the tools' confinement, not a refusal."""
    from yeetui.runs.permissions import answer_permissions_headless

    answer_permissions_headless(runtime.bus, approve=True)
    return runtime


def _outside(tmp_path: Path) -> dict[str, dict[str, bytes | str]]:
    return {name: _snapshot(tmp_path / name) for name in ("project-evil", "outside")}


async def _call(runtime: Runtime, scripted, *calls: ToolCall) -> list[dict[str, Any]]:
    """The agent makes `calls` in one turn, then completes; the tool results the model got back."""
    scripted.script(Reply(tool_calls=list(calls), when_contains="ATTACK"),
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
    result = await runtime.launcher.run_prompt("ATTACK")
    assert result.status.value == "completed", result.error
    results = tool_results(scripted.requests[1].body)
    assert len(results) == len(calls)
    return results


def _no_secret_sent(scripted) -> None:
    for request in scripted.requests:
        assert SECRET not in request.text and SECRET_NAME not in request.text, "outside content reached the model"


READS = [
    ("read_file", {"path": "../project-evil/x"}),
    ("read_file", {"path": "sub/../../project-evil/x"}),
    ("read_file", {"path": "{tmp}/project-evil/x"}),
    ("read_file", {"path": "{tmp}/project/../outside/secret.txt"}),
    ("read_file", {"path": "../outside/secret.txt"}),
    ("read_file", {"path": "link_file"}),
    ("read_file", {"path": "rel_link"}),
    ("read_file", {"path": "link_dir/secret.txt"}),
    ("read_file", {"path": "sub/up/outside/secret.txt"}),
    ("list_dir", {"path": ".."}),
    ("list_dir", {"path": "../project-evil"}),
    ("list_dir", {"path": "{tmp}/outside"}),
    ("list_dir", {"path": "link_dir"}),
    ("list_dir", {"path": "sub/up"}),
    ("glob", {"pattern": "*", "path": "../project-evil"}),
    ("glob", {"pattern": "**/*", "path": "link_dir"}),
    ("glob", {"pattern": "*", "path": "{tmp}"}),
    ("grep", {"pattern": "HOSTFILE", "path": ".."}),
    ("grep", {"pattern": "HOSTFILE", "path": "../project-evil"}),
    ("grep", {"pattern": "HOSTFILE", "path": "link_file"}),
    ("grep", {"pattern": "HOSTFILE", "path": "link_dir"}),
    ("grep", {"pattern": "HOSTFILE", "path": "{tmp}/outside/secret.txt"}),
]


@pytest.mark.parametrize(("tool", "arguments"), READS, ids=[f"{t}:{a.get('path', '')}:{a.get('pattern', '')}"
                                                            for t, a in READS])
async def test_reading_tools_never_reach_outside_the_project(runtime: Runtime, scripted, tmp_path: Path, tool: str,
                                                             arguments: dict[str, str]) -> None:
    """Held class: prefix siblings, `..`, absolute paths and symlinks out of the project are refused."""
    arguments = {k: v.replace("{tmp}", str(tmp_path)) for k, v in arguments.items()}
    (result,) = await _call(runtime, scripted, ToolCall(tool, arguments))
    assert result.get("is_error") is True, result_text(result)
    assert "outside the workspace" in result_text(result)
    _no_secret_sent(scripted)


async def test_searching_the_project_does_not_follow_its_symlinks_out(runtime: Runtime, scripted) -> None:
    """Held class: a recursive grep or glob of the project itself walks past its symlinks to outside, and a
    glob pattern climbing out with `..` matches nothing outside."""
    results = await _call(runtime, scripted, ToolCall("grep", {"pattern": "HOSTFILE|harmless"}),
                          ToolCall("glob", {"pattern": "**/*"}), ToolCall("list_dir", {"path": "."}),
                          ToolCall("glob", {"pattern": "../project-evil/*"}),
                          ToolCall("glob", {"pattern": "**/../../project-evil/*"}),
                          ToolCall("grep", {"pattern": "HOSTFILE", "glob": "../**"}))
    assert HARMLESS in result_text(results[0])  # the search ran, and found what is inside
    assert "inside.txt" in result_text(results[1])
    _no_secret_sent(scripted)


WRITES = [
    ("write_file", {"path": "../project-evil/x"}),
    ("write_file", {"path": "../project-evil/new.txt"}),
    ("write_file", {"path": "{tmp}/outside/new.txt"}),
    ("write_file", {"path": "sub/../../outside/new.txt"}),
    ("write_file", {"path": "link_file"}),
    ("write_file", {"path": "rel_link"}),
    ("write_file", {"path": "link_dir/new.txt"}),
    ("write_file", {"path": "link_dir/deeper/new.txt"}),
    ("write_file", {"path": "sub/up/outside/new.txt"}),
    ("edit_file", {"path": "../project-evil/x"}),
    ("edit_file", {"path": "link_file"}),
    ("edit_file", {"path": "link_dir/secret.txt"}),
    ("edit_file", {"path": "{tmp}/outside/secret.txt"}),
]


def _write_call(tool: str, path: str) -> ToolCall:
    if tool == "write_file":
        return ToolCall(tool, {"path": path, "content": "PWNED\n"})
    return ToolCall(tool, {"path": path, "old_string": "HOSTFILE", "new_string": "PWNED"})


@pytest.mark.parametrize(("tool", "arguments"), WRITES, ids=[f"{t}:{a['path']}" for t, a in WRITES])
async def test_writing_tools_never_write_outside_the_project(runtime: Runtime, scripted, tmp_path: Path, tool: str,
                                                             arguments: dict[str, str]) -> None:
    """Held class: writes through a prefix sibling, `..`, an absolute path, a symlinked file or a symlinked
    parent directory are refused, and nothing outside the project changes."""
    before = _outside(tmp_path)
    (result,) = await _call(runtime, scripted, _write_call(tool, arguments["path"].replace("{tmp}", str(tmp_path))))
    assert result.get("is_error") is True, result_text(result)
    assert "outside the workspace" in result_text(result)
    assert _outside(tmp_path) == before, "a file outside the project changed"
    _no_secret_sent(scripted)


# ---------------------------------------------------------------------------------------------- swapped symlinks


@pytest.fixture(params=["native", "resolve-verify"])
def mechanism(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways the tools confine an open: openat2 where the kernel has it, and the user-space walk."""
    if request.param == "resolve-verify":
        monkeypatch.setattr(safepath, "_openat2", lambda: None)
    elif safepath.confinement_mechanism() != "openat2":
        pytest.skip("openat2 is not available here; the resolve-verify case covers this machine")
    return request.param


class _Swapper:
    """`project/d` is a real directory (holding a harmless `f`) or a symlink to the outside folder (whose `f`
    holds the secret); `to_link`/`to_dir` flip it by renames."""

    def __init__(self, project: Path, outside: Path) -> None:
        self.d = project / "d"
        self.dir_parked = project / "d.dir"
        self.link_parked = project / "d.link"
        self.d.mkdir()
        (self.d / "f").write_text(f"{HARMLESS}\n")
        (outside / "f").write_text(f"outside {SECRET}\n")
        self.link_parked.symlink_to(outside)

    def to_link(self) -> None:
        if not self.d.is_symlink():
            os.rename(self.d, self.dir_parked)
            os.rename(self.link_parked, self.d)

    def to_dir(self) -> None:
        if self.d.is_symlink():
            os.rename(self.d, self.link_parked)
            os.rename(self.dir_parked, self.d)


@pytest.fixture
def swapper(project_dir: Path, tmp_path: Path) -> _Swapper:
    return _Swapper(project_dir, tmp_path / "outside")


async def test_a_symlink_swapped_between_check_and_open_is_refused(runtime: Runtime, scripted, tmp_path: Path,
                                                                   swapper: _Swapper, mechanism: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Held class, with the race forced: every call's path is checked while `d` is a real folder inside the
    project, and `d` becomes a symlink to outside just before the open. The open must not follow it."""
    real_open = safepath.open_target
    swaps = 0

    def swap_then_open(target: safepath.Target, *args: Any, **kwargs: Any) -> int:
        nonlocal swaps
        if target.rel.parts[:1] == ("d",):
            swapper.to_link()
            swaps += 1
        try:
            return real_open(target, *args, **kwargs)
        finally:
            swapper.to_dir()

    monkeypatch.setattr(safepath, "open_target", swap_then_open)
    before = _outside(tmp_path)
    results = await _call(runtime, scripted, ToolCall("read_file", {"path": "d/f"}),
                          ToolCall("grep", {"pattern": "HOSTFILE", "path": "d/f"}),
                          ToolCall("list_dir", {"path": "d"}),
                          ToolCall("write_file", {"path": "d/new.txt", "content": "PWNED\n"}),
                          ToolCall("write_file", {"path": "d/f", "content": "PWNED\n"}))
    assert swaps >= len(results)
    for result in results:
        assert result.get("is_error") is True, result_text(result)
    assert _outside(tmp_path) == before, "a file outside the project changed"
    _no_secret_sent(scripted)


@pytest.fixture
def flipping(swapper: _Swapper, project_dir: Path, tmp_path: Path) -> Iterator[list[int]]:
    """A thread flipping, as fast as it can while the test runs, `d` between folder and symlink and the symlink
    `swap` (atomically, by rename) between `inside.txt` and the outside secret."""
    stop = threading.Event()
    flips = [0]
    swap, staged = project_dir / "swap", project_dir / "swap.next"
    swap.symlink_to("inside.txt")

    def flip() -> None:
        while not stop.is_set():
            try:
                swapper.to_link()
                staged.symlink_to(tmp_path / "outside" / "secret.txt")
                os.replace(staged, swap)
                swapper.to_dir()
                staged.symlink_to("inside.txt")
                os.replace(staged, swap)
            except OSError:
                with contextlib.suppress(FileNotFoundError):
                    staged.unlink()
                continue
            flips[0] += 1

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        yield flips
    finally:
        stop.set()
        thread.join(timeout=10)
        assert not thread.is_alive()


TURNS, CALLS_PER_TURN = 15, 40


async def test_a_symlink_flipping_during_many_reads_never_leaks(runtime: Runtime, scripted, tmp_path: Path,
                                                                mechanism: str, flipping: list[int]) -> None:
    """Held class, free-running: 570 read_file calls (and some writes) while a thread flips `d` between the
    in-project folder and a symlink to outside, and the symlink `swap` between an in-project file and outside.
    The secret never reaches the model; nothing outside is written."""
    before = _outside(tmp_path)
    calls = [ToolCall("read_file", {"path": path}) for path in ("d/f", "swap") * (CALLS_PER_TURN // 2 - 1)]
    calls += [ToolCall("write_file", {"path": "d/new.txt", "content": "PWNED\n"}),
              ToolCall("edit_file", {"path": "d/f", "old_string": "HOSTFILE", "new_string": "PWNED"})]
    scripted.script(*[Reply(tool_calls=list(calls), when_contains="RACE") for _ in range(TURNS)],
                    Reply(tool_calls=[ToolCall("complete", {"output": "done"})], when_contains="RACE"))
    result = await runtime.launcher.run_prompt("RACE")
    assert result.status.value == "completed", result.error
    assert len(scripted.requests) == TURNS + 1
    assert flipping[0] > 0
    _no_secret_sent(scripted)
    assert HARMLESS in scripted.requests[-1].text  # reads went through while `d` was the real folder
    after = _outside(tmp_path)
    after.pop("f", None)  # the only outside file named `f`: compared below
    before.pop("f", None)
    assert after == before and not (tmp_path / "outside" / "new.txt").exists()
    assert (tmp_path / "outside" / "f").read_text() == f"outside {SECRET}\n"


# ---------------------------------------------------------------------------------------------- protected dirs

PROTECTED = [".git/config", ".GIT/config", ".Git/hooks/pre-commit", ".yeetui/config.yaml", ".YEETUI/config.yaml",
             ".claude/agents/x.md", ".Claude/agents/x.md", ".CLAUDE/settings.json", ".opencode/agent/x.md",
             ".OpenCode/agent/x.md", "sub/.OPENCODE/agents/x.md", "sub/../.git/config", "gitlink/config",
             "{project}/.Yeetui/agents/x.yaml"]


@pytest.fixture
def protected_project(project_dir: Path) -> Path:
    """Every file named in PROTECTED exists (so edit_file has something to edit: on a case-sensitive filesystem
    `.GIT/config` is a file of its own); `gitlink` is a symlink to `.git`."""
    (project_dir / ".git").mkdir()
    (project_dir / "gitlink").symlink_to(".git")
    for rel in PROTECTED:
        path = project_dir / rel.replace("{project}/", "")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("[core]\n\tbare = false\n")
    return project_dir


@pytest.mark.parametrize("path", PROTECTED)
@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
async def test_protected_folders_are_never_written_in_any_letter_case(runtime: Runtime, scripted,
                                                                      protected_project: Path, tool: str,
                                                                      path: str) -> None:
    """Class 14 (case-insensitive protected paths) and class 8: `.git/`, `.yeetui/`, `.claude/`, `.opencode/`
    in any letter case, through `..` or a symlink, are never written by write_file or edit_file."""
    path = path.replace("{project}", str(protected_project))
    before = _snapshot(protected_project)
    call = (ToolCall(tool, {"path": path, "content": "[core]\n\tfsmonitor = touch PWNED\n"}) if tool == "write_file"
            else ToolCall(tool, {"path": path, "old_string": "bare = false", "new_string": "fsmonitor = x"}))
    (result,) = await _call(runtime, scripted, call)
    assert result.get("is_error") is True, result_text(result)
    assert _snapshot(protected_project) == before, f"{path} was written"
    assert "protected" in result_text(result)
