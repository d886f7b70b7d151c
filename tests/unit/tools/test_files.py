"""read_file, write_file, edit_file, list_dir against real files in a temp workspace."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from yeetui.errors import PathEscapeError, ToolError
from yeetui.tools.base import ToolContext, ToolSettings
from yeetui.tools.files import EditFileTool, ListDirTool, ReadFileTool, WriteFileTool
from yeetui.workspace import WorkspaceBinding


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n\n\ndef other():\n    return 1\n")
    (root / "notes.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    (tmp_path / "outside.txt").write_text("secret")
    return root


def ctx_for(root: Path, **binding: object) -> ToolContext:
    return ToolContext(binding=WorkspaceBinding(cwd=root, **binding))  # type: ignore[arg-type]


async def read(ctx: ToolContext, **kw: object) -> str:
    tool = ReadFileTool()
    out = await tool.run(tool.Args(**kw), ctx)
    assert not out.is_error
    return out.content


async def test_read_file_numbers_lines_like_cat_n(ws: Path) -> None:
    text = await read(ctx_for(ws), path="notes.txt")
    lines = text.splitlines()
    assert lines[0] == "     1\tline 1" and lines[-1] == "    10\tline 10" and len(lines) == 10


async def test_read_file_offset_and_limit_page_through(ws: Path) -> None:
    text = await read(ctx_for(ws), path="notes.txt", offset=4, limit=3)
    assert text.splitlines()[:3] == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert "continue with offset=7" in text
    last = await read(ctx_for(ws), path="notes.txt", offset=9)
    assert last.splitlines() == ["     9\tline 9", "    10\tline 10"]


async def test_read_file_past_the_end_and_empty_files(ws: Path) -> None:
    tool = ReadFileTool()
    with pytest.raises(ToolError, match="has 10 lines; offset 50 is past the end"):
        await tool.run(tool.Args(path="notes.txt", offset=50), ctx_for(ws))
    (ws / "empty.txt").write_text("")
    assert "is empty" in await read(ctx_for(ws), path="empty.txt")


async def test_read_file_caps_long_lines_and_total_size(ws: Path) -> None:
    (ws / "wide.txt").write_text("x" * 50_000 + "\nshort\n")
    text = await read(ctx_for(ws), path="wide.txt")
    first, second = text.splitlines()[:2]
    assert first.endswith("[line truncated]") and len(first) < 2100 and second == "     2\tshort"
    (ws / "big.txt").write_text("".join(f"row {i}\n" for i in range(5000)))
    ctx = ToolContext(binding=WorkspaceBinding(cwd=ws), settings=ToolSettings(read_cap=1000))
    capped = await read(ctx, path="big.txt")
    assert len(capped) < 1300 and "1000-byte cap; continue with offset=" in capped


async def test_read_file_refuses_binary_directories_missing_and_escapes(ws: Path) -> None:
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    tool = ReadFileTool()
    ctx = ctx_for(ws)
    with pytest.raises(ToolError, match=r"img\.png is a binary file"):
        await tool.run(tool.Args(path="img.png"), ctx)
    with pytest.raises(ToolError, match="src is a directory; use list_dir"):
        await tool.run(tool.Args(path="src"), ctx)
    with pytest.raises(ToolError, match="No such file"):
        await tool.run(tool.Args(path="missing.txt"), ctx)
    with pytest.raises(PathEscapeError):
        await tool.run(tool.Args(path="../outside.txt"), ctx)


async def test_write_file_creates_overwrites_and_makes_dirs(ws: Path) -> None:
    tool = WriteFileTool()
    ctx = ctx_for(ws)
    out = await tool.run(tool.Args(path="pkg/sub/mod.py", content="a = 1\nb = 2\n"), ctx)
    assert out.content == "Created pkg/sub/mod.py (2 lines, 12 bytes)." and out.data == {
        "path": "pkg/sub/mod.py", "created": True, "original": None}
    assert (ws / "pkg" / "sub" / "mod.py").read_text() == "a = 1\nb = 2\n"
    before = (ws / "notes.txt").read_text()
    out = await tool.run(tool.Args(path="notes.txt", content="short"), ctx)
    assert out.content.startswith("Overwrote notes.txt") and (ws / "notes.txt").read_text() == "short"
    assert out.data is not None and out.data["original"] is None  # nobody reads it: not read
    hooked = dataclasses.replace(ctx, for_hooks=True)  # a PostToolUse hook reads it as `originalFile`
    out = await tool.run(tool.Args(path="notes.txt", content="shorter"), hooked)
    assert out.data is not None and out.data["original"] == "short" and before != "short"


async def test_write_file_refuses_read_only_protected_and_outside(ws: Path) -> None:
    tool = WriteFileTool()
    with pytest.raises(ToolError, match="read-only"):
        await tool.run(tool.Args(path="new.txt", content="x"), ctx_for(ws, allow_writes=False))
    with pytest.raises(PathEscapeError, match="protected"):
        await tool.run(tool.Args(path=".git/hooks/post-checkout", content="x"), ctx_for(ws))
    with pytest.raises(PathEscapeError, match="outside the workspace"):
        await tool.run(tool.Args(path="../evil.txt", content="x"), ctx_for(ws))
    assert not (ws / "new.txt").exists() and not (ws / ".git").exists()
    assert not (ws.parent / "evil.txt").exists()


async def test_edit_file_replaces_one_exact_match(ws: Path) -> None:
    tool = EditFileTool()
    out = await tool.run(tool.Args(path="src/app.py", old_string="def main():\n    return 1",
                                   new_string="def main():\n    return 2"), ctx_for(ws))
    assert out.content.startswith("Replaced 1 occurrence in src/app.py. Now at line 1:")
    assert "return 2" in out.content
    assert (ws / "src" / "app.py").read_text().count("return 1") == 1


async def test_edit_file_errors_tell_the_model_what_to_do(ws: Path) -> None:
    tool = EditFileTool()
    ctx = ctx_for(ws)
    before = (ws / "src" / "app.py").read_text()
    with pytest.raises(ToolError, match=r"occurs 2 times .* set replace_all to true"):
        await tool.run(tool.Args(path="src/app.py", old_string="return 1", new_string="return 3"), ctx)
    with pytest.raises(ToolError, match=r"was not found in src/app\.py\. Read the file again"):
        await tool.run(tool.Args(path="src/app.py", old_string="return 9", new_string="x"), ctx)
    with pytest.raises(ToolError, match="identical"):
        await tool.run(tool.Args(path="src/app.py", old_string="x", new_string="x"), ctx)
    with pytest.raises(ToolError, match="use write_file"):
        await tool.run(tool.Args(path="src/app.py", old_string="", new_string="x"), ctx)
    assert (ws / "src" / "app.py").read_text() == before


async def test_edit_file_replace_all_and_crlf_files(ws: Path) -> None:
    tool = EditFileTool()
    ctx = ctx_for(ws)
    out = await tool.run(tool.Args(path="src/app.py", old_string="return 1", new_string="return 0",
                                   replace_all=True), ctx)
    assert out.content.startswith("Replaced 2 occurrences") and out.data is not None
    assert (out.data["path"], out.data["replacements"]) == ("src/app.py", 2)
    assert out.data["original"].count("return 1") == 2  # the file as it was (a hook's originalFile)
    (ws / "win.txt").write_bytes(b"alpha\r\nbeta\r\n")
    await tool.run(tool.Args(path="win.txt", old_string="alpha\nbeta", new_string="one\ntwo"), ctx)
    assert (ws / "win.txt").read_bytes() == b"one\r\ntwo\r\n"


async def test_edit_file_refuses_read_only_binary_and_non_utf8(ws: Path) -> None:
    tool = EditFileTool()
    with pytest.raises(ToolError, match="read-only"):
        await tool.run(tool.Args(path="src/app.py", old_string="main", new_string="start"),
                       ctx_for(ws, allow_writes=False))
    assert "main" in (ws / "src" / "app.py").read_text()
    (ws / "blob.bin").write_bytes(b"ab\0cd")
    with pytest.raises(ToolError, match="binary"):
        await tool.run(tool.Args(path="blob.bin", old_string="ab", new_string="x"), ctx_for(ws))
    (ws / "latin.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(ToolError, match="not valid UTF-8"):
        await tool.run(tool.Args(path="latin.txt", old_string="caf", new_string="x"), ctx_for(ws))


async def test_list_dir_shows_dirs_files_and_symlinks(ws: Path) -> None:
    (ws / "link").symlink_to("notes.txt")
    tool = ListDirTool()
    out = await tool.run(tool.Args(), ctx_for(ws))
    assert out.content.splitlines() == ["./ (3 entries)", "link -> notes.txt", "notes.txt", "src/"]
    sub = await tool.run(tool.Args(path="src"), ctx_for(ws))
    assert sub.content.splitlines() == ["src/ (1 entry)", "app.py"]


async def test_list_dir_errors(ws: Path) -> None:
    tool = ListDirTool()
    with pytest.raises(ToolError, match="not a directory; use read_file"):
        await tool.run(tool.Args(path="notes.txt"), ctx_for(ws))
    with pytest.raises(PathEscapeError):
        await tool.run(tool.Args(path=".."), ctx_for(ws))
    (ws / "empty").mkdir()
    assert (await tool.run(tool.Args(path="empty"), ctx_for(ws))).content == "empty/ is empty."
