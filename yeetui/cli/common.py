"""What every CLI command shares: exit codes, error lines, logging, opening the application surface.

Errors become one readable line on stderr (and a JSON line with `--json`) and a non-zero exit code."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from yeetui import paths
from yeetui.cli.exit_codes import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK
from yeetui.errors import YeetuiError
from yeetui.text import terminal_safe

if TYPE_CHECKING:
    from yeetui.application.runs import Budget
    from yeetui.application.surface import FrontEnd, Surface
    from yeetui.application.trust import Trusted
    from yeetui.store import Store

COMMAND_WRITE_WAIT = 10.0
"""Seconds a command's own writes wait for another process's write lock before it says the store is busy: someone
waits on the command (a run's writes wait longer, `yeetui.store.db.WRITE_WAIT`: failing them would end the run)."""


Command = Callable[[argparse.Namespace], Awaitable[int]]


class TerminalSafeStream:
    """Wraps a terminal stream so that text written to it (model output, transcripts, profile descriptions
    from cloned repositories) cannot carry escape sequences to the user's terminal."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(terminal_safe(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_terminal() -> None:
    """Wrap stdout and stderr in `TerminalSafeStream` when they are terminals (pipes get the text as is)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, TerminalSafeStream) and stream.isatty():
            setattr(sys, name, TerminalSafeStream(stream))


def run_command(handler: Command, args: argparse.Namespace) -> int:
    """Run one command's coroutine; a YeetuiError becomes a one-line message and exit code 1."""
    setup_logging()
    guard_terminal()
    try:
        code = asyncio.run(_guarded(handler, args))
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        return EXIT_CANCELLED
    except BrokenPipeError:  # `yeetui agents list | head`: the reader has gone; that is no error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush fails quietly too
        return EXIT_OK


async def _guarded(handler: Command, args: argparse.Namespace) -> int:
    try:
        return await handler(args)
    except YeetuiError as exc:
        error(args, str(exc))
        return EXIT_FAILED


def error(args: argparse.Namespace, message: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps({"type": "error", "message": message}), flush=True)
    print(f"yeetui: {message}", file=sys.stderr, flush=True)


class _LogFile(logging.FileHandler):
    """The log file. A record the disk will not take (it is full) is dropped, not reported with a traceback on
    the terminal: what failed for want of space says so itself, where the user reads it."""

    def handleError(self, record: logging.LogRecord) -> None:
        if not isinstance(sys.exc_info()[1], OSError):
            super().handleError(record)


