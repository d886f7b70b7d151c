"""Running git for yeetui itself, hardened against repositories that try to run code.

An agent with bash can write `.git/config` or `.gitattributes`, so every call disables hooks and
fsmonitor, and `diff` refuses external diff drivers and textconv. The environment loses every `GIT_*`
variable except identity ones: `GIT_DIR`, `GIT_CONFIG_*`, `GIT_EXEC_PATH`, `GIT_SSH_COMMAND`,
`GIT_EXTERNAL_DIFF` and friends could otherwise redirect what git reads or runs. Clean/smudge filters
named in a repository's own config can still run on `git status`/`add`; callers that operate on
untrusted worktrees should keep to read-only commands.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping

HARDENING = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "protocol.ext.allow=never")

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
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", *HARDENING, *args, cwd=os.fspath(cwd), env=scrubbed_env(env),
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

    Raises RuntimeError with git's own message when git fails (not a repository, unknown revision).
    """
    args = ["diff", "--no-ext-diff", "--no-textconv", "--no-color"]
    if base:
        args += [base, "--"]
    rc, out, err = await git(*args, cwd=cwd)
    if rc != 0:
        first = next((line for line in err.splitlines() if line.strip()), f"exit code {rc}")
        raise RuntimeError(f"git diff failed in {cwd}: {first.strip()}")
    return out
