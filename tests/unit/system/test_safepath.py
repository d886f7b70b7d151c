"""Confinement: escapes by `..`, absolute paths, symlinks and races; protected places, both mechanisms."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from yeetui.errors import PathEscapeError, ToolError
from yeetui.system import safepath
from yeetui.workspace import WorkspaceBinding

MECHANISMS = ["openat2", "resolve-verify"]


@pytest.fixture(params=MECHANISMS)
def mechanism(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test under each confinement mechanism (resolve-verify by hiding openat2)."""
    if request.param == "openat2" and safepath._openat2() is None:
        pytest.skip("openat2 is not available on this kernel")
    if request.param == "resolve-verify":
        monkeypatch.setattr(safepath, "_openat2", lambda: None)
    assert safepath.confinement_mechanism() == request.param
    return request.param


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """root/ (the workspace) next to outside/ (holding a secret)."""
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n")
    return root


def read_all(fd: int) -> str:
    with os.fdopen(fd, "rb") as fh:
        return fh.read().decode()


def test_this_machine_reports_a_mechanism() -> None:
    assert safepath.confinement_mechanism() in MECHANISMS


def test_reads_relative_and_absolute_paths_inside(ws: Path, mechanism: str) -> None:
    binding = WorkspaceBinding(cwd=ws / "src", roots=(ws,))
    fd, real = safepath.open_for_read(binding, "app.py")
    assert read_all(fd) == "print('hi')\n" and real == ws / "src" / "app.py"
    fd, real = safepath.open_for_read(binding, "../src/./app.py")  # `..` that stays inside is fine
    assert read_all(fd) == "print('hi')\n"
    fd, _ = safepath.open_for_read(binding, str(ws / "src" / "app.py"))
    assert read_all(fd) == "print('hi')\n"


@pytest.mark.parametrize("path", ["../outside/secret.txt", "src/../../outside/secret.txt", "/etc/passwd"])
def test_escapes_by_dotdot_and_absolute_paths_are_refused(ws: Path, mechanism: str, path: str) -> None:
    binding = WorkspaceBinding(cwd=ws)
    with pytest.raises(PathEscapeError) as err:
        safepath.open_for_read(binding, path)
    message = str(err.value)
    assert repr(path) in message and str(ws) in message and "outside the workspace" in message


def test_symlinks_pointing_out_are_refused(ws: Path, mechanism: str) -> None:
    outside = ws.parent / "outside"
    (ws / "file_link").symlink_to(outside / "secret.txt")
    (ws / "dir_link").symlink_to(outside)
    binding = WorkspaceBinding(cwd=ws)
    for path in ("file_link", "dir_link/secret.txt", "dir_link"):
        with pytest.raises(PathEscapeError):
            safepath.open_for_read(binding, path)
    with pytest.raises(PathEscapeError):
        safepath.open_for_write(binding, "dir_link/new.txt")
    with pytest.raises(PathEscapeError):
        safepath.open_for_write(binding, "file_link")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


def test_symlinks_inside_and_between_roots_are_followed(ws: Path, tmp_path: Path, mechanism: str) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.md").write_text("notes")
    (ws / "alias.py").symlink_to(ws / "src" / "app.py")
    (ws / "to_other").symlink_to(other)
    binding = WorkspaceBinding(cwd=ws, roots=(ws, other))
    fd, real = safepath.open_for_read(binding, "alias.py")
    assert read_all(fd) == "print('hi')\n" and real == ws / "src" / "app.py"
    fd, real = safepath.open_for_read(binding, "to_other/notes.md")
    assert read_all(fd) == "notes" and real == other / "notes.md"


def test_write_creates_parent_dirs_beneath_the_root(ws: Path, mechanism: str) -> None:
    binding = WorkspaceBinding(cwd=ws)
    fd, real = safepath.open_for_write(binding, "a/b/c/new.txt")
    os.write(fd, b"made")
    os.close(fd)
    assert real == ws / "a" / "b" / "c" / "new.txt" and real.read_text() == "made"


