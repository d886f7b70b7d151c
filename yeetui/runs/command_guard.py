"""What a specific `allow` pattern may let through without asking, beyond matching the pattern's text.

A pattern such as `git diff*` is written to mean "reading a diff", but `git diff --output=/any/path` writes
anywhere, `git difftool -x CMD` runs CMD and `git diff --no-index /dev/null ~/.ssh/id_rsa` reads any file.
So a command that a specific pattern (not `"*"`) would allow is checked here first; when this says no, the
user is asked instead.

- The command is looked up on PATH, never given by path (`./git`, `/tmp/x/git` are someone's script).
- `git`: no global options (`-c`, `-C`, `--git-dir`, `--exec-path`, a pager …), a read-only subcommand,
  and only the options listed for it below — an allowlist: an option git adds tomorrow is asked about.
- Every argument that could name a file (any word not an option, and an option's `=value`) must resolve —
  symlinks followed — inside the workspace: `ls /any/dir` or `git diff /dev/null ~/.ssh/id_rsa` (git turns
  to `--no-index` by itself for a path outside the work tree) read outside it, so they are asked about.
- Any other command (`ls*`, or a user's own `npm test*`) passes as the pattern says: which commands a
  pattern names is the rule writer's call; that each runs as written is this module's and shell_syntax's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

_DIFF_OPTIONS = frozenset({
    "--stat", "--numstat", "--shortstat", "--dirstat", "--name-only", "--name-status", "--summary", "--patch",
    "-p", "-u", "--raw", "--minimal", "--patience", "--histogram", "--color", "--no-color", "--color-words",
    "--color-moved", "--word-diff", "-w", "--ignore-all-space", "-b", "--ignore-space-change",
    "--ignore-blank-lines", "--ignore-cr-at-eol", "-M", "--find-renames", "--find-copies", "--no-renames",
    "--diff-filter", "-U", "--unified", "--full-index", "--abbrev", "--no-prefix", "--relative", "--cached",
    "--staged", "--merge-base", "--exit-code", "--quiet", "--check", "-R", "--function-context", "-W",
    "--no-ext-diff", "--no-textconv", "--compact-summary", "--patch-with-stat", "--indent-heuristic",
    "--text", "-a", "--binary", "-z",
})
_LOG_OPTIONS = _DIFF_OPTIONS | {
    "--oneline", "-n", "--max-count", "--since", "--until", "--after", "--before", "--author", "--committer",
    "--grep", "-i", "--regexp-ignore-case", "--all", "--graph", "--decorate", "--no-decorate", "--format",
    "--pretty", "--reverse", "--first-parent", "--no-merges", "--merges", "--follow", "-S", "-G", "--date",
    "--abbrev-commit", "--no-abbrev-commit", "--skip", "--left-right", "--cherry-pick", "--boundary",
    "--topo-order", "--date-order", "--branches", "--tags", "--remotes", "--no-patch", "-s", "--all-match",
    "--invert-grep", "--show-signature", "--source", "--simplify-by-decoration", "--ancestry-path",
}
_SHOW_OPTIONS = _LOG_OPTIONS
_STATUS_OPTIONS = frozenset({
    "-s", "--short", "-b", "--branch", "--porcelain", "--long", "-u", "--untracked-files", "--ignored", "-z",
    "--no-renames", "--renames", "--ahead-behind", "--no-ahead-behind", "--show-stash", "-v", "--verbose",
    "--column", "--no-column",
})
_BRANCH_OPTIONS = frozenset({  # listing only: no name to create, -d, -m …
    "--list", "-l", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--show-current", "--contains",
    "--no-contains", "--merged", "--no-merged", "--sort", "--format", "--color", "--no-color", "--points-at",
})
GIT_READ_ONLY: dict[str, frozenset[str]] = {
    "status": _STATUS_OPTIONS, "diff": _DIFF_OPTIONS, "log": _LOG_OPTIONS, "show": _SHOW_OPTIONS,
    "shortlog": _LOG_OPTIONS, "rev-parse": frozenset({"--abbrev-ref", "--short", "--verify", "--show-toplevel",
                                                      "--git-dir", "--is-inside-work-tree", "-q", "--quiet"}),
    "branch": _BRANCH_OPTIONS, "blame": frozenset({"-L", "-w", "-M", "-C", "-s", "-e", "--date", "-l", "-t"}),
}
"""git subcommands a specific allow pattern may run unasked, with the options each may carry."""
_GIT_SAFE_GLOBALS = frozenset({"--no-pager", "--no-optional-locks", "--literal-pathspecs"})
_VALUED_SHORT = re.compile(r"^-(?:[nUMC]\d*|\d+)$")
"""Short options that carry a number in the same word: `-n5`, `-U3`, `-M50`, `-5`."""
def auto_allow_refusal(argv: list[str], cwd: Path | None = None, roots: Sequence[Path] = ()) -> str | None:
    """Why `argv`, matched by a specific allow pattern, must still be asked about; None when it may run.
    With `cwd`, its path arguments must also lie inside `roots` (default: `cwd`)."""
    if not argv:
        return "an empty command"
    program = argv[0]
    if "/" in program:
        return f"{program!r} is given by path, not looked up on PATH"
    if program == "git" and (reason := _git_refusal(argv[1:])):
        return reason
    if cwd is not None:
        return _outside_refusal(argv[1:], cwd, tuple(roots) or (cwd,))
    return None


def _outside_refusal(args: list[str], cwd: Path, roots: tuple[Path, ...]) -> str | None:
    inside = [Path(os.path.realpath(root)) for root in roots]
    for arg in args:
        word = arg.partition("=")[2] if arg.startswith("-") else arg
        if not word:
            continue
        place = Path(os.path.realpath(cwd / os.path.expanduser(word)))
        if not any(place == root or root in place.parents for root in inside):
            return f"{word!r} is outside the workspace"
    return None


def _git_refusal(args: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] not in _GIT_SAFE_GLOBALS:
            return f"git option {args[i]!r} before the subcommand"
        i += 1
    if i == len(args):
        return None  # `git` alone prints help
    subcommand, rest = args[i], args[i + 1:]
    allowed = GIT_READ_ONLY.get(subcommand)
    if allowed is None:
        return f"`git {subcommand}` is not a read-only git command"
    if subcommand == "branch" and any(not a.startswith("-") for a in rest) and not _listing(rest):
        return "`git branch` with a name changes branches"
    for arg in rest:
        if arg == "--":
            break
        if arg.startswith("-") and not _option_allowed(arg, allowed):
            return f"`git {subcommand}` option {arg.split('=', 1)[0]!r} is not known to be read-only"
    return None


def _listing(args: list[str]) -> bool:
    """`git branch --list PATTERN`, `--contains REF` … : names after a listing option are patterns or refs."""
    return any(a in ("--list", "-l", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at")
               for a in args)


def _option_allowed(arg: str, allowed: frozenset[str]) -> bool:
    if arg.startswith("--"):
        return arg.split("=", 1)[0] in allowed
    if _VALUED_SHORT.match(arg) and (arg[1].isdigit() or f"-{arg[1]}" in allowed):
        return True
    return all(f"-{letter}" in allowed for letter in arg[1:])  # a cluster: -sb
