"""Running git for yeetui itself, hardened against repositories that try to run code.

An agent with bash, or whoever packed the repository, can write `.git/config` and `.gitattributes`, and git
runs commands named there: hooks, fsmonitor, a pager, `diff.external`, and the clean/smudge/process
filters and diff drivers (`textconv`, `command`) that attributes attach to paths. So every call disables
hooks, fsmonitor, the pager and `diff.external`, and first reads (never runs) the repository's config to
blank every filter, diff and merge driver it names — a driver with no command does nothing. `diff` also passes
`--no-ext-diff --no-textconv`. The environment loses every `GIT_*` variable except identity ones:
`GIT_DIR`, `GIT_CONFIG_*`, `GIT_EXEC_PATH`, `GIT_SSH_COMMAND`, `GIT_EXTERNAL_DIFF` and friends could
otherwise redirect what git reads or runs. A revision that comes from a model or a user (`/review REF`)
goes through `verified_revision` and after `--end-of-options`, so it is never read as an option.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping

HARDENING = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "protocol.ext.allow=never",
             "-c", "core.pager=cat", "-c", "diff.external=", "-c", "core.askPass=", "-c", "credential.helper=",
             "-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false", "-c", "core.editor=true",
             "-c", "sequence.editor=true")
"""Also: no signing (`gpg.program` from the repository's config would run), no editor (a merge or rebase
yeetui starts never waits for one, and `core.editor` from the repository would run)."""
_DRIVERS = r"^(filter|diff|merge)\..+\.(clean|smudge|process|command|textconv|driver)$"
_BLANKED = {"filter": ("clean", "smudge", "process"), "diff": ("command", "textconv"), "merge": ("driver",)}
_BLANK_VALUE = {"merge": "false"}
"""A merge driver cannot be blank (git would take the empty command's silence for a clean merge, keeping
ours): it becomes `false`, so each path it names is reported as a conflict instead."""

_KEEP_GIT_ENV = frozenset({
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
})


def scrubbed_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default os.environ) without GIT_* variables that could redirect git, plus no prompts."""
    source = os.environ if env is None else env
    clean = {k: v for k, v in source.items() if not k.startswith("GIT_") or k in _KEEP_GIT_ENV}
    clean["GIT_TERMINAL_PROMPT"] = "0"
    clean["GIT_OPTIONAL_LOCKS"] = "0"  # read-only commands must not take index.lock from a running agent
    return clean


async def git(*args: str, cwd: str | os.PathLike[str], env: Mapping[str, str] | None = None,
              input: bytes | None = None) -> tuple[int, str, str]:
    """Run `git <hardening> *args` in `cwd`; return (returncode, stdout, stderr) decoded as UTF-8."""
    blanked = await _blank_drivers(cwd, env)
    return await _run([*HARDENING, *blanked, *args], cwd=cwd, env=env, input=input)


async def _blank_drivers(cwd: str | os.PathLike[str], env: Mapping[str, str] | None) -> list[str]:
    """`-c` options that empty every filter and diff driver the config names (reading config runs nothing)."""
    rc, out, _ = await _run([*HARDENING, "config", "--null", "--get-regexp", _DRIVERS], cwd=cwd, env=env)
    if rc != 0:  # 1: none configured (or not a repository: the real call will say so)
        return []
    blanked: list[str] = []
    seen: set[tuple[str, str]] = set()
    for entry in filter(None, out.split("\0")):
        key = entry.split("\n", 1)[0]
        section, _, rest = key.partition(".")
        name = rest.rpartition(".")[0]
        if (section, name) in seen or section not in _BLANKED:
            continue
        seen.add((section, name))
        for variable in _BLANKED[section]:
            blanked += ["-c", f"{section}.{name}.{variable}={_BLANK_VALUE.get(section, '')}"]
        if section == "filter":
            blanked += ["-c", f"filter.{name}.required=false"]
    return blanked


async def verified_revision(cwd: str | os.PathLike[str], target: str) -> str:
    """`target` when it names commits (`main`, `HEAD~1`, `a...b`, `a..b`); else ValueError saying why
    (RuntimeError with git's message when git itself fails, e.g. outside a repository). Never passed where
    git could read it as an option: refused when it starts with `-`, and checked after `--end-of-options`."""
    if not target or target != target.strip() or any(ord(c) < 32 for c in target):
        raise ValueError(f"{target!r} is not a revision (empty, or with blanks or control characters).")
    separator = "..." if "..." in target else ".." if ".." in target else None
    sides = target.split(separator, 1) if separator else [target]
    if not any(sides):
        raise ValueError(f"{target!r} is not a revision range.")
    for side in filter(None, sides):
        if side.startswith("-"):
            raise ValueError(f"{target!r} is not a revision: {side!r} starts with '-'.")
        rc, _, err = await git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{side}^{{commit}}", cwd=cwd)
        if rc != 0 and err.strip():  # not a repository, or git itself failed: git's own words
            raise RuntimeError(err.strip().splitlines()[0])
        if rc != 0:
            raise ValueError(f"{side!r} does not name a commit in this repository.")
    return target


async def _run(argv: list[str], *, cwd: str | os.PathLike[str], env: Mapping[str, str] | None,
               input: bytes | None = None) -> tuple[int, str, str]:
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", *argv, cwd=os.fspath(cwd), env=scrubbed_env(env),
            stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"git is not installed or not on PATH (needed in {cwd}).") from exc
    try:
        out, err = await proc.communicate(input)
    except asyncio.CancelledError:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    return proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


async def diff(cwd: str | os.PathLike[str], base: str | None = None) -> str:
    """`git diff` text: the working tree against the index, or against `base` (`a...b` ranges work).

    Raises RuntimeError with git's own message when git fails (not a repository, unknown revision), and
    ValueError when `base` is not a revision (see `verified_revision`).
    """
    args = ["diff", "--no-ext-diff", "--no-textconv", "--no-color"]
    if base:
        try:
            args += ["--end-of-options", await verified_revision(cwd, base), "--"]
        except RuntimeError as exc:
            raise RuntimeError(f"git diff failed in {cwd}: {exc}") from None
    rc, out, err = await git(*args, cwd=cwd)
    if rc != 0:
        first = next((line for line in err.splitlines() if line.strip()), f"exit code {rc}")
        raise RuntimeError(f"git diff failed in {cwd}: {first.strip()}")
    return out
