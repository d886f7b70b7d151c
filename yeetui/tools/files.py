"""File tools: `read_file`, `write_file`, `edit_file`, `list_dir` — all confined by `system.safepath`."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field

from yeetui.errors import ToolError
from yeetui.system import safepath
from yeetui.text import one_line
from yeetui.tools.base import Tool, ToolContext, ToolOutput

DEFAULT_LINES = 2000
LINE_CHARS = 2000
"""Characters of one line `read_file` shows; longer lines are cut with a note."""
LIST_MAX = 1000
EDIT_MAX_BYTES = 10_000_000
_SNIFF = 8192


class StrictArgs(BaseModel):
    """Argument models reject unknown fields so a misspelt argument is reported, not silently ignored.
    Their validators are built at the first call of the tool, not when yeetui starts (`defer_build`)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


def is_binary(head: bytes) -> bool:
    """Text files have no NUL bytes in their first few KiB (the heuristic git and grep use)."""
    return b"\0" in head[:_SNIFF]


def _shown(ctx: ToolContext, real: Path) -> str:
    return safepath.display_path(ctx.binding, real)


def _lines(fh: BinaryIO, max_bytes: int) -> Iterator[tuple[bytes, bool]]:
    """Yield (line without newline, cut) reading at most `max_bytes` of any one line into memory."""
    while True:
        chunk = fh.readline(max_bytes + 1)
        if not chunk:
            return
        if chunk.endswith(b"\n") or len(chunk) <= max_bytes:
            yield chunk.removesuffix(b"\n").removesuffix(b"\r"), False
            continue
        while (rest := fh.readline(65536)) and not rest.endswith(b"\n"):
            pass  # skip the rest of an overlong line without holding it in memory
        yield chunk[:max_bytes], True


# ---------------------------------------------------------------------------------------------- read


class ReadFileArgs(StrictArgs):
    path: str = Field(description="File to read, relative to the working directory.")
    offset: int | None = Field(None, ge=1, description="First line to show (1-based). Default 1.")
    limit: int | None = Field(None, ge=1, description=f"Number of lines to show. Default {DEFAULT_LINES}.")


class ReadFileTool(Tool):
    name = "read_file"
    description = ("Read a text file. Lines are numbered like `cat -n` (the numbers are not part of the "
                   "file). Use offset and limit to page through long files.")
    Args = ReadFileArgs
    parallel_safe = True

    def activity(self, args: dict[str, Any]) -> str:
        return f"reading {one_line(args.get('path', ''))}"

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolOutput:
        return await asyncio.to_thread(self._read, args, ctx)

    def _read(self, args: ReadFileArgs, ctx: ToolContext) -> ToolOutput:
        fd, real = safepath.open_for_read(ctx.binding, args.path)
        shown = _shown(ctx, real)
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            if stat.S_ISDIR(mode):
                raise ToolError(f"{shown} is a directory; use list_dir to see its entries.")
            raise ToolError(f"{shown} is not a regular file (a device, FIFO or socket); cannot read it.")
        with os.fdopen(fd, "rb") as fh:
            if is_binary(fh.read(_SNIFF)):
                raise ToolError(f"{shown} is a binary file; read_file only shows text files.")
            fh.seek(0)
            return self._format(fh, shown, args, ctx.settings.read_cap)

    @staticmethod
    def _format(fh: BinaryIO, shown: str, args: ReadFileArgs, read_cap: int) -> ToolOutput:
        start = args.offset or 1
        limit = args.limit or DEFAULT_LINES
        out: list[str] = []
        used = 0
        lineno = 0
        stopped = ""
        for lineno, (raw, cut) in enumerate(_lines(fh, LINE_CHARS * 4), 1):
            if lineno < start:
                continue
            if len(out) >= limit:
                stopped = f"continue with offset={lineno}"
                break
            text = raw.decode("utf-8", "replace")
            if cut or len(text) > LINE_CHARS:
                text = text[:LINE_CHARS] + " … [line truncated]"
            used += len(text) + 8
            if used > read_cap:
                stopped = f"output reached the {read_cap}-byte cap; continue with offset={lineno}"
                break
            out.append(f"{lineno:>6}\t{text}")
        if lineno == 0:
            return ToolOutput(content=f"({shown} is empty)", data={"text": "", "start_line": 1, "num_lines": 0})
        if not out:
            raise ToolError(f"{shown} has {lineno} lines; offset {start} is past the end of the file.")
        body = "\n".join(out)
        if stopped:
            first = start
            body += f"\n(Showing lines {first}-{first + len(out) - 1} of {shown}; {stopped}.)"
        # What was read, as read (a hook's `tool_response`; yeetui.hooks.shapes), without the line numbers; to
        # the end, a final newline counts as one more (empty) line, as Claude Code's Read counts it.
        lines = [line.split("\t", 1)[1] for line in out]
        total: int | None = None
        if not stopped:
            fh.seek(-1, os.SEEK_END)
            lines += [""] if fh.read(1) == b"\n" else []
            total = lineno + len(lines) - len(out)
        return ToolOutput(content=body, data={"text": "\n".join(lines), "start_line": start, "num_lines": len(lines),
                                              "total_lines": total})


