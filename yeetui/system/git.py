"""The one gateway every git call of yeetui goes through, hermetic against repositories that try to run code.

An agent with bash, or whoever packed the repository, can write `.git/config` and `.gitattributes`, and git
runs commands named there: hooks, fsmonitor, a pager, `diff.external`, the clean/smudge/process filters and
diff drivers (`textconv`, `command`) that attributes attach to paths, merge drivers, `gpg.program`, and — in a
nested repository or a submodule — everything of the same kinds in *its* config. So every call:

- reads no system or global config (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`): the user's identity,
  when a commit needs it, is read from their own config beforehand and passed in (`user_identity`);
- gets its settings as `GIT_CONFIG_COUNT` / `GIT_CONFIG_KEY_n` / `GIT_CONFIG_VALUE_n`, which git never splits
  at `=` (a filter named `x=y` escapes `-c filter.x=y.clean=`, not these);
- turns off hooks, fsmonitor, the pager, external diff, signing and every gpg program, editors, credential
  helpers, `ext::` remotes and replace refs, and never looks into submodules or nested repositories
  (`submodule.recurse=false`, `diff.ignoreSubmodules=all`; status and diff also say `--ignore-submodules=all`);
- first reads (never runs) the repository's config and blanks every filter, diff and merge driver it names —
  a driver with no command does nothing;
- runs with an environment that keeps no other `GIT_*` variable (`GIT_DIR`, `GIT_EXEC_PATH`,
  `GIT_EXTERNAL_DIFF` … would redirect what git reads or runs), identity ones aside.

A call that reads a tree an agent wrote (a review's diff, a builder's end-of-run commit, a merge) can also run
inside the OS sandbox (`Confine`): read-only but for the places it must write, so that a gap in the list above
would still be contained. A revision that comes from a model or a user (`/review REF`) goes through
`verified_revision` and after `--end-of-options`, so it is never read as an option.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from yeetui.system import sandbox

SETTINGS: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"), ("core.hooksPath", "/dev/null"), ("core.pager", "cat"), ("pager.diff", "false"),
    ("pager.log", "false"), ("pager.show", "false"), ("core.askPass", ""),
    ("credential.helper", ""), ("protocol.ext.allow", "never"), ("core.sshCommand", "false"),
    ("commit.gpgSign", "false"), ("tag.gpgSign", "false"), ("merge.verifySignatures", "false"),
    ("log.showSignature", "false"), ("gpg.program", "false"), ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"), ("gpg.ssh.program", "false"), ("gpg.ssh.defaultKeyCommand", "false"),
    ("core.editor", "true"), ("sequence.editor", "true"), ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"), ("status.submoduleSummary", "false"), ("fetch.recurseSubmodules", "false"),
    ("push.recurseSubmodules", "no"), ("core.alternateRefsCommand", ""), ("gc.auto", "0"),
    ("maintenance.auto", "false"), ("core.untrackedCache", "false"), ("core.splitIndex", "false"),
)
"""What every call of yeetui's git runs with (see the module docstring). No signing (`gpg.program` from the
repository's config would run), no editor (a merge or rebase yeetui starts never waits for one, and
`core.editor` from the repository would run), no automatic gc or maintenance (they run hooks and helpers)."""
_DRIVERS = r"^((filter|diff|merge)\..+\.(clean|smudge|process|command|textconv|driver)|diff\.external)$"
_BLANKED = {"filter": {"clean": "", "smudge": "", "process": ""}, "diff": {"command": "false", "textconv": "cat"},
            "merge": {"driver": "false"}}
"""What each driver becomes. A filter with no command does nothing. A config setting cannot be unset, and git
runs an empty diff command or textconv as "" (and fails): textconv becomes `cat` (the file as it is), a diff
command `false` (a diff that needs it fails, loudly). A merge driver cannot be blank either (git would take
the empty command's silence for a clean merge, keeping ours): `false` reports each path it names as a
conflict instead."""

_KEEP_GIT_ENV = frozenset({
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
})
FALLBACK_IDENTITY = {"user.name": "yeetui", "user.email": "yeetui@localhost"}


@dataclass(frozen=True)
class Confine:
    """Run the call inside the OS sandbox as well: it reads everything but writes only `writable` (nothing when
    empty). Without a working sandbox on this machine the call runs with the hermetic settings alone."""

    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    """Beyond the repository's own dirs, what the call reads (bubblewrap's private /tmp would hide it)."""


def scrubbed_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default os.environ) without GIT_* variables that could redirect git, plus no prompts."""
    source = os.environ if env is None else env
    clean = {k: v for k, v in source.items() if not k.startswith("GIT_") or k in _KEEP_GIT_ENV}
    clean["GIT_TERMINAL_PROMPT"] = "0"
    clean["GIT_OPTIONAL_LOCKS"] = "0"  # read-only commands must not take index.lock from a running agent
    return clean


def hermetic_env(env: Mapping[str, str] | None = None, settings: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """`scrubbed_env(env)` that reads no system or global config and carries `SETTINGS` plus `settings` as
    `GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` pairs (later ones win). Agents' allowlisted git gets this too."""
    clean = scrubbed_env(env)
    clean.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_SYSTEM=os.devnull, GIT_CONFIG_GLOBAL=os.devnull,
                 GIT_NO_REPLACE_OBJECTS="1", GIT_ATTR_NOSYSTEM="1")
    pairs = [*SETTINGS, *settings]
    for n, (key, value) in enumerate(pairs):
        clean[f"GIT_CONFIG_KEY_{n}"] = key
        clean[f"GIT_CONFIG_VALUE_{n}"] = value
    clean["GIT_CONFIG_COUNT"] = str(len(pairs))
    return clean