def setup_logging() -> None:
    """Log to the data dir, through the key-redacting filter. Nothing is logged to the terminal."""
    from yeetui.redact import RedactingFilter  # on use: ~15 ms (`yeetui` alone sets up after its first frame)

    path = paths.log_path()
    try:
        paths.private_dir(path.parent)
        if not path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        handler: logging.Handler = _LogFile(path, encoding="utf-8")
    except OSError:
        handler = logging.NullHandler()
    handler.addFilter(RedactingFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    for noisy in ("httpx", "httpx2", "httpcore", "LiteLLM", "litellm", "anthropic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


async def open_surface(args: argparse.Namespace, front_end: FrontEnd | None = None) -> Surface:
    """The application surface for a command in the current directory; its warnings go to stderr (or the JSON
    stream)."""
    from yeetui.application.surface import Surface  # on use: `yeetui` alone must start the TUI without the domain

    if getattr(args, "trust", False):  # --trust: as `yeetui trust` would, before its files are read
        from yeetui.application.trust import trust_project

        project = paths.find_project_root(Path.cwd())
        trusted = await asyncio.to_thread(trust_project, project)
        if getattr(args, "json", False):
            print(json.dumps({"type": "notice", "level": "info", "text": f"trusted {project}",
                              "grants": trusted.granted, "was_trusted": trusted.already,
                              "changed": list(trusted.changed)}), flush=True)
        else:
            say_trusted(project, trusted, file=sys.stderr)
    surface = await Surface.open(cwd=Path.cwd(), front_end=front_end)
    if getattr(args, "json", False):  # a script gets every one, every time
        for warning in surface.warnings:
            print(json.dumps({"type": "notice", "level": "warning", "text": warning}), flush=True)
        return surface
    fresh, known = await asyncio.to_thread(not_said_before, surface.project_dir, surface.warnings)
    for warning in fresh:
        print(f"yeetui: warning: {warning}", file=sys.stderr, flush=True)
    if known:
        print(f"yeetui: {known} warning{'s' if known > 1 else ''} about this project said before "
              f"{'are' if known > 1 else 'is'} not repeated (`--json` lists every one).", file=sys.stderr, flush=True)
    return surface


async def open_store() -> Store:
    """The store for a command that lists or acts on runs (`yeetui.application.agents.open_store`, the whole file
    checked), its writes waiting `COMMAND_WRITE_WAIT` for another process's lock."""
    from yeetui.application.agents import open_store as open_checked  # imported on use, like Surface

    return await open_checked(write_wait=COMMAND_WRITE_WAIT, verify=True)


SAID_LIMIT = 2000
"""Warnings remembered as said, across projects (the oldest are forgotten first)."""


def not_said_before(project: Path, warnings: Sequence[str]) -> tuple[list[str], int]:
    """The warnings not yet said to this user for this project, and how many were; the new ones are remembered
    (by digest, in the data dir), so a terminal hears a load warning once, not on every command."""
    record = paths.data_dir() / "said-warnings.json"
    try:
        said: list[str] = json.loads(record.read_text(encoding="utf-8"))
        said = [s for s in said if isinstance(s, str)] if isinstance(said, list) else []
    except (OSError, ValueError):
        said = []
    seen = set(said)
    fresh, known = [], 0
    for warning in dict.fromkeys(warnings):
        digest = hashlib.sha256(f"{project}\0{warning}".encode()).hexdigest()[:32]
        if digest in seen:
            known += 1
        else:
            fresh.append(warning)
            said.append(digest)
    if fresh:
        with contextlib.suppress(OSError):
            paths.replace_private(record, json.dumps(said[-SAID_LIMIT:]))
    return fresh, known


def say_trusted(project: Path, trusted: Trusted, *, file: TextIO | None = None) -> None:
    if trusted.changed:
        print(f"Its config and agent files changed since you trusted it: {', '.join(trusted.changed)}.", file=file)
    print(f"Trusted {project}." + (" (It already was.)" if trusted.already else ""), file=file)
    granted = trusted.granted
    if granted:
        print("Its files now take effect as written:", file=file)
        for line in granted:
            print(f"  - {line}", file=file)
    else:
        print("Its files ask for nothing beyond what an untrusted project gets.", file=file)
    for line in trusted.beside:
        print(f"  - {line}", file=file)


def table(header: Sequence[str], rows: Sequence[Sequence[str]], *, right: frozenset[int] = frozenset()) -> str:
    """Rows in columns as wide as their widest cell (a long label pushes its column, never the next one); the
    last column is left free. Columns in `right` are right-aligned (times, amounts)."""
    widths = [max(len(str(cells[i])) for cells in (header, *rows)) for i in range(len(header) - 1)]

    def line(cells: Sequence[str]) -> str:
        parts = [str(c).rjust(w) if i in right else str(c).ljust(w)
                 for i, (c, w) in enumerate(zip(cells[:-1], widths, strict=True))]
        return "  ".join([*parts, str(cells[-1])]).rstrip()

    return "\n".join(line(cells) for cells in (header, *rows))


def budget_of(args: argparse.Namespace) -> Budget | None:
    """The budget of `--max-cost`, `--max-tokens`, `--max-turns`, `--max-minutes` (None: none given)."""
    from yeetui.application.runs import command_budget  # on use: `yeetui` alone logs through this module

    return command_budget(max_cost=getattr(args, "max_cost", None), max_tokens=getattr(args, "max_tokens", None),
                          max_turns=getattr(args, "max_turns", None), max_minutes=getattr(args, "max_minutes", None))