# ---------------------------------------------------------------------------------------------- write


class WriteFileArgs(StrictArgs):
    path: str = Field(description="File to create or overwrite, relative to the working directory.")
    content: str = Field(description="The complete new content of the file.")


class WriteFileTool(Tool):
    name = "write_file"
    description = ("Create a file or overwrite it completely with `content`. Missing parent directories are "
                   "created. To change part of an existing file, prefer edit_file.")
    Args = WriteFileArgs
    writes = True

    def activity(self, args: dict[str, Any]) -> str:
        return f"writing {one_line(args.get('path', ''))}"

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolOutput:
        return await asyncio.to_thread(self._write, args, ctx)

    def _write(self, args: WriteFileArgs, ctx: ToolContext) -> ToolOutput:
        existed = os.path.lexists(safepath.resolve_inside(ctx.binding, args.path))
        original = _previous_text(ctx, args.path) if existed and ctx.for_hooks else None
        data = args.content.encode("utf-8")
        fd, real = safepath.open_for_write(ctx.binding, args.path, create=True)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        shown = _shown(ctx, real)
        lines = args.content.count("\n") + (1 if args.content and not args.content.endswith("\n") else 0)
        verb = "Overwrote" if existed else "Created"
        return ToolOutput(content=f"{verb} {shown} ({lines} lines, {len(data)} bytes).",
                          data={"path": shown, "created": not existed, "original": original})


def _previous_text(ctx: ToolContext, path: str) -> str | None:
    """A file's text before it is overwritten (a hook's `originalFile`): None when it cannot be read as
    UTF-8 text of at most `EDIT_MAX_BYTES`, or is not a regular file."""
    try:
        fd, _ = safepath.open_for_read(ctx.binding, path)
    except (ToolError, OSError):
        return None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > EDIT_MAX_BYTES:
            return None
        data = fh.read(EDIT_MAX_BYTES + 1)
    if is_binary(data):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


# ---------------------------------------------------------------------------------------------- edit


class EditFileArgs(StrictArgs):
    path: str = Field(description="File to edit, relative to the working directory.")
    old_string: str = Field(description="Exact text to replace, including whitespace and indentation.")
    new_string: str = Field(description="Replacement text.")
    replace_all: bool = Field(False, description="Replace every occurrence instead of exactly one.")


