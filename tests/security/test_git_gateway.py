"""Issue 23, item 1 and 3: yeetui's own git never runs a program the repository chose, and git that a permission
rule lets an agent run unasked runs none either.

- A builder (told yes to everything) makes a nested repository whose clean filter writes outside the project,
  and stages it: when the builder ends, yeetui's end-of-run commit must not run it on the host, nor commit the
  gitlink — and a merge refuses a branch that adds one.
- A review of a repository with a submodule whose clean filter would run, and one whose filter's name holds
  `=` (which `-c filter.x=y.clean=` cannot blank), runs neither.
- An allowlisted `git status` with `core.fsmonitor` in `.git/config`, and `git log -p` over a textconv driver,
  run nothing the repository named; `git diff /dev/null <file outside>` and `ls /` are asked about.
Each test also shows the planted program is live (plain git runs it), so it can fail."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.fakellm import Reply, ToolCall
from yeetui import paths
from yeetui.events import RunStatus
from yeetui.runs.permissions import answer_permissions_headless
from yeetui.runtime import Runtime
from yeetui.subagents.review import review_request
from yeetui.subagents.spawner import SpawnRequest
from yeetui.system import sandbox
from yeetui.worktrees.manager import WorktreeError
from yeetui.worktrees.merging import merge_work

MECHANISMS = [m for m, works in (("bwrap", sandbox.probe_bwrap), ("landlock", sandbox.probe_landlock)) if works()]


def git(cwd: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@e.st", *args], cwd=cwd, check=check,
                          capture_output=True, text=True).stdout


@pytest.fixture
def project_dir(project_dir: Path) -> Path:
    git(project_dir, "init", "-q", "-b", "main")
    (project_dir / "README").write_text("project\n")
    git(project_dir, "add", "README")
    git(project_dir, "commit", "-q", "-m", "init")
    return project_dir


def _nested_repo_script(mark: Path) -> str:
    """What a builder's bash (or its Makefile, or a conftest.py) does inside the sandbox: a nested repository
    whose clean filter writes `mark`, committed there, its file changed again, and staged as a gitlink."""
    return " && ".join([
        "mkdir sub", "cd sub", "git init -q",
        f"git config filter.evil.clean \"sh -c 'id > {mark}; cat'\"",
        "echo '* filter=evil' > .gitattributes", "echo one > f", "git add f .gitattributes",
        "git -c user.name=b -c user.email=b@x commit -qm sub", "echo two > f", "cd ..", "git add sub",
        "echo 'VALUE = 1' > work.py", "echo STAGED",
    ])


@pytest.mark.skipif(not MECHANISMS, reason="no OS sandbox works on this machine")
@pytest.mark.parametrize("mechanism", MECHANISMS or ["none"])
async def test_a_builders_nested_repository_runs_nothing_when_yeetui_commits_its_work(
        runtime: Runtime, scripted, project_dir: Path, tmp_path: Path, mechanism: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: mechanism)
    monkeypatch.setattr(runtime.launcher.settings.tools, "bash_sandbox", "unshielded")  # (Landlock: accepted)
    mark = tmp_path / "OUTSIDE"
    answer_permissions_headless(runtime.bus, approve=True)
    scripted.script(
        Reply(tool_calls=[ToolCall("bash", {"command": _nested_repo_script(mark)})], when_contains="BUILD-IT"),
        Reply(tool_calls=[ToolCall("complete", {"output": "built"})]))
    handle = await runtime.spawner.spawn(SpawnRequest("builder", "BUILD-IT", requested_by="user", blocking=True))
    result = handle.result
    assert result.status == RunStatus.COMPLETED, result.error
    assert "STAGED" in scripted.requests[-1].text  # the builder's commands ran
    assert not mark.exists(), f"yeetui's git ran the nested repository's filter on the host: {mark.read_text()}"
    [wt] = await runtime.store.worktree_records.list(statuses=("active",))
    tree = git(wt.path, "ls-tree", "-r", "HEAD")
    assert "work.py" in tree  # the rest of the work was committed
    assert "160000" not in tree and "sub" not in tree.split()  # the gitlink was not
    # The planted filter is live: plain git, looking into the gitlink as git status does, runs it.
    git(wt.path, "add", "sub")
    git(wt.path, "status", "--porcelain")
    assert mark.exists()


async def test_a_merge_refuses_a_branch_that_adds_a_gitlink(runtime: Runtime, project_dir: Path) -> None:
    worktrees = runtime.spawner.worktrees
    wt = await worktrees.create(project_dir, task="nested")
    sub = wt.path / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    (sub / "f").write_text("x\n")
    git(sub, "add", "f")
    git(sub, "commit", "-qm", "s")
    git(wt.path, "add", "sub")
    git(wt.path, "commit", "-qm", "adds a gitlink")
    with pytest.raises(WorktreeError, match="nested git repositories"):
        await merge_work(worktrees, wt)
    assert "sub" not in git(project_dir, "ls-tree", "HEAD")


def _submodule_with_filter(project: Path, tmp_path: Path, mark: Path) -> None:
    """A registered submodule (as an archive or one approved command would leave it) whose own config has a
    clean filter, with a file changed so that looking into it runs the filter."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q")
    (upstream / "f").write_text("one\n")
    git(upstream, "add", "f")
    git(upstream, "commit", "-qm", "u")
    git(project, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub")
    git(project, "commit", "-qm", "submodule")
    sub = project / "sub"
    git(sub, "config", "filter.evil.clean", f"sh -c 'id > {mark}; cat'")
    (sub / ".gitattributes").write_text("* filter=evil\n")
    (sub / "f").write_text("two\n")
    (project / "README").write_text("changed\n")


async def test_a_review_never_looks_into_a_submodule(project_dir: Path, tmp_path: Path) -> None:
    mark = tmp_path / "OUTSIDE"
    _submodule_with_filter(project_dir, tmp_path, mark)
    request = await review_request(project_dir, parent_session_id="s")
    assert "+changed" in request.prompt_suffix
    assert not mark.exists(), "yeetui's review diff ran a submodule's filter"
    git(project_dir, "diff", "HEAD")  # plain git does
    assert mark.exists()


async def test_a_filter_whose_name_holds_an_equals_sign_is_blanked_too(project_dir: Path, tmp_path: Path) -> None:
    mark = tmp_path / "OUTSIDE"
    (project_dir / ".gitattributes").write_text("README filter=x=y\n")
    git(project_dir, "add", ".gitattributes")
    git(project_dir, "commit", "-qm", "attributes")
    git(project_dir, "config", "filter.x=y.clean", f"sh -c 'id > {mark}; cat'")
    (project_dir / "README").write_text("changed\n")
    request = await review_request(project_dir, parent_session_id="s")
    assert "+changed" in request.prompt_suffix
    assert not mark.exists(), "a filter named x=y ran"
    git(project_dir, "diff", "HEAD")
    assert mark.exists()


def _executable(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.mark.skipif(not MECHANISMS, reason="no OS sandbox works on this machine")
@pytest.mark.parametrize("mechanism", MECHANISMS or ["none"])
async def test_allowlisted_git_runs_nothing_the_repository_names(
        runtime: Runtime, scripted, project_dir: Path, mechanism: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No prompt is answered (headless, no --yes): every command below is allowed by the profile's rules."""
    monkeypatch.setattr(sandbox, "probe_sandbox", lambda: mechanism)
    monkeypatch.setattr(runtime.launcher.settings.tools, "bash_sandbox", "unshielded")
    refused = answer_permissions_headless(runtime.bus, approve=False)
    marks = project_dir / "marks"  # writable to the agent's bash: only yeetui's settings stop the writes
    marks.mkdir()
    (project_dir / ".gitattributes").write_text("*.txt diff=evil\n")
    (project_dir / "a.txt").write_text("one\n")
    git(project_dir, "add", ".")
    git(project_dir, "commit", "-qm", "txt")
    monitor = _executable(project_dir / "monitor.sh", f"touch {marks}/fsmonitor")
    conv = _executable(project_dir / "conv.sh", f"touch {marks}/textconv; cat \"$1\"")
    git(project_dir, "config", "core.fsmonitor", str(monitor))
    git(project_dir, "config", "diff.evil.textconv", str(conv))
    git(project_dir, "config", "core.pager", f"touch {marks}/pager; cat")
    scripted.script(
        Reply(tool_calls=[ToolCall("bash", {"command": "git status"}), ToolCall("bash", {"command": "git log -p"}),
                          ToolCall("bash", {"command": "git show HEAD"})], when_contains="LOOK"),
        Reply(tool_calls=[ToolCall("complete", {"output": "looked"})]))
    await runtime.launcher.run_prompt("LOOK")
    assert not refused  # nothing was asked: the rules allowed all three
    said = scripted.requests[-1].text
    assert "+one" in said  # git log -p showed the diff
    assert sorted(p.name for p in marks.iterdir()) == []
    git(project_dir, "status")  # plain git runs the fsmonitor hook
    git(project_dir, "log", "-p")
    assert (marks / "fsmonitor").exists() and (marks / "textconv").exists()


async def test_allowlisted_commands_reading_outside_the_workspace_are_asked_about(
        runtime: Runtime, scripted, project_dir: Path) -> None:
    refused = answer_permissions_headless(runtime.bus, approve=False)
    database = paths.database_path()
    scripted.script(
        Reply(tool_calls=[ToolCall("bash", {"command": f"git diff /dev/null {database}"}),
                          ToolCall("bash", {"command": "ls /"}), ToolCall("bash", {"command": "ls ../"}),
                          ToolCall("bash", {"command": "git diff --stat"}), ToolCall("bash", {"command": "ls"})],
              when_contains="READ"),
        Reply(tool_calls=[ToolCall("complete", {"output": "read"})]))
    await runtime.launcher.run_prompt("READ")
    asked = sorted(event.subject for event in refused)
    assert asked == sorted([f"git diff /dev/null {database}", "ls /", "ls ../"])
    assert "SQLite format" not in scripted.requests[-1].text


@pytest.mark.skipif(not sandbox.probe_bwrap(), reason="bubblewrap does not work on this machine")
@pytest.mark.parametrize("prefix", ["x-", "yeetui/mine/"])
async def test_an_untrusted_builder_file_cannot_make_refs_heads_writable(
        scripted, project_dir: Path, monkeypatch: pytest.MonkeyPatch, prefix: str) -> None:
    """Issue 23, item 2: `branch_prefix: x-` in an untrusted project's builder made `refs/heads/` itself the
    writable ref folder, and the builder pointed the user's `main` at its own commit. The prefix is dropped
    (said at start), and a builder's bash can write its own folder's refs only."""
    agents = project_dir / ".yeetui" / "agents"
    agents.mkdir(parents=True)
    (agents / "builder.md").write_text(f"---\nworkspace: {{branch_prefix: {prefix}}}\n---\nYou build. BUILDER-FILE\n")
    git(project_dir, "add", ".")
    git(project_dir, "commit", "-qm", "agents")
    main_before = git(project_dir, "rev-parse", "main").strip()
    runtime = await Runtime.open(cwd=project_dir, provider_factory=scripted.provider_factory)
    try:
        said = {"x-": "must name a folder yeetui owns", "yeetui/mine/": "ignored workspace.branch_prefix"}[prefix]
        assert any(said in w and prefix in w for w in runtime.warnings), runtime.warnings
        answer_permissions_headless(runtime.bus, approve=True)
        move = ("git -c user.name=b -c user.email=b@x commit -q --allow-empty -m mine && "
                "git update-ref refs/heads/main HEAD; echo MOVED-$?")
        scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": move})], when_contains="go-build"),
                        Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
        handle = await runtime.spawner.spawn(SpawnRequest("builder", "go-build", requested_by="user",
                                                          blocking=True))
        assert handle.result.status == RunStatus.COMPLETED, handle.result.error
        [wt] = await runtime.store.worktree_records.list(statuses=("active",))
        assert wt.branch.startswith("yeetui/build/")  # the built-in prefix
        assert "MOVED-" in scripted.requests[-1].text and "MOVED-0" not in scripted.requests[-1].text
    finally:
        await runtime.close()
    assert git(project_dir, "rev-parse", "main").strip() == main_before


def test_a_branch_prefix_must_name_a_folder_yeetui_owns() -> None:
    from yeetui.definitions.profiles import WorkspacePolicy
    from yeetui.worktrees.names import branch_prefix
    for bad in ("x-", "", "yeetui", "feature/", "yeetui/../", "refs/"):
        with pytest.raises(ValueError, match=r"folder yeetui owns|not usable"):
            branch_prefix(bad)
        with pytest.raises(ValueError):
            WorkspacePolicy(branch_prefix=bad)
    assert branch_prefix("yeetui/build/") == "yeetui/build/"


async def test_a_commit_an_allow_everything_rule_lets_through_keeps_the_users_identity_and_runs_no_hook(
        tmp_path: Path) -> None:
    """With `bash: {"*": allow}` every git line is unasked, so hermetic: no global config is read — but the
    user's name still goes on a commit, and the repository's hooks do not run."""
    from yeetui.tools.base import ToolContext
    from yeetui.tools.shell import BashTool
    from yeetui.workspace import WorkspaceBinding

    home = tmp_path / "home-dir"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Global Person\n\temail = global@example.com\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path}/HOOK-RAN\n")
    hook.chmod(0o755)
    tool = BashTool()
    ctx = ToolContext(binding=WorkspaceBinding(cwd=repo, bash_sandbox="off"),  # (.git is read-only in any sandbox)
                      env={"PATH": "/usr/bin:/bin", "HOME": str(home)}, hermetic_git=True)
    out = await tool.run(tool.Args(command="git commit -q --allow-empty -m one && git log -1 --format=%an"), ctx)
    assert "Global Person" in out.content, out.content
    assert not (tmp_path / "HOOK-RAN").exists()


@pytest.mark.skipif(not sandbox.probe_bwrap(), reason="bubblewrap does not work on this machine")
async def test_an_agent_in_a_clone_commits_there_but_cannot_plant_config_or_hooks(
        scripted, project_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24, item 4: `isolation: clone` gives the agent a git folder of its own — its commits land — while
    the clone's config, hooks and info stay read-only, and a `commondir` redirect is removed when it ends."""
    agents = paths.config_dir() / "agents"
    agents.mkdir(parents=True)
    (agents / "cloner.md").write_text("---\ndescription: works in a clone\ncapabilities: [subtask]\nworkspace:\n"
                                      "  allow_writes: true\n  isolation: clone\n---\nYou build in a clone.\n")
    runtime = await Runtime.open(cwd=project_dir, provider_factory=scripted.provider_factory)
    try:
        answer_permissions_headless(runtime.bus, approve=True)
        work = ("echo 'x = 1' > x.py && git add x.py && git -c user.name=c -c user.email=c@x commit -qm mine "
                "&& echo COMMITTED; echo '[core] fsmonitor = touch PWNED' >> .git/config; "
                "echo 'touch PWNED' > .git/hooks/post-checkout; mkdir -p evil && echo evil > .git/commondir; "
                "echo DONE")
        scripted.script(Reply(tool_calls=[ToolCall("bash", {"command": work})], when_contains="CLONE-IT"),
                        Reply(tool_calls=[ToolCall("complete", {"output": "done"})]))
        handle = await runtime.spawner.spawn(SpawnRequest("cloner", "CLONE-IT", requested_by="user", blocking=True))
        assert handle.result.status == RunStatus.COMPLETED, handle.result.error
        said = scripted.requests[-1].text
        assert "COMMITTED" in said and "DONE" in said
        [wt] = await runtime.store.worktree_records.list(statuses=("active",))
        assert wt.kind == "clone"
        assert "mine" in git(wt.path, "log", "--format=%s", "-1")
        assert "fsmonitor" not in (wt.path / ".git" / "config").read_text()
        assert not (wt.path / ".git" / "hooks" / "post-checkout").exists()
        assert not (wt.path / ".git" / "commondir").exists()
    finally:
        await runtime.close()
