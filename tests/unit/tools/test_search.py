"""glob and grep: matching, confinement, .git skipping, binary skipping, truncation."""

from __future__ import annotations

from pathlib import Path

import pytest

from yeetui.errors import PathEscapeError, ToolError
from yeetui.tools.base import ToolContext
from yeetui.tools.search import GlobTool, GrepTool, glob_regex
from yeetui.workspace import WorkspaceBinding


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    files = {
        "main.py": "import os\nTODO = 'top'\n",
        "src/app.py": "def app():\n    # todo: tidy\n    return 1\n",
        "src/ui/view.tsx": "export const View = () => null // TODO\n",
        "src/ui/model.ts": "export type Model = {}\n",
        "docs/guide.md": "# Guide\nNothing to do.\n",
        ".git/config": "[core] TODO\n",
        ".git/objects/ab": "TODO\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "logo.bin").write_bytes(b"TODO\0\1\2")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text("TODO = 'secret'\n")
    (root / "linked_out").symlink_to(outside)
    (root / "leak_link.py").symlink_to(outside / "leak.py")
    return root


def ctx(root: Path) -> ToolContext:
    return ToolContext(binding=WorkspaceBinding(cwd=root))


async def run_glob(root: Path, **kw: object) -> list[str]:
    tool = GlobTool()
    return (await tool.run(tool.Args(**kw), ctx(root))).content.splitlines()


async def run_grep(root: Path, **kw: object) -> str:
    tool = GrepTool()
    out = await tool.run(tool.Args(**kw), ctx(root))
    assert not out.is_error
    return out.content


@pytest.mark.parametrize(("pattern", "path", "matches"), [
    ("src/app.py", "a/src/app.py", False),
    ("**/*.py", "main.py", True),
    ("**/*.py", "src/deep/x.py", True),
    ("*.py", "src/app.py", False),
    ("src/*.{ts,tsx}", "src/a.tsx", True),
    ("src/*.{ts,tsx}", "src/a.js", False),
    ("file?.[ch]", "file1.c", True),
    ("file?.[!ch]", "file1.c", False),
    ("src/**", "src/a/b/c", True),
])
def test_glob_regex(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).fullmatch(path)) is matches


async def test_glob_finds_files_skipping_git_and_outside_symlinks(ws: Path) -> None:
    assert await run_glob(ws, pattern="**/*.py") == ["leak_link.py", "main.py", "src/app.py"]
    assert await run_glob(ws, pattern="*.py") == ["leak_link.py", "main.py"]
    assert await run_glob(ws, pattern="**/*.{ts,tsx}") == ["src/ui/model.ts", "src/ui/view.tsx"]
    assert await run_glob(ws, pattern="*", path="src/ui") == ["src/ui/model.ts", "src/ui/view.tsx"]
    assert not any(".git" in p for p in await run_glob(ws, pattern="**"))
    assert not any("linked_out" in p for p in await run_glob(ws, pattern="**"))


async def test_glob_no_match_and_errors(ws: Path) -> None:
    assert await run_glob(ws, pattern="**/*.rs") == ["No files match '**/*.rs' in the working directory."]
    tool = GlobTool()
    with pytest.raises(ToolError, match="must be relative"):
        await tool.run(tool.Args(pattern="/etc/*"), ctx(ws))
    with pytest.raises(PathEscapeError):
        await tool.run(tool.Args(pattern="*", path="linked_out"), ctx(ws))
    with pytest.raises(ToolError, match="not a directory"):
        await tool.run(tool.Args(pattern="*", path="main.py"), ctx(ws))


async def test_grep_finds_lines_with_paths_and_numbers(ws: Path) -> None:
    text = await run_grep(ws, pattern="TODO")
    assert text.splitlines() == ["main.py:2:TODO = 'top'",
                                 "src/ui/view.tsx:1:export const View = () => null // TODO"]


async def test_grep_ignore_case_glob_filter_and_single_file(ws: Path) -> None:
    assert "src/app.py:2:    # todo: tidy" in await run_grep(ws, pattern="todo", ignore_case=True)
    by_name = await run_grep(ws, pattern="(?i)todo", glob="*.py")
    assert by_name == "main.py:2:TODO = 'top'\nsrc/app.py:2:    # todo: tidy"
    by_path = await run_grep(ws, pattern="export", glob="src/ui/*.ts")
    assert by_path == "src/ui/model.ts:1:export type Model = {}"
    assert await run_grep(ws, pattern=r"def \w+", path="src/app.py") == "src/app.py:1:def app():"


async def test_grep_skips_git_binary_and_outside_symlinks(ws: Path) -> None:
    text = await run_grep(ws, pattern="TODO|secret")
    assert ".git" not in text and "logo.bin" not in text and "secret" not in text and "leak" not in text


async def test_grep_reports_truncation(ws: Path) -> None:
    (ws / "many.txt").write_text("hit\n" * 50)
    text = await run_grep(ws, pattern="hit", path="many.txt", max_results=5)
    lines = text.splitlines()
    assert lines[:5] == [f"many.txt:{i}:hit" for i in range(1, 6)] and len(lines) == 6
    assert "results truncated at 5 matches" in lines[5]
    tree = await run_grep(ws, pattern=".", max_results=3)
    assert "results truncated at 3 matches" in tree


async def test_grep_errors_and_no_matches(ws: Path) -> None:
    tool = GrepTool()
    with pytest.raises(ToolError, match="not a valid Python regular expression"):
        await tool.run(tool.Args(pattern="(unclosed"), ctx(ws))
    with pytest.raises(PathEscapeError):
        await tool.run(tool.Args(pattern="x", path="../outside"), ctx(ws))
    assert await run_grep(ws, pattern="zebra") == "No matches for 'zebra' in the working directory."