async def git(*args: str, cwd: str | os.PathLike[str], env: Mapping[str, str] | None = None,
              input: bytes | None = None, settings: Mapping[str, str] | None = None,
              confine: Confine | None = None) -> tuple[int, str, str]:
    """Run hermetic `git *args` in `cwd` (with extra config `settings`, e.g. an identity); return
    (returncode, stdout, stderr) decoded as UTF-8. `confine` also runs it inside the OS sandbox."""
    blanked = await blank_drivers(cwd, env)
    full_env = hermetic_env(env, [*blanked, *(settings or {}).items()])
    if confine is None:
        return await _run(["git", *args], cwd=cwd, env=full_env, input=input)
    mechanism = await asyncio.to_thread(sandbox.probe_sandbox)
    if mechanism is None:
        return await _run(["git", *args], cwd=cwd, env=full_env, input=input)
    reach = [*await _repository_dirs(cwd, env), *confine.readable]
    with _sandboxed(["git", *args], Path(cwd), reach, confine, mechanism, full_env) as argv:
        return await _run(argv, cwd=cwd, env=full_env, input=input)


async def blank_drivers(cwd: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Settings that empty every filter, diff and merge driver the repository's config names (reading config
    runs nothing; includes are followed, as git would)."""
    rc, out, _ = await _run(["git", "config", "--includes", "--null", "--get-regexp", _DRIVERS], cwd=cwd,
                            env=hermetic_env(env))
    if rc != 0:  # 1: none configured (or not a repository: the real call will say so)
        return []
    blanked: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for entry in filter(None, out.split("\0")):
        key = entry.split("\n", 1)[0]
        if key == "diff.external":  # cannot be unset, and an empty one is run as "": a diff that uses it fails
            blanked.append((key, "false"))
            continue
        section, _, rest = key.partition(".")
        name = rest.rpartition(".")[0]
        if (section, name) in seen or section not in _BLANKED:
            continue
        seen.add((section, name))
        blanked += [(f"{section}.{name}.{variable}", value) for variable, value in _BLANKED[section].items()]
        if section == "filter":
            blanked.append((f"filter.{name}.required", "false"))
    return blanked


async def user_identity(cwd: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`user.name` / `user.email` for a commit yeetui makes: the repository's own, else the user's (their global
    or system config, read here because yeetui's git reads neither), else yeetui's. Empty when the environment
    already names the author (`GIT_AUTHOR_EMAIL`)."""
    source = os.environ if env is None else env
    if source.get("GIT_AUTHOR_EMAIL"):
        return {}
    found: dict[str, str] = {}
    for key in ("user.name", "user.email"):  # the repository's own: reading config runs nothing
        rc, out, _ = await _run(["git", "config", "--get", key], cwd=cwd, env=hermetic_env(env))
        if rc == 0 and out.strip():
            found[key] = out.strip()
            continue
        for scope in ("--global", "--system"):  # reading the user's own config runs nothing
            rc, out, _ = await _run(["git", "config", scope, "--includes", "--get", key], cwd=cwd,
                                    env=scrubbed_env(env))
            if rc == 0 and out.strip():
                found[key] = out.strip()
                break
    if "user.email" not in found:
        return dict(FALLBACK_IDENTITY)
    found.setdefault("user.name", FALLBACK_IDENTITY["user.name"])
    return found


async def _repository_dirs(cwd: str | os.PathLike[str], env: Mapping[str, str] | None) -> list[Path]:
    """What a sandboxed call must see even where bubblewrap's private /tmp would hide it: `cwd`, its work tree,
    its own git dir and the common one (a worktree's lives in the main repository)."""
    rc, out, _ = await _run(["git", "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"],
                            cwd=cwd, env=hermetic_env(env))
    named = [Path(cwd), *(Path(cwd) / line for line in out.splitlines() if line.strip() and rc == 0)]
    unique: list[Path] = []
    for path in map(_real, named):
        if path not in unique and path.is_dir():
            unique.append(path)
    return unique


def _real(path: Path) -> Path:
    """A stat-only path resolution: too quick to be worth a thread."""
    return Path(os.path.realpath(path))


@contextlib.contextmanager
def _sandboxed(argv: list[str], cwd: Path, reach: list[Path], confine: Confine, mechanism: sandbox.Sandbox,
               env: dict[str, str]) -> Iterator[list[str]]:
    private = tempfile.mkdtemp(prefix="yeetui-git-")
    try:
        if mechanism == "landlock":
            env["TMPDIR"] = private
        if confine.writable:
            yield sandbox.wrap_confined(argv, cwd, writable=confine.writable, readable=reach, private_tmp=private,
                                        mechanism=mechanism)
        else:
            yield sandbox.wrap_readonly(argv, cwd, roots=reach, private_tmp=private, mechanism=mechanism)
    finally:
        shutil.rmtree(private, ignore_errors=True)


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


async def _run(argv: list[str], *, cwd: str | os.PathLike[str], env: Mapping[str, str],
               input: bytes | None = None) -> tuple[int, str, str]:
    """Run `argv` (git, or a sandbox wrapping git) with exactly `env`."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=os.fspath(cwd), env=dict(env),
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
    ValueError when `base` is not a revision (see `verified_revision`). The tree is an agent's: the call runs
    confined (read-only) and never looks into submodules or nested repositories.
    """
    args = ["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--ignore-submodules=all"]
    if base:
        try:
            args += ["--end-of-options", await verified_revision(cwd, base), "--"]
        except RuntimeError as exc:
            raise RuntimeError(f"git diff failed in {cwd}: {exc}") from None
    rc, out, err = await git(*args, cwd=cwd, confine=Confine())
    if rc != 0:
        first = next((line for line in err.splitlines() if line.strip()), f"exit code {rc}")
        raise RuntimeError(f"git diff failed in {cwd}: {first.strip()}")
    return out
