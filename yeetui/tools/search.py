"""Search tools: `glob` (find files by name pattern) and `grep` (search contents with a Python regex).

Both walk with `os.fwalk` from a confined directory descriptor: symlinked directories are not entered,
symlinked files are not read, and `.git` is skipped, so a walk never leaves the workspace.

A model's pattern may backtrack for ever (`(a|aa)+$` on a line of a's). grep therefore matches with the
`regex` engine, which releases the GIL while it matches (the event loop keeps running: typing, Esc,
timeouts) and stops a search after a time budget; a cancelled call stops at the next line.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import regex
from pydantic import Field

from yeetui.errors import ToolError
from yeetui.system import safepath
from yeetui.text import one_line
from yeetui.tools.base import Tool, ToolContext, ToolOutput
from yeetui.tools.files import StrictArgs, is_binary

SKIP_DIRS = frozenset({".git"})
GLOB_MAX = 1000
GREP_FILE_MAX = 10_000_000
"""Files larger than this are skipped by grep."""
GREP_LINE_CHARS = 500
GREP_SECONDS = 20.0
"""Time one grep call may spend matching, in all."""
GREP_LINE_SECONDS = 1.0
"""Time one line may take; also how soon a cancelled grep's thread stops."""


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob (`*`, `?`, `[...]`, `{a,b}`, `**` for any depth) into a full-match regex."""
    return re.compile(f"(?s:{_translate(pattern)})\\Z")


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (end := pattern.find("]", i + 2 if pattern[i + 1: i + 2] in "!^" else i + 1)) > 0:
            body = pattern[i + 1: end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif c == "{" and (end := pattern.find("}", i)) > 0:
            alternatives = pattern[i + 1: end].split(",")
            out.append("(?:" + "|".join(_translate(a) for a in alternatives) + ")")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _walk(dir_fd: int) -> Iterator[tuple[PurePosixPath, list[str], int]]:
    """Yield (relative dir, sorted file names, dir fd) for every directory below `dir_fd`, skipping .git."""
    for top, dirs, files, fd in os.fwalk(".", dir_fd=dir_fd, follow_symlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        yield PurePosixPath(top), sorted(files), fd


def _open_search_root(ctx: ToolContext, path: str) -> tuple[int, Path, bool]:
    """Open `path` for searching; returns (fd, real path, is_directory)."""
    fd, real = safepath.open_for_read(ctx.binding, path)
    mode = os.fstat(fd).st_mode
    return fd, real, stat.S_ISDIR(mode)


def _where(shown: str) -> str:
    return "the working directory" if shown == "." else shown


# ---------------------------------------------------------------------------------------------- glob


class GlobArgs(StrictArgs):
    pattern: str = Field(description="Glob such as `**/*.py` or `src/*.{ts,tsx}`; `**` matches any depth.")
    path: str = Field(".", description="Directory to search, relative to the working directory.")


class GlobTool(Tool):
    name = "glob"
    description = ("Find files whose path (relative to `path`) matches a glob pattern. `*` stays within one "
                   "directory; `**/` spans any number. `.git` is skipped.")
    Args = GlobArgs
    parallel_safe = True

    def activity(self, args: dict[str, Any]) -> str:
        return f"globbing {one_line(args.get('pattern', ''))}"

    async def run(self, args: GlobArgs, ctx: ToolContext) -> ToolOutput:
        return await asyncio.to_thread(self._glob, args, ctx)

    def _glob(self, args: GlobArgs, ctx: ToolContext) -> ToolOutput:
        pattern = args.pattern.removeprefix("./")
        if not pattern or pattern.startswith("/"):
            raise ToolError("glob: the pattern must be relative (like `**/*.py`); set `path` to search "
                            "another directory.")
        regex = glob_regex(pattern)
        fd, real, is_dir = _open_search_root(ctx, args.path)
        try:
            if not is_dir:
                raise ToolError(f"glob: {safepath.display_path(ctx.binding, real)} is not a directory.")
            matches = [
                (top / name).as_posix()
                for top, files, _ in _walk(fd)
                for name in files
                if regex.fullmatch((top / name).as_posix())
            ]
        finally:
            os.close(fd)
        base = safepath.display_path(ctx.binding, real)
        if not matches:
            return ToolOutput(content=f"No files match {args.pattern!r} in {_where(base)}.")
        shown = [safepath.display_path(ctx.binding, real / m) for m in sorted(matches)[:GLOB_MAX]]
        if len(matches) > GLOB_MAX:
            shown.append(f"[{len(matches) - GLOB_MAX} more matches not shown; use a narrower pattern]")
        return ToolOutput(content="\n".join(shown))


# ---------------------------------------------------------------------------------------------- grep


class _Searcher:
    """One grep call's matching: the pattern, what is left of its time budget, and its stop signal."""

    def __init__(self, pattern: Any, text: str, stop: threading.Event, deadline: float) -> None:
        self.pattern = pattern
        self.text = text
        self.stop = stop
        self.deadline = deadline

    def __call__(self, line: str) -> bool:
        if self.stop.is_set():
            raise ToolError("grep was stopped.")
        left = self.deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return self.pattern.search(line, timeout=min(left, GREP_LINE_SECONDS), concurrent=True) is not None
        except TimeoutError:
            raise ToolError(f"grep: {self.text!r} takes too long to match (over {GREP_LINE_SECONDS:g} s on one "
                            f"line or {GREP_SECONDS:g} s in all: a pattern that backtracks, like (a|aa)+$); "
                            "simplify it or narrow the path.") from None