class EditFileTool(Tool):
    name = "edit_file"
    description = ("Replace an exact string in a file. old_string must match the file exactly (whitespace "
                   "included) and occur once, unless replace_all is true. Read the file first.")
    Args = EditFileArgs
    writes = True

    def activity(self, args: dict[str, Any]) -> str:
        return f"editing {one_line(args.get('path', ''))}"

    async def run(self, args: EditFileArgs, ctx: ToolContext) -> ToolOutput:
        return await asyncio.to_thread(self._edit, args, ctx)

    def _edit(self, args: EditFileArgs, ctx: ToolContext) -> ToolOutput:
        if not args.old_string:
            raise ToolError("edit_file: old_string is empty. To create or overwrite a file use write_file.")
        if args.old_string == args.new_string:
            raise ToolError("edit_file: old_string and new_string are identical; there is nothing to change.")
        safepath.check_writable(ctx.binding, safepath.locate(ctx.binding, args.path))
        text, shown = self._load(args.path, ctx)
        old, new = args.old_string, args.new_string
        if old not in text and "\r\n" in text and old.replace("\n", "\r\n") in text:
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")  # the model dropped the CRs
        count = text.count(old)
        if count == 0:
            raise ToolError(f"edit_file: old_string was not found in {shown}. Read the file again and copy "
                            "the exact text, including whitespace and indentation.")
        if count > 1 and not args.replace_all:
            raise ToolError(f"edit_file: old_string occurs {count} times in {shown}. Include more "
                            "surrounding lines to make it unique, or set replace_all to true to replace "
                            "every occurrence.")
        first_line = text[: text.index(old)].count("\n") + 1
        updated = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
        fd, _ = safepath.open_for_write(ctx.binding, args.path, create=False)
        with os.fdopen(fd, "wb") as fh:
            fh.write(updated.encode("utf-8"))
        done = count if args.replace_all else 1
        noun = "occurrence" if done == 1 else "occurrences"
        snippet = _snippet(updated, first_line, new.count("\n") + 1)
        return ToolOutput(content=f"Replaced {done} {noun} in {shown}. Now at line {first_line}:\n{snippet}",
                          data={"path": shown, "replacements": done, "original": text})

    @staticmethod
    def _load(path: str, ctx: ToolContext) -> tuple[str, str]:
        fd, real = safepath.open_for_read(ctx.binding, path)
        shown = _shown(ctx, real)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise ToolError(f"edit_file: {shown} is not a regular file.")
        with os.fdopen(fd, "rb") as fh:
            if info.st_size > EDIT_MAX_BYTES:
                raise ToolError(f"edit_file: {shown} is {info.st_size} bytes, over the {EDIT_MAX_BYTES}-byte "
                                "limit; edit it with bash instead.")
            data = fh.read()
        if is_binary(data):
            raise ToolError(f"edit_file: {shown} is a binary file; edit_file only edits text files.")
        try:
            return data.decode("utf-8"), shown
        except UnicodeDecodeError as exc:
            raise ToolError(f"edit_file: {shown} is not valid UTF-8 (byte {exc.start}); edit_file only edits "
                            "UTF-8 text.") from exc


def _snippet(text: str, first_line: int, span: int, context: int = 2) -> str:
    lines = text.split("\n")
    lo = max(first_line - 1 - context, 0)
    hi = min(first_line - 1 + span + context, len(lines))
    return "\n".join(f"{n:>6}\t{lines[n - 1][:LINE_CHARS]}" for n in range(lo + 1, hi + 1))


# ---------------------------------------------------------------------------------------------- list


class ListDirArgs(StrictArgs):
    path: str = Field(".", description="Directory to list, relative to the working directory.")


class ListDirTool(Tool):
    name = "list_dir"
    description = "List a directory's entries: directories end with `/`, symlinks show their target."
    Args = ListDirArgs
    parallel_safe = True

    def activity(self, args: dict[str, Any]) -> str:
        return f"listing {one_line(args.get('path', '.'))}"

    async def run(self, args: ListDirArgs, ctx: ToolContext) -> ToolOutput:
        return await asyncio.to_thread(self._list, args, ctx)

    def _list(self, args: ListDirArgs, ctx: ToolContext) -> ToolOutput:
        fd, real = safepath.open_for_read(ctx.binding, args.path)
        shown = _shown(ctx, real)
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                raise ToolError(f"list_dir: {shown} is not a directory; use read_file for files.")
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
            rows = []
            for entry in entries[:LIST_MAX]:
                if entry.is_symlink():
                    rows.append(f"{entry.name} -> {os.readlink(entry.name, dir_fd=fd)}")
                elif entry.is_dir(follow_symlinks=False):
                    rows.append(entry.name + "/")
                else:
                    rows.append(entry.name)
        finally:
            os.close(fd)
        if not entries:
            return ToolOutput(content=f"{shown}/ is empty.")
        header = f"{shown}/ ({len(entries)} {'entry' if len(entries) == 1 else 'entries'})"
        if len(entries) > LIST_MAX:
            rows.append(f"[{len(entries) - LIST_MAX} more entries not shown; use glob to narrow the listing]")
        return ToolOutput(content=header + "\n" + "\n".join(rows))
