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
    tidying = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(tidying, fcntl.LOCK_EX)  # another yeetui, tidying (the lock is the root folder's own)
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
    notes = mount_points.notes_file(runtime_dir / f"yeetui-{os.getuid()}", root)
    async with shields([root]) as held:
        _made(held, root / ".claude")
        with notes.open("a") as stream:
            stream.write(f'123\nnot json\n"{root}/../outside"\n')
    assert outside.is_dir()  # an empty folder, but out of the root by '..'
    assert not (root / ".claude").exists()  # the good note is still acted on
    assert not notes.exists()  # done with, the notes go


async def test_the_notes_go_once_the_last_command_out_has_tidied(runtime_dir: Path, root: Path) -> None:
    """They used to stay, emptied: a file per workspace root ever used. While a command still runs there they
    stay (it may still have the mount points bound)."""
    notes = mount_points.notes_file(runtime_dir / f"yeetui-{os.getuid()}", root)
    async with shields([root]) as first:
        _made(first, root / ".claude")
        async with shields([root]) as second:
            _made(second, root / ".git")
        assert notes.exists() and (root / ".git").exists()
    assert not notes.exists() and not (root / ".git").exists() and not (root / ".claude").exists()
    assert list(notes.parent.iterdir()) == []


async def test_commands_whose_environments_name_different_runtime_folders_still_see_each_other(
        runtime_dir: Path, root: Path, tmp_path: Path) -> None:
    """A yeetui left in tmux after logout (no /run/user/UID any more) beside a new login's, an ssh session beside
    a desktop one: their private folders differ. The lock is the root folder's own, so the one whose notes
    name `.claude` does not remove it while the other's sandbox may have it bound."""
    other = tmp_path / "other-run"
    other.mkdir()
    first = shields([root], {"XDG_RUNTIME_DIR": str(other)})
    held = await first.__aenter__()
    _made(held, root / ".claude")
    async with shields([root]) as second:  # found `.claude` there: bound, not noted
        assert second is not None
        await first.__aexit__(None, None, None)
        assert (root / ".claude").is_dir()  # the second still holds the root


async def test_a_folder_swapped_for_a_link_on_the_way_is_not_followed(runtime_dir: Path, root: Path,
                                                                      tmp_path: Path) -> None:
    """A clone's own `.git/` is writable: a command may move it and put a link to anywhere in its place. The
    noted `.git/hooks` is then not looked for through the link."""
    (root / ".git").mkdir()
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "hooks").mkdir(parents=True)
    async with shields([root]) as held:
        _made(held, root / ".git" / "hooks")
        (root / ".git").rename(root / ".git2")
        (root / ".git").symlink_to(elsewhere)
    assert (elsewhere / "hooks").is_dir()  # empty, but reached only through the link