class GrepArgs(StrictArgs):
    pattern: str = Field(description="Python regular expression searched for in each line.")
    path: str = Field(".", description="File or directory to search, relative to the working directory.")
    glob: str | None = Field(None, description="Only search files matching this glob (`*.py`, "
                             "`src/**/*.ts`); a glob without `/` matches file names at any depth.")
    ignore_case: bool = Field(False, description="Match case-insensitively.")
    max_results: int = Field(200, ge=1, le=5000, description="Stop after this many matching lines.")


class GrepTool(Tool):
    name = "grep"
    description = ("Search file contents with a Python regular expression; prints `path:line:text` per "
                   "matching line. Binary files and `.git` are skipped.")
    Args = GrepArgs
    parallel_safe = True

    def activity(self, args: dict[str, Any]) -> str:
        return f'searching "{one_line(args.get("pattern", ""))}"'

    async def run(self, args: GrepArgs, ctx: ToolContext) -> ToolOutput:
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._grep, args, ctx, stop)
        finally:
            stop.set()  # cancelled: the thread stops at its next line instead of searching on

    def _grep(self, args: GrepArgs, ctx: ToolContext, stop: threading.Event | None = None) -> ToolOutput:
        try:
            pattern = regex.compile(args.pattern, regex.IGNORECASE if args.ignore_case else 0)
        except regex.error as exc:
            raise ToolError(f"grep: {args.pattern!r} is not a valid Python regular expression: {exc}."
                            ) from exc
        search = _Searcher(pattern, args.pattern, stop or threading.Event(), time.monotonic() + GREP_SECONDS)
        name_filter = glob_regex(args.glob.removeprefix("./")) if args.glob else None
        by_name = bool(args.glob) and "/" not in (args.glob or "")
        fd, real, is_dir = _open_search_root(ctx, args.path)
        results: list[str] = []
        truncated = False
        try:
            if not is_dir:
                self._search(fd, safepath.display_path(ctx.binding, real), search, results, args.max_results)
                truncated = len(results) > args.max_results
            else:
                for top, files, dfd in _walk(fd):
                    for name in files:
                        rel = (top / name).as_posix()
                        if name_filter and not name_filter.fullmatch(name if by_name else rel):
                            continue
                        shown = safepath.display_path(ctx.binding, real / rel)
                        if self._search_at(dfd, name, shown, search, results, args.max_results):
                            truncated = True
                            break
                    if truncated:
                        break
        finally:
            os.close(fd)
        base = safepath.display_path(ctx.binding, real)
        if not results:
            return ToolOutput(content=f"No matches for {args.pattern!r} in {_where(base)}.")
        text = "\n".join(results[: args.max_results])
        if truncated or len(results) > args.max_results:
            text += (f"\n[results truncated at {args.max_results} matches; narrow the pattern, path or glob, "
                     "or raise max_results]")
        return ToolOutput(content=text)

    def _search_at(self, dir_fd: int, name: str, shown: str, search: _Searcher, results: list[str],
                   limit: int) -> bool:
        """Search one file in `dir_fd` (never following a symlink); True once over `limit`."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError:
            return False  # a symlink, a vanished file, or unreadable: grep skips it
        try:
            self._search(fd, shown, search, results, limit)
        finally:
            os.close(fd)
        return len(results) > limit

    @staticmethod
    def _search(fd: int, shown: str, search: _Searcher, results: list[str], limit: int) -> None:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > GREP_FILE_MAX:
            return
        data = os.pread(fd, info.st_size + 1, 0) if info.st_size else b""
        if is_binary(data):
            return
        for lineno, line in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
            if search(line):
                line = line.removesuffix("\r")
                if len(line) > GREP_LINE_CHARS:
                    line = line[:GREP_LINE_CHARS] + " …"
                results.append(f"{shown}:{lineno}:{line}")
                if len(results) > limit:
                    return
