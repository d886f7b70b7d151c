"""What one configured MCP server is, whichever tool's file defined it, and how its variables expand."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from yeetui.redact import is_secret_name

Transport = Literal["stdio", "http", "sse"]
Scope = Literal["user", "local", "project"]
"""`user`: the user's own config, for every project; `local`: the user's own config, for this project only
(Claude Code's `projects` entries in `~/.claude.json`); `project`: a file inside the project, which arrives with
whatever the user cloned — never started without the user's approval of that exact server."""

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""A server name usable in tool names (`mcp__{server}__{tool}`)."""


class MissingVariable(ValueError):
    """A `${VAR}` with no default names a variable that is not set."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@dataclass(frozen=True)
class ServerSpec:
    """One MCP server as a config file defines it, its variables expanded."""

    name: str
    transport: Transport
    scope: Scope
    source: str
    """Which tool's file, in words: `Claude Code .mcp.json`."""
    path: Path
    """The file it came from."""
    command: tuple[str, ...] = ()
    """stdio: the program and its arguments, resolved (never shown: an argument may hold an expanded secret)."""
    command_as_written: tuple[str, ...] = ()
    """The same before expansion (`--token=${GITHUB_TOKEN}`): what is shown."""
    env: Mapping[str, str] = field(default_factory=dict)
    """stdio: variables set for the server (their values may be secrets: never shown)."""
    env_as_written: Mapping[str, str] = field(default_factory=dict)
    """The same before expansion (`${GITHUB_TOKEN}`): what the approval is keyed on, so a rotated token does not
    ask again while an edited value does."""
    cwd: str | None = None
    """stdio: the working directory its config names; None: it starts outside the project
    (`yeetui.settings.pins.neutral_dir`)."""
    cwd_as_written: str | None = None
    url: str | None = None
    """http / sse: where the server listens (never shown: a query may hold an expanded secret)."""
    url_as_written: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    headers_as_written: Mapping[str, str] = field(default_factory=dict)
    enabled: bool = True
    read_only: bool = False
    """The user marked it read-only: read-only profiles may use it."""
    include_tools: tuple[str, ...] | None = None
    """Only these of its tools are taken (Gemini's `includeTools`); None: all."""
    exclude_tools: tuple[str, ...] = ()
    """These of its tools are never taken (Gemini's `excludeTools`)."""
    pins: Mapping[str, str] = field(default_factory=dict)
    """A project's server, once approved: the project files its command names and the executable it resolves
    to, as they were approved (`yeetui.settings.pins`); a start checks them again."""
    unconfined: bool = False
    """A project's server the user's own config lets run outside the OS sandbox (`project_grants`)."""

    @property
    def needs_consent(self) -> bool:
        return self.scope == "project"

    @property
    def origin(self) -> str:
        """Which file defines it, and whose that is: `Claude Code .mcp.json (the project's file)`."""
        whose = {"user": "your own config", "local": "your own config, for this project",
                 "project": "the project's file"}[self.scope]
        return f"{self.source} ({whose})"

    @property
    def target(self) -> str:
        """The command line or URL as its file writes it (with its `${…}` references), as shown to the user:
        nothing shown expands a secret."""
        if self.transport == "stdio":
            return " ".join(_quoted(part) for part in (self.command_as_written or self.command))
        return f"{self.url_as_written or self.url} ({self.transport})"

    def references(self) -> list[str]:
        """The variables its file's values name (`${VAR}`, `$VAR`, `{env:VAR}`, `${env:VAR}`), in the command,
        URL, working directory, env and headers — and those Codex passes through by name."""
        texts = [*(self.command_as_written or ()), self.url_as_written or "", self.cwd_as_written or "",
                 *self.env_as_written.values(), *self.headers_as_written.values()]
        return sorted({name for text in texts for match in _REFERENCE.finditer(text)
                       for name in match.groups() if name})

    def secret_references(self) -> list[str]:
        """The variables it names that hold a provider key or look like a secret (`*KEY*`, `*TOKEN*`,
        `*SECRET*`, `*PASSWORD*`)."""
        return [name for name in self.references() if is_secret_name(name)]

    def fingerprint(self, project_dir: Path) -> str:
        """What an approval is keyed on: the project, the name, the resolved argv or URL, the working dir, and
        the env and header entries as written in the file. Any edit of those asks again; so does a same-named
        server in another project."""
        material = {
            "project": str(Path(project_dir).resolve()), "name": self.name, "transport": self.transport,
            "command": list(self.command), "url": self.url, "cwd": self.cwd,
            "env": dict(sorted(self.env_as_written.items())), "headers": dict(sorted(self.headers_as_written.items())),
        }
        return hashlib.sha256(json.dumps(material, sort_keys=True).encode("utf-8", "surrogateescape")).hexdigest()


_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)|\$([A-Za-z_][A-Za-z0-9_]*)|\{env:\s*([^}\s]+)\s*\}")