@pytest.mark.parametrize("path", [".git/config", ".git/hooks/pre-commit", ".yeetui/new", "src/.git/x",
                                  "src/../.git/new", "gitlink/config", "/ROOT/.yeetui/agents/x.md"])
def test_writes_into_git_and_yeetui_are_refused_even_for_new_files(ws: Path, mechanism: str,
                                                                    path: str) -> None:
    (ws / "gitlink").symlink_to(ws / ".git")
    binding = WorkspaceBinding(cwd=ws)
    with pytest.raises(PathEscapeError, match="protected"):
        safepath.open_for_write(binding, path.replace("/ROOT", str(ws)))
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert not (ws / ".yeetui").exists() and not (ws / ".git" / "hooks").exists()
    assert not (ws / "src" / ".git").exists() and not (ws / ".git" / "new").exists()


def test_writes_into_protected_dirs_are_refused(ws: Path, mechanism: str) -> None:
    data = ws / "data"
    data.mkdir()
    binding = WorkspaceBinding(cwd=ws, protected=(data,))
    with pytest.raises(PathEscapeError, match="protected directory"):
        safepath.open_for_write(binding, "data/fresh.db")
    with pytest.raises(PathEscapeError, match="protected directory"):
        safepath.open_for_write(binding, "data")
    assert list(data.iterdir()) == []
    fd, _ = safepath.open_for_read(binding, "data")  # reading is still allowed
    os.close(fd)


def test_read_only_binding_refuses_every_write(ws: Path) -> None:
    binding = WorkspaceBinding(cwd=ws, allow_writes=False)
    with pytest.raises(ToolError, match="read-only"):
        safepath.open_for_write(binding, "src/app.py")
    with pytest.raises(ToolError, match="read-only"):
        safepath.open_for_write(binding, "brand_new.txt")
    assert not (ws / "brand_new.txt").exists()


def test_errors_for_missing_files_and_bad_paths_are_clear(ws: Path) -> None:
    binding = WorkspaceBinding(cwd=ws)
    with pytest.raises(ToolError, match="No such file or directory"):
        safepath.open_for_read(binding, "nope.txt")
    with pytest.raises(ToolError, match="empty"):
        safepath.open_for_read(binding, "")
    with pytest.raises(ToolError, match="NUL"):
        safepath.open_for_read(binding, "a\0b")
    with pytest.raises(ToolError, match="directory"):
        safepath.open_for_write(binding, ".")


def test_display_path_is_relative_to_cwd_when_inside(ws: Path) -> None:
    binding = WorkspaceBinding(cwd=ws / "src", roots=(ws,))
    assert safepath.display_path(binding, ws / "src" / "app.py") == "app.py"
    assert safepath.display_path(binding, ws / "src") == "."
    assert safepath.display_path(binding, ws / "README") == str(ws / "README")
    assert safepath.resolve_inside(binding, "..") == ws


# ------------------------------------------------------------------------------------------------ races


def _swap_for_symlink(directory: Path, target: Path) -> None:
    """The attack: replace a checked directory by a symlink to somewhere else."""
    directory.rename(directory.with_name(directory.name + ".moved"))
    directory.symlink_to(target)


def test_symlink_swapped_in_after_the_check_cannot_redirect_a_read(ws: Path, mechanism: str) -> None:
    outside = ws.parent / "outside"
    (ws / "docs").mkdir()
    (ws / "docs" / "secret.txt").write_text("harmless\n")
    binding = WorkspaceBinding(cwd=ws)
    target = safepath.locate(binding, "docs/secret.txt")  # the check passes
    _swap_for_symlink(ws / "docs", outside)  # ... and then the path changes under us
    with open(target.real) as naive:  # a plain open by name would now leak the secret
        assert naive.read() == "TOP SECRET\n"
    with pytest.raises(PathEscapeError, match=r"changed while it was being opened|symlink"):
        safepath.open_target(target, os.O_RDONLY)


