"""The sandbox's mount points in a workspace go only when no other command can have them bound: the last
command out removes them, a crash's are removed by the next command there, a folder that is someone's now
stays (yeetui.system.mount_points)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from yeetui.system import mount_points
from yeetui.system.mount_points import Shields, shields


@pytest.fixture
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    return folder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


def _made(held: Shields | None, *paths: Path) -> None:
    """What bubblewrap does for an absent shielded folder, after yeetui noted it."""
    assert held is not None
    held.made(list(paths))
    for path in paths:
        path.mkdir(exist_ok=True)


async def test_the_last_command_out_removes_the_mount_points_the_first_left(runtime_dir: Path, root: Path) -> None:
    first, second = shields([root]), shields([root])
    a = await first.__aenter__()
    _made(a, root / ".claude", root / ".yeetui")
    b = await second.__aenter__()
    _made(b, root / ".claude")  # found it there (the first's) or made it again: bound either way
    await first.__aexit__(None, None, None)
    assert (root / ".claude").is_dir() and (root / ".yeetui").is_dir()  # the second may have them bound
    await second.__aexit__(None, None, None)
    assert not (root / ".claude").exists() and not (root / ".yeetui").exists()


async def test_a_noted_folder_that_is_no_longer_empty_stays_and_notes_outside_the_root_are_ignored(
        runtime_dir: Path, root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    async with shields([root]) as held:
        _made(held, root / ".claude", root / ".opencode")
        assert held is not None
        held.made([elsewhere])  # not under the root: never noted
        elsewhere.mkdir()
        (root / ".opencode" / "agent.md").write_text("the user's, written meanwhile")
    assert not (root / ".claude").exists()
    assert (root / ".opencode" / "agent.md").is_file()
    assert elsewhere.is_dir()


async def test_a_crashed_commands_mount_points_are_removed_by_the_next_command_there(runtime_dir: Path,
                                                                                     root: Path) -> None:
    script = textwrap.dedent(f"""
        import asyncio, os, sys
        from pathlib import Path
        from yeetui.system.mount_points import shields
        async def main():
            async with shields([Path({str(root)!r})]) as held:
                held.made([Path({str(root / ".claude")!r})])
                os.mkdir({str(root / ".claude")!r})
                print("HELD", flush=True)
                await asyncio.sleep(3600)
        asyncio.run(main())
    """)
    crashed = await asyncio.create_subprocess_exec(sys.executable, "-c", script, stdout=subprocess.PIPE,
                                                   env={**os.environ, "XDG_RUNTIME_DIR": str(runtime_dir)})
    assert crashed.stdout is not None and (await crashed.stdout.readline()).strip() == b"HELD"
    crashed.send_signal(signal.SIGKILL)
    await crashed.wait()
    assert (root / ".claude").is_dir()  # left by the crash
    async with shields([root]):
        pass
    assert not (root / ".claude").exists()


async def test_a_command_waits_while_another_tidies(runtime_dir: Path, root: Path) -> None:
    async with shields([root]) as held:  # makes the lock file
        assert held is not None
    [lock] = (runtime_dir / f"yeetui-{os.getuid()}").glob("shield-*.lock")
    tidying = os.open(lock, os.O_RDWR)
    fcntl.flock(tidying, fcntl.LOCK_EX)  # another yeetui, tidying
    entered = asyncio.Event()

    async def command() -> None:
        async with shields([root]):
            entered.set()

    task = asyncio.create_task(command())
    for _ in range(20):
        await asyncio.sleep(0.01)
    assert not entered.is_set()
    os.close(tidying)
    await asyncio.wait_for(task, 10)
    assert entered.is_set()


async def test_without_a_private_runtime_folder_mount_points_are_never_removed(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mount_points, "user_folder", lambda env=None: None)
    async with shields([root]) as held:
        assert held is None  # nothing could tell whether another command has them bound


async def test_notes_that_are_not_a_path_beneath_the_root_are_skipped(runtime_dir: Path, root: Path,
                                                                      tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    _, notes = mount_points.files(runtime_dir / f"yeetui-{os.getuid()}", root)
    async with shields([root]) as held:
        _made(held, root / ".claude")
        with notes.open("a") as stream:
            stream.write(f'123\nnot json\n"{root}/../outside"\n')
    assert outside.is_dir()  # an empty folder, but out of the root by '..'
    assert not (root / ".claude").exists()  # the good note is still acted on
    assert notes.read_text() == ""
