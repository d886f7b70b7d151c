"""What an approval (a project's MCP server) or a project's trust (its hooks) pins of a command: the content of
every project file the command names and the executable it resolves to.

An agent can write any file of the project. A server or hook approved as `python3 tools/srv.py` would run
whatever the agent put in `tools/srv.py` next; pinned, a changed file asks the user again, naming it. Project
files are pinned by their content (SHA-256); an executable outside the project (`/usr/bin/python3`) by its real
path, size and modification time — reading a 100 MB interpreter at every start would cost more than it says,
and no agent can write there.

Also here: the neutral working directory such processes start in (`neutral_dir`), so that `python -m mod`
and `npx pkg` resolve nothing from the project, and anchoring a project command's relative paths to the
project (`anchor_to_project`), so `python3 tools/srv.py` still finds its file from there.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

MAX_PINNED_BYTES = 64 * 1024 * 1024
"""A project file larger than this is pinned by its size and modification time, not read whole."""
_OPERATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "|&", ";;", "\n"})


def neutral_dir(project_dir: Path, home: Path | None = None) -> Path:
    """Where a hook or stdio MCP server starts when its config names no working directory: the user's home,
    unless that is the project or inside it (yeetui started in the home folder), then `/`. Neither can an
    agent write (its bash is confined to the project)."""
    root = Path(project_dir).resolve()
    folder = Path(home if home is not None else Path.home()).expanduser().resolve()
    if folder == root or root in folder.parents or not folder.is_dir():
        return Path("/")
    return folder


def _inside(path: Path, root: Path) -> Path | None:
    """`path` resolved, when it is an existing file inside `root`; else None."""
    try:
        real = path.resolve()
        return real if (real == root or root in real.parents) and real.is_file() else None
    except (OSError, RuntimeError):  # a word too long for a file name (a `python -c` program), a loop, …
        return None


def _candidates(word: str) -> list[str]:
    """The paths a command-line word may name: itself, and the value of `--flag=value`."""
    found = [word]
    if word.startswith("-") and "=" in word:
        found.append(word.split("=", 1)[1])
    return [w for w in found if w and not w.startswith("-")]


def _digest(path: Path) -> str:
    try:
        info = path.stat()
        if info.st_size > MAX_PINNED_BYTES:
            return f"large:{info.st_size}:{info.st_mtime_ns}"
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        return f"sha256:{digest.hexdigest()}:{info.st_size}"
    except OSError as exc:
        return f"unreadable:{exc.strerror or exc}"


def _executable(word: str, root: Path, cwd: Path, path: str | None) -> tuple[str, str] | None:
    """(label, digest) of the program `word` runs as; None when it resolves to nothing."""
    found = shutil.which(word, path=path) if "/" not in word else str(Path(cwd, word))
    if not found:
        return None
    try:
        real = Path(found).resolve()
        if real == root or root in real.parents:
            return real.relative_to(root).as_posix(), _digest(real)
        info = real.stat()
    except (OSError, RuntimeError) as exc:
        return f"executable {found}", f"unreadable:{getattr(exc, 'strerror', None) or exc}"
    return f"executable {real}", f"stat:{info.st_size}:{info.st_mtime_ns}"


def command_pins(argv: Sequence[str], project_dir: Path, *, cwd: Path | None = None, path: str | None = None,
                 programs: Sequence[str] | None = None) -> dict[str, str]:
    """Label → digest for `argv`: every word naming an existing file inside the project (as given, or relative
    to `cwd` or to the project root), keyed by its project-relative path, and the executable each of
    `programs` (default: `argv[0]`) resolves to on `path`."""
    root = Path(project_dir).resolve()
    here = Path(cwd) if cwd is not None else root
    pins: dict[str, str] = {}
    for program in (argv[:1] if programs is None else programs):
        if (pinned := _executable(program, root, here, path)) is not None:
            pins[pinned[0]] = pinned[1]
    for word in argv:
        for candidate in _candidates(word):
            named = Path(candidate).expanduser()
            for place in ([named] if named.is_absolute() else [here / named, root / named]):
                if (real := _inside(place, root)) is not None:
                    pins[real.relative_to(root).as_posix()] = _digest(real)
                    break
    return pins


def shell_words(command: str, env: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(every word, the words that run as programs) of a shell command line, with `$CLAUDE_PROJECT_DIR` and
    `${CLAUDE_PROJECT_DIR}` (the way Claude Code's docs name a project's hook scripts) expanded. A line that
    does not split as shell words is split on spaces."""
    project = env.get("CLAUDE_PROJECT_DIR", "")
    text = command.replace("${CLAUDE_PROJECT_DIR}", project).replace("$CLAUDE_PROJECT_DIR", project)
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        tokens = text.split()
    words = [t for t in tokens if t not in _OPERATORS]
    programs: list[str] = []
    starts = True
    for token in tokens:
        if token in _OPERATORS:
            starts = True
        elif starts and not ("=" in token and token.split("=", 1)[0].isidentifier()):  # `VAR=x cmd`: cmd
            programs.append(token)
            starts = False
    return words, programs


def changes(before: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """How pins differ, in words: `tools/srv.py (changed)`, `executable /usr/bin/node (changed)`, …"""
    return ([f"{p} (added)" for p in sorted(now.keys() - before.keys())]
            + [f"{p} (changed)" for p in sorted(now.keys() & before.keys()) if now[p] != before[p]]
            + [f"{p} (removed)" for p in sorted(before.keys() - now.keys())])


def anchor_to_project(argv: Sequence[str], project_dir: Path) -> list[str]:
    """A project-defined command's words that name a project file relative to the project root, made absolute:
    the command starts outside the project (`neutral_dir`), and `python3 tools/srv.py` in a project's
    `.mcp.json` means the project's `tools/srv.py`, as it does for the tool that reads that file."""
    root = Path(project_dir).resolve()
    out = []
    for word in argv:
        if word and not word.startswith(("-", "/", "~")) and _inside(root / word, root) is not None:
            out.append(os.fspath(root / word))
        else:
            out.append(word)
    return out


def shell_command_pins(command: str, project_dir: Path, *, path: str | None, cwd: Path | None = None
                       ) -> dict[str, str]:
    """`command_pins` of a shell command line (a hook's): the project files its words name and the executable
    each command in it resolves to."""
    words, programs = shell_words(command, {"CLAUDE_PROJECT_DIR": str(Path(project_dir).resolve())})
    return command_pins(words, project_dir, cwd=cwd, path=path, programs=programs) if words else {}
