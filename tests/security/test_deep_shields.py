"""A shield deeper than the top of a workspace holds too. Only the shielded path itself was a mount point, and
the folders on the way to it were plain writable ones: a command moved a clone's own `.git/` aside and made a
new `.git/config`, or moved `~/.config/` aside (a workspace holding yeetui's config folder) and wrote a user
config, or made yeetui's config folder where it did not exist yet. Under bubblewrap (the Landlock fallback
shields nothing inside the workspace, as README and `yeetui doctor` say)."""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
from pathlib import Path

import pytest

from yeetui.system import mount_points, sandbox
from yeetui.workspace import WorkspaceBinding

pytestmark = pytest.mark.skipif(not sandbox.probe_bwrap(), reason="bubblewrap does not work on this machine")


async def _confined(binding: WorkspaceBinding, command: str) -> str:
    """`command` as a writable agent's bash runs it (yeetui.tools.shell): its mount points noted and held."""
    writable = (*binding.roots, *binding.git_writable)
    async with mount_points.shields(binding.roots) as held:
        assert held is not None
        held.made(sandbox.shield_binds(binding.shielded(), writable, binding.protected)[1])
        with tempfile.TemporaryDirectory(prefix="yeetui-test-bash-") as private:
            argv = sandbox.wrap_confined(["bash", "-c", command], binding.cwd, writable=writable,
                                         shielded=binding.shielded(), empty_dir=Path(private), private_tmp=private,
                                         mechanism="bwrap", hidden=binding.protected)
            done = await asyncio.create_subprocess_exec(*argv, cwd=binding.cwd, stdout=subprocess.PIPE,
                                                        stderr=subprocess.STDOUT)
            out, _ = await asyncio.wait_for(done.communicate(), 60)
    return out.decode()


async def test_a_clones_git_folder_cannot_be_moved_aside_and_remade(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    (clone / ".git").mkdir(parents=True)
    (clone / ".git" / "config").write_text("[core]\n")
    said = await _confined(WorkspaceBinding(cwd=clone, mode="clone"),
                           "mv .git .git-aside; mkdir -p .git; printf '[core]\\n\\tfsmonitor = touch PWNED\\n' "
                           "> .git/config; mkdir .git/hooks; echo x > .git/objects-are-writable && echo WROTE-OWN")
    assert (clone / ".git" / "config").read_text() == "[core]\n", said
    assert not (clone / ".git-aside").exists()
    assert "WROTE-OWN" in said  # the clone's own git folder stays writable, but for config, hooks and info
    assert not (clone / ".git" / "hooks").exists()  # its empty mount point, removed after


@pytest.mark.parametrize("present", ["config folder", "parent only", "nothing"])
async def test_yeetuis_config_inside_a_workspace_cannot_be_written_by_any_path(tmp_path: Path, present: str) -> None:
    """A workspace that holds yeetui's config folder (yeetui started in the home folder): moving `.config/`
    aside, or making the config folder where it was missing, writes no config yeetui would read."""
    home = tmp_path / "workspace-home"
    config = home / ".config" / "yeetui"
    if present == "config folder":
        config.mkdir(parents=True)
    elif present == "parent only":
        config.parent.mkdir(parents=True)
    else:
        home.mkdir(exist_ok=True)
    binding = WorkspaceBinding(cwd=home, protected=(config,))
    said = await _confined(binding, "mv .config .config-aside; mkdir -p .config/yeetui; "
                                    "echo 'tools: {bash_sandbox: off}' > .config/yeetui/config.yaml; echo TRIED")
    assert "TRIED" in said
    assert not (config / "config.yaml").exists(), said
    assert not (home / ".config-aside").exists()
    assert config.is_dir() == (present == "config folder")  # what was missing and made a mount point is gone
    assert config.parent.is_dir() == (present != "nothing")