def test_symlink_swapped_in_after_the_check_cannot_redirect_a_write(ws: Path, mechanism: str) -> None:
    outside = ws.parent / "outside"
    (ws / "build").mkdir()
    binding = WorkspaceBinding(cwd=ws)
    target = safepath.locate(binding, "build/out/new.txt")
    safepath.check_writable(binding, target)
    _swap_for_symlink(ws / "build", outside)
    with pytest.raises(PathEscapeError):
        safepath.open_target(target, os.O_WRONLY | os.O_CREAT, create_dirs=True)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_swap_towards_git_after_the_protected_check_is_refused(ws: Path, mechanism: str) -> None:
    (ws / "hooks_here").mkdir()
    binding = WorkspaceBinding(cwd=ws)
    target = safepath.locate(binding, "hooks_here/pre-commit")
    safepath.check_writable(binding, target)  # not protected when checked
    _swap_for_symlink(ws / "hooks_here", ws / ".git")
    with pytest.raises(PathEscapeError):
        safepath.open_target(target, os.O_WRONLY | os.O_CREAT, create_dirs=True)
    assert not (ws / ".git" / "pre-commit").exists()


def test_openat2_refuses_the_race_directly(ws: Path) -> None:
    """The kernel itself (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) refuses the swapped path."""
    if safepath._openat2() is None:
        pytest.skip("openat2 is not available on this kernel")
    (ws / "docs").mkdir()
    binding = WorkspaceBinding(cwd=ws)
    target = safepath.locate(binding, "docs/secret.txt")
    _swap_for_symlink(ws / "docs", ws.parent / "outside")
    root_fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError) as err:
            safepath._openat2_call(root_fd, "docs/secret.txt", os.O_RDONLY, 0)
        assert err.value.errno in (40, 18)  # ELOOP or EXDEV
        with pytest.raises(OSError):
            safepath._openat2_call(root_fd, "../outside/secret.txt", os.O_RDONLY, 0)
    finally:
        os.close(root_fd)
    assert target.rel.as_posix() == "docs/secret.txt"


# ------------------------------------------------------------------------------------------ property test

SEGMENTS = ["..", ".", "a", "b", "x.txt", "in_link", "out_link", "out_dir", "loop", ".git", "new"]


@pytest.fixture(scope="module")
def arena() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="yeetui-arena-"))
    root, outside = base / "root", base / "outside"
    (root / "a" / "b").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "x.txt").write_text("x")
    (root / "a" / "x.txt").write_text("ax")
    (root / "in_link").symlink_to(root / "a")
    (root / "a" / "out_link").symlink_to(outside / "secret")
    (root / "a" / "b" / "out_dir").symlink_to(outside)
    (root / "loop").symlink_to(root / "loop")
    outside.mkdir()
    (outside / "secret").write_text("s")
    yield base
    shutil.rmtree(base)


def _inside(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(str(root) + os.sep)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segments=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=7), write=st.booleans(),
       sub_cwd=st.booleans())
def test_nothing_outside_the_root_is_ever_opened_or_created(arena: Path, mechanism: str, segments: list[str],
                                                           write: bool, sub_cwd: bool) -> None:
    root, outside = arena / "root", arena / "outside"
    binding = WorkspaceBinding(cwd=root / "a" if sub_cwd else root, roots=(root,))
    path = "/".join(segments)
    try:
        fd, real = (safepath.open_for_write if write else safepath.open_for_read)(binding, path)
    except ToolError:
        pass  # refused (escape, protected, missing, loop …) — fine
    else:
        opened = os.readlink(f"/proc/self/fd/{fd}")
        os.close(fd)
        assert _inside(opened, root) and _inside(str(real), root)
        if write:
            assert ".git" not in Path(opened).relative_to(root).parts
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
    assert (outside / "secret").read_text() == "s"
    assert list((root / ".git").iterdir()) == []