def _quoted(part: str) -> str:
    return part if part and not re.search(r"[\s'\"\\$`]", part) else json.dumps(part)


# -- variable expansion, per tool ----------------------------------------------------------------------------

_DOLLAR_BRACE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_dollar_brace(text: str, env: Mapping[str, str]) -> str:
    """Claude Code's (and yeetui's) `${VAR}` and `${VAR:-default}`; an unset variable without a default is an
    error, as in Claude Code."""
    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise MissingVariable(name)
    return _DOLLAR_BRACE.sub(one, text)


_GEMINI = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def expand_gemini(text: str, env: Mapping[str, str]) -> str:
    """Gemini CLI's `$VAR` and `${VAR}`: an unset variable is left as written, as Gemini does."""
    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return env.get(name, match.group(0))
    return _GEMINI.sub(one, text)


_CURSOR = re.compile(r"\$\{(env:([A-Za-z_][A-Za-z0-9_]*)|userHome|workspaceFolder|workspaceFolderBasename|"
                     r"pathSeparator|/)\}")


def cursor_expander(home: Path, project_dir: Path) -> Callable[[str, Mapping[str, str]], str]:
    """Cursor's `${env:NAME}`, `${userHome}`, `${workspaceFolder}`, `${workspaceFolderBasename}` and
    `${pathSeparator}` (`${/}`); an unset variable is an error."""
    def expand(text: str, env: Mapping[str, str]) -> str:
        def one(match: re.Match[str]) -> str:
            word, name = match.group(1), match.group(2)
            if name is not None:
                if name not in env:
                    raise MissingVariable(name)
                return env[name]
            return {"userHome": str(home), "workspaceFolder": str(project_dir),
                    "workspaceFolderBasename": project_dir.name, "pathSeparator": "/", "/": "/"}[word]
        return _CURSOR.sub(one, text)
    return expand


_VSCODE_INPUT = re.compile(r"\$\{input:([^}]*)\}")


def vscode_expander(home: Path, project_dir: Path) -> Callable[[str, Mapping[str, str]], str]:
    """VS Code's variables, as Cursor's (`${env:NAME}`, `${workspaceFolder}`, `${userHome}` …); an `${input:…}`
    (a value VS Code asks for in a prompt, and keeps) cannot be asked for here and is an error saying so."""
    cursor = cursor_expander(home, project_dir)

    def expand(text: str, env: Mapping[str, str]) -> str:
        if asked := _VSCODE_INPUT.search(text):
            raise ValueError(f"${{input:{asked.group(1)}}} is a value VS Code asks you for, which yeetui cannot; "
                             "put it in a variable and write ${env:NAME}")
        return cursor(text, env)
    return expand


_OPENCODE = re.compile(r"\{(env|file):([^}]+)\}")


class FileReferenceRefused(ValueError):
    """`{file:…}` in a project's file: not read (it would put any file the user can read into a server's
    environment or a request header)."""


def opencode_expander(config_dir: Path, *, files_allowed: bool) -> Callable[[str, Mapping[str, str]], str]:
    """OpenCode's `{env:VAR}` (empty when unset, as OpenCode does) and `{file:path}` (relative to the config
    file, `~` for home) — the latter only in the user's own files."""
    def expand(text: str, env: Mapping[str, str]) -> str:
        def one(match: re.Match[str]) -> str:
            kind, what = match.group(1), match.group(2).strip()
            if kind == "env":
                return env.get(what, "")
            if not files_allowed:
                raise FileReferenceRefused(what)
            path = Path(what).expanduser()
            path = path if path.is_absolute() else config_dir / path
            try:
                return path.read_text(encoding="utf-8")[:65_536].strip()
            except OSError as exc:
                raise ValueError(f"cannot read {{file:{what}}}: {exc.strerror or exc}") from None
        return _OPENCODE.sub(one, text)
    return expand


def no_expansion(text: str, env: Mapping[str, str]) -> str:
    """Codex expands nothing in its config."""
    return text
