"""Where the user's MCP servers are already configured, read as each tool reads its own files.

Claude Code (`.mcp.json`; user and local scopes in `~/.claude.json`), OpenCode (`opencode.json[c]`,
`.opencode/opencode.json[c]`, its user config; key `mcp`), Cursor (`.cursor/mcp.json`, `~/.cursor/mcp.json`),
Codex (`[mcp_servers.NAME]` in `config.toml`), Gemini CLI (`settings.json` `mcpServers`), VS Code
(`.vscode/mcp.json` and the user's `Code/User/mcp.json`; key `servers`), Zed (`.zed/settings.json` and its user
settings; key `context_servers`), Windsurf (`~/.codeium/windsurf/mcp_config.json`), Claude Desktop
(`claude_desktop_config.json`) and yeetui's own `config.yaml` (`mcp_servers`). Nothing here is rewritten or
needs rewriting.

Every file is hostile input: a file that does not parse, an entry of the wrong shape, a variable that is not
set — each becomes a problem naming the file and the server, and the other servers still count. When two files
define the same name, the more specific wins (yeetui's own files first, then a project-local scope, then the
project's files, then the user's), as Claude Code orders local > project > user; the other is listed as
shadowed.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from yeetui.mcp.servers import (
    NAME_RE,
    FileReferenceRefused,
    MissingVariable,
    Scope,
    ServerSpec,
    Transport,
    cursor_expander,
    expand_dollar_brace,
    expand_gemini,
    no_expansion,
    opencode_expander,
    vscode_expander,
)
from yeetui.settings.pins import anchor_to_project
from yeetui.yamlfile import MAX_FILE_BYTES, DocumentError, parse_yaml

CLAUDE_USER_FILE_LIMIT = 64 * 1024 * 1024
"""`~/.claude.json` also holds Claude Code's history and grows large; other files are capped at
`MAX_FILE_BYTES` like every config yeetui reads."""

Expand = Callable[[str, Mapping[str, str]], str]


@dataclass
class Discovered:
    """The servers in effect (one per name), those a more specific file shadows, and what could not be read."""

    servers: list[ServerSpec] = field(default_factory=list)
    shadowed: list[tuple[ServerSpec, ServerSpec]] = field(default_factory=list)
    """(the hidden one, the one in effect)."""
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> ServerSpec | None:
        return next((s for s in self.servers if s.name == name), None)


@dataclass(frozen=True)
class _Source:
    """One file that may define servers, and how to read it."""

    path: Path
    label: str
    """Which tool's file, in words: `Claude Code .mcp.json`."""
    scope: Scope
    parse: Callable[[str, Path], Any]
    entries: Callable[[Any, Path], Iterator[tuple[Any, Any]]]
    make: Callable[[str, Any, _Source], ServerSpec]
    limit: int = MAX_FILE_BYTES


def discover(project_dir: Path, *, home: Path, env: Mapping[str, str], config_dir: Path) -> Discovered:
    """Every MCP server the user's files define for `project_dir`."""
    project = Path(project_dir).resolve()
    found = Discovered()
    by_name: dict[str, ServerSpec] = {}
    for source in _sources(project, home, env, config_dir):
        if not source.path.is_file():
            continue
        try:
            entries = list(source.entries(source.parse(_read_capped(source), source.path), project))
        except ValueError as exc:
            found.problems.append(f"{source.path}: {exc}")
            continue
        for name, raw in entries:
            where = f"{source.path}: server {name!r}"
            if not isinstance(name, str) or not NAME_RE.match(name):
                found.problems.append(f"{where}: a name of letters, digits, '.', '_' and '-' (at most 64) is needed")
                continue
            try:
                spec = source.make(name, raw, source)
            except MissingVariable as exc:
                found.problems.append(f"{where}: the variable {exc.name} is not set (and has no default)")
                continue
            except FileReferenceRefused as exc:
                found.problems.append(f"{where}: {{file:{exc}}} is not read from a project's file; "
                                      "put the server in your own config to use it")
                continue
            except ValueError as exc:
                found.problems.append(f"{where}: {exc}")
                continue
            if name in by_name:
                found.shadowed.append((spec, by_name[name]))
                continue
            if spec.scope == "project" and spec.transport == "stdio" and spec.cwd is None:
                spec = replace(spec, command=tuple(anchor_to_project(spec.command, project)))
            by_name[name] = spec
            found.servers.append(spec)
    return found


def _read_capped(source: _Source) -> str:
    try:
        with source.path.open("rb") as handle:
            raw = handle.read(source.limit + 1)
    except OSError as exc:
        raise ValueError(f"cannot read it: {exc.strerror or exc}") from None
    if len(raw) > source.limit:
        raise ValueError(f"larger than {source.limit:,} bytes; not read")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None


# -- parsing -------------------------------------------------------------------------------------------------


def _json(text: str, path: Path, *, comments: bool = False) -> Any:
    """Strict JSON, or (`comments`) JSON with comments and trailing commas, as OpenCode, Cursor and Gemini
    accept."""
    if comments:
        import json5  # on use: only when such a file exists

        loads: Callable[[str], Any] = json5.loads
    else:
        loads = json.loads
    try:
        return loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _jsonc(text: str, path: Path) -> Any:
    return _json(text, path, comments=True)


def _toml(text: str, path: Path) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML ({exc})") from None


def _yaml(text: str, path: Path) -> Any:
    try:
        return parse_yaml(text, path)[0]
    except DocumentError as exc:
        raise ValueError(str(exc).removeprefix(f"{path}: ").removeprefix(f"{path}, ")) from None


def _key(name: str) -> Callable[[Any, Path], Iterator[tuple[Any, Any]]]:
    """The entries under top-level `name` (none when the file has no such key)."""
    def entries(data: Any, project: Path) -> Iterator[tuple[Any, Any]]:
        if data is None:
            return
        if not isinstance(data, dict):
            raise ValueError("the file is not a mapping at the top")
        servers = data.get(name)
        if servers is None:
            return
        if not isinstance(servers, dict):
            raise ValueError(f"{name!r} must map server names to servers, not be a {type(servers).__name__}")
        yield from servers.items()
    return entries


def _claude_local(data: Any, project: Path) -> Iterator[tuple[Any, Any]]:
    """Claude Code's local scope: `projects[<this project's path>].mcpServers` in `~/.claude.json`."""
    if not isinstance(data, dict) or not isinstance(data.get("projects"), dict):
        return
    entry = data["projects"].get(str(project))
    if isinstance(entry, dict):
        yield from _key("mcpServers")(entry, project)


# -- entries -------------------------------------------------------------------------------------------------


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be text, not {type(value).__name__}")
    return value


def _texts(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what} must be a list of text")
    return list(value)


def _mapping(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{what} must map names to text")
    out = {}
    for key, item in value.items():
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise ValueError(f"{what}[{key!r}] must be text")
        out[key] = str(item)
    return out


def _build(name: str, source: _Source, expand: Expand, env: Mapping[str, str], *, transport: Transport,
           command: list[str], env_vars: Mapping[str, str], cwd: str | None, url: str | None,
           headers: Mapping[str, str], enabled: bool = True, read_only: bool = False) -> ServerSpec:
    def x(text: str) -> str:
        return expand(text, env)

    if transport == "stdio":
        if not command or not command[0].strip():
            raise ValueError("a stdio server needs a command")
        if url:
            raise ValueError("both a command and a url: say which it is")
    elif not url:
        raise ValueError(f"a {transport} server needs a url")
    resolved_url = x(url) if url else None
    if resolved_url is not None and not resolved_url.startswith(("http://", "https://")):
        raise ValueError(f"the url must start with http:// or https:// (it is {resolved_url[:80]!r})")
    return ServerSpec(
        name=name, transport=transport, scope=source.scope, source=source.label, path=source.path,
        command=tuple(x(part) for part in command), command_as_written=tuple(command),
        env={k: x(v) for k, v in env_vars.items()}, env_as_written=dict(env_vars), cwd=x(cwd) if cwd else None,
        cwd_as_written=cwd or None, url=resolved_url, url_as_written=url or None,
        headers={k: x(v) for k, v in headers.items()}, headers_as_written=dict(headers), enabled=enabled,
        read_only=read_only)


def _flag(value: Any, what: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"{what} must be true or false")
    return value


def _json_shaped(name: str, raw: Any, source: _Source, env: Mapping[str, str], expand: Expand,
                 **extra: bool) -> ServerSpec:
    """`{type?, command, args, env, cwd?}` or `{type?, url, headers}`: Claude Code's and Cursor's shape."""
    if not isinstance(raw, dict):
        raise ValueError(f"must be a mapping, not {type(raw).__name__}")
    kind = raw.get("type")
    if kind is not None and kind not in ("stdio", "http", "sse", "streamable-http"):
        raise ValueError(f"unknown type {kind!r} (stdio, http or sse)")
    has_url = raw.get("url") is not None
    transport: Transport = ("stdio" if kind == "stdio" or (kind is None and not has_url)
                            else "sse" if kind == "sse" else "http")
    return _build(name, source, expand, env, transport=transport,
                  command=([_text(raw["command"], "command")] if raw.get("command") is not None else [])
                  + _texts(raw.get("args"), "args"),
                  env_vars=_mapping(raw.get("env"), "env"),
                  cwd=_text(raw["cwd"], "cwd") if raw.get("cwd") is not None else None,
                  url=_text(raw["url"], "url") if has_url else None,
                  headers=_mapping(raw.get("headers"), "headers"), **extra)


def _claude_server(env: Mapping[str, str]) -> Callable[[str, Any, _Source], ServerSpec]:
    def make(name: str, raw: Any, source: _Source) -> ServerSpec:
        return _json_shaped(name, raw, source, env, expand_dollar_brace)
    return make


def _json_shaped_server(env: Mapping[str, str], expand: Expand) -> Callable[[str, Any, _Source], ServerSpec]:
    def make(name: str, raw: Any, source: _Source) -> ServerSpec:
        return _json_shaped(name, raw, source, env, expand)
    return make


def _yeetui_server(env: Mapping[str, str]) -> Callable[[str, Any, _Source], ServerSpec]:
    """yeetui's own entries: Claude Code's shape, `command` also as a list, plus `read_only` and `enabled`."""
    def make(name: str, raw: Any, source: _Source) -> ServerSpec:
        if isinstance(raw, dict) and isinstance(raw.get("command"), list):
            argv = _texts(raw["command"], "command")
            raw = {**raw, "command": argv[0] if argv else "", "args": argv[1:] + _texts(raw.get("args"), "args")}
        known = {"type", "command", "args", "env", "cwd", "url", "headers", "read_only", "enabled"}
        if isinstance(raw, dict) and (unknown := sorted(set(raw) - known)):
            raise ValueError(f"unknown key(s) {', '.join(map(repr, unknown))} (known: {', '.join(sorted(known))})")
        return _json_shaped(name, raw, source, env, expand_dollar_brace,
                            read_only=_flag(raw.get("read_only"), "read_only", False),
                            enabled=_flag(raw.get("enabled"), "enabled", True))
    return make


def _opencode_server(env: Mapping[str, str], config_dir: Path, *,
                     files_allowed: bool) -> Callable[[str, Any, _Source], ServerSpec]:
    """`{type: local, command: [argv], environment, enabled}` or `{type: remote, url, headers, enabled}`."""
    expand = opencode_expander(config_dir, files_allowed=files_allowed)

    def make(name: str, raw: Any, source: _Source) -> ServerSpec:
        if not isinstance(raw, dict):
            raise ValueError(f"must be a mapping, not {type(raw).__name__}")
        enabled = _flag(raw.get("enabled"), "enabled", True)
        if raw.get("type") == "local":
            return _build(name, source, expand, env, transport="stdio", command=_texts(raw.get("command"), "command"),
                          env_vars=_mapping(raw.get("environment"), "environment"), cwd=None, url=None, headers={},
                          enabled=enabled)
        if raw.get("type") == "remote":
            return _build(name, source, expand, env, transport="http", command=[], env_vars={}, cwd=None,
                          url=_text(raw.get("url"), "url"), headers=_mapping(raw.get("headers"), "headers"),
                          enabled=enabled)
        raise ValueError(f"type must be 'local' or 'remote', not {raw.get('type')!r}")
    return make


def _codex_server(env: Mapping[str, str]) -> Callable[[str, Any, _Source], ServerSpec]:
    """`command`, `args`, `env`, `env_vars` (passed through from yeetui's environment), `cwd`; or `url`,
    `bearer_token_env_var`, `http_headers`, `env_http_headers`; `enabled`, and `enabled_tools` /
    `disabled_tools` (only those tools, never these). Codex expands nothing written in its file: only the
    variables it names are read."""
    def make(name: str, raw: Any, source: _Source) -> ServerSpec:
        spec = _codex_transport(name, raw, source)
        enabled_tools = raw.get("enabled_tools")
        return replace(spec, include_tools=tuple(_texts(enabled_tools, "enabled_tools"))
                       if enabled_tools is not None else None,
                       exclude_tools=tuple(_texts(raw.get("disabled_tools"), "disabled_tools")))

    def _codex_transport(name: str, raw: Any, source: _Source) -> ServerSpec:
        if not isinstance(raw, dict):
            raise ValueError(f"must be a table, not {type(raw).__name__}")
        enabled = _flag(raw.get("enabled"), "enabled", True)
        passed: dict[str, str] = {}  # as written (the variable's name) → the value now
        if raw.get("url") is not None:
            headers = _mapping(raw.get("http_headers"), "http_headers")
            named = _mapping(raw.get("env_http_headers"), "env_http_headers")
            if raw.get("bearer_token_env_var") is not None:
                named["Authorization"] = _text(raw["bearer_token_env_var"], "bearer_token_env_var")
            spec = _build(name, source, no_expansion, env, transport="http", command=[], env_vars={}, cwd=None,
                          url=_text(raw["url"], "url"), headers=headers, enabled=enabled)
            for header, variable in named.items():
                if variable not in env:
                    raise MissingVariable(variable)
                value = env[variable]
                passed[header] = f"Bearer {value}" if header == "Authorization" and "bearer_token_env_var" in raw \
                    else value
            return replace(spec, headers={**spec.headers, **passed},
                           headers_as_written={**spec.headers_as_written, **{h: f"${{{v}}}" for h, v in named.items()}})
        spec = _build(name, source, no_expansion, env, transport="stdio",
                      command=[_text(raw.get("command"), "command"), *_texts(raw.get("args"), "args")],
                      env_vars=_mapping(raw.get("env"), "env"),
                      cwd=_text(raw["cwd"], "cwd") if raw.get("cwd") is not None else None, url=None, headers={},
                      enabled=enabled)
        names = [v for v in _texts(raw.get("env_vars"), "env_vars") if v not in spec.env]
        return replace(spec, env={**spec.env, **{v: env[v] for v in names if v in env}},
                       env_as_written={**spec.env_as_written, **{v: f"${{{v}}}" for v in names}})
    return make


def _gemini_server(env: Mapping[str, str]) -> Callable[[str, Any, _Source], ServerSpec]:
    """`command`, `args`, `env`, `cwd`; or `url` (SSE) / `httpUrl` (streamable HTTP) and `headers`; and
    `includeTools` / `excludeTools`."""
    def make(name: str, raw: Any, source: _Source) -> ServerSpec:
        spec = _gemini_transport(name, raw, source)
        include = raw.get("includeTools")
        return replace(spec, include_tools=tuple(_texts(include, "includeTools")) if include is not None else None,
                       exclude_tools=tuple(_texts(raw.get("excludeTools"), "excludeTools")))

    def _gemini_transport(name: str, raw: Any, source: _Source) -> ServerSpec:
        if not isinstance(raw, dict):
            raise ValueError(f"must be a mapping, not {type(raw).__name__}")
        if raw.get("httpUrl") is not None:
            return _build(name, source, expand_gemini, env, transport="http", command=[], env_vars={}, cwd=None,
                          url=_text(raw["httpUrl"], "httpUrl"), headers=_mapping(raw.get("headers"), "headers"))
        if raw.get("url") is not None:
            return _build(name, source, expand_gemini, env, transport="sse", command=[], env_vars={}, cwd=None,
                          url=_text(raw["url"], "url"), headers=_mapping(raw.get("headers"), "headers"))
        return _build(name, source, expand_gemini, env, transport="stdio",
                      command=[_text(raw.get("command"), "command"), *_texts(raw.get("args"), "args")],
                      env_vars=_mapping(raw.get("env"), "env"),
                      cwd=_text(raw["cwd"], "cwd") if raw.get("cwd") is not None else None, url=None, headers={})
    return make


def _vscode_server(env: Mapping[str, str], expand: Expand) -> Callable[[str, Any, _Source], ServerSpec]:
    """VS Code's `servers`: `{type: stdio, command, args, env, envFile, cwd}` or `{type: http | sse, url,
    headers}`. An `envFile` is read only from the user's own file (a project's would put any file into a
    server's environment)."""
    def make(name: str, raw: Any, source: _Source) -> ServerSpec:
        if not isinstance(raw, dict):
            raise ValueError(f"must be a mapping, not {type(raw).__name__}")
        spec = _json_shaped(name, {k: v for k, v in raw.items() if k != "envFile"}, source, env, expand)
        if raw.get("envFile") is None:
            return spec
        if source.scope == "project":
            raise ValueError("its envFile is not read from a project's file (it would put a file's contents in the "
                             "server's environment); name the variables under env, or put the server in your own "
                             "VS Code mcp.json")
        path = Path(expand(_text(raw["envFile"], "envFile"), env)).expanduser()
        read = _dotenv(path)
        return replace(spec, env={**read, **spec.env}, env_as_written={**read, **spec.env_as_written})
    return make


def _dotenv(path: Path) -> dict[str, str]:
    """`NAME=value` lines (`export`, quotes and `#` comments allowed), as VS Code reads an `envFile`."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"its envFile {path} cannot be read: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ValueError(f"its envFile {path} is larger than {MAX_FILE_BYTES:,} bytes")
    values: dict[str, str] = {}
    for line in raw.decode("utf-8", errors="replace").splitlines():
        line = line.strip().removeprefix("export ").strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = (part.strip() for part in line.split("=", 1))
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if name.isidentifier():
            values[name] = value
    return values


def _zed_server(env: Mapping[str, str]) -> Callable[[str, Any, _Source], ServerSpec]:
    """Zed's `context_servers`: `{command, args, env}`, its older `{source: custom, command: {path, args, env}}`,
    or `{url, headers}`. Zed expands nothing."""
    def make(name: str, raw: Any, source: _Source) -> ServerSpec:
        if not isinstance(raw, dict):
            raise ValueError(f"must be a mapping, not {type(raw).__name__}")
        command = raw.get("command")
        if isinstance(command, dict):  # the older shape: the command's parts under `command`
            raw = {**{k: v for k, v in raw.items() if k != "command"}, "command": command.get("path"),
                   "args": command.get("args"), "env": command.get("env")}
        shaped = {k: raw[k] for k in ("command", "args", "env", "url", "headers") if raw.get(k) is not None}
        return _json_shaped(name, shaped, source, env, no_expansion)
    return make


def _zed_entries(data: Any, project: Path) -> Iterator[tuple[Any, Any]]:
    """Zed's `context_servers`, less those a Zed extension provides (Zed starts them; yeetui cannot)."""
    for name, raw in _key("context_servers")(data, project):
        if not (isinstance(raw, dict) and raw.get("source") == "extension"):
            yield name, raw


def _windsurf_server(env: Mapping[str, str], expand: Expand) -> Callable[[str, Any, _Source], ServerSpec]:
    """Windsurf's `mcpServers`: `{command, args, env}` or `{serverUrl | url, headers}`, with `${env:NAME}`."""
    def make(name: str, raw: Any, source: _Source) -> ServerSpec:
        if isinstance(raw, dict) and raw.get("serverUrl") is not None:
            raw = {**{k: v for k, v in raw.items() if k != "serverUrl"}, "url": raw["serverUrl"]}
        return _json_shaped(name, raw, source, env, expand)
    return make


def _claude_desktop_files(home: Path, xdg: Path) -> list[Path]:
    """Where Claude Desktop keeps its config: macOS's Application Support, or the XDG config folder."""
    return [home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json",
            xdg / "Claude" / "claude_desktop_config.json"]


# -- the files, most specific first --------------------------------------------------------------------------


def _sources(project: Path, home: Path, env: Mapping[str, str], config_dir: Path) -> list[_Source]:
    xdg = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    codex_home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    claude_user = home / ".claude.json"
    cursor = cursor_expander(home, project)
    vscode = vscode_expander(home, project)
    sources = [
        _Source(project / ".yeetui" / "config.yaml", "yeetui .yeetui/config.yaml", "project", _yaml,
                _key("mcp_servers"), _yeetui_server(env)),
        _Source(config_dir / "config.yaml", f"yeetui {config_dir / 'config.yaml'}", "user", _yaml,
                _key("mcp_servers"), _yeetui_server(env)),
        _Source(claude_user, "Claude Code ~/.claude.json (this project)", "local", _json, _claude_local,
                _claude_server(env), limit=CLAUDE_USER_FILE_LIMIT),
        _Source(project / ".mcp.json", "Claude Code .mcp.json", "project", _jsonc, _key("mcpServers"),
                _claude_server(env)),
        _Source(claude_user, "Claude Code ~/.claude.json", "user", _json, _key("mcpServers"), _claude_server(env),
                limit=CLAUDE_USER_FILE_LIMIT),
    ]
    for relative in ("opencode.jsonc", "opencode.json", ".opencode/opencode.jsonc", ".opencode/opencode.json"):
        path = project / relative
        sources.append(_Source(path, f"OpenCode {relative}", "project", _jsonc, _key("mcp"),
                               _opencode_server(env, path.parent, files_allowed=False)))
    for name in ("opencode.jsonc", "opencode.json", "config.json"):
        path = xdg / "opencode" / name
        sources.append(_Source(path, f"OpenCode {path}", "user", _jsonc, _key("mcp"),
                               _opencode_server(env, path.parent, files_allowed=True)))
    sources += [
        _Source(project / ".cursor" / "mcp.json", "Cursor .cursor/mcp.json", "project", _jsonc,
                _key("mcpServers"), _json_shaped_server(env, cursor)),
        _Source(home / ".cursor" / "mcp.json", "Cursor ~/.cursor/mcp.json", "user", _jsonc,
                _key("mcpServers"), _json_shaped_server(env, cursor)),
        _Source(project / ".codex" / "config.toml", "Codex .codex/config.toml", "project", _toml,
                _key("mcp_servers"), _codex_server(env)),
        _Source(codex_home / "config.toml", f"Codex {codex_home / 'config.toml'}", "user", _toml,
                _key("mcp_servers"), _codex_server(env)),
        _Source(project / ".gemini" / "settings.json", "Gemini .gemini/settings.json", "project", _jsonc,
                _key("mcpServers"), _gemini_server(env)),
        _Source(home / ".gemini" / "settings.json", "Gemini ~/.gemini/settings.json", "user", _jsonc,
                _key("mcpServers"), _gemini_server(env)),
        _Source(project / ".vscode" / "mcp.json", "VS Code .vscode/mcp.json", "project", _jsonc, _key("servers"),
                _vscode_server(env, vscode)),
        _Source(xdg / "Code" / "User" / "mcp.json", f"VS Code {xdg / 'Code' / 'User' / 'mcp.json'}", "user",
                _jsonc, _key("servers"), _vscode_server(env, vscode)),
        _Source(project / ".zed" / "settings.json", "Zed .zed/settings.json", "project", _jsonc, _zed_entries,
                _zed_server(env)),
        _Source(xdg / "zed" / "settings.json", f"Zed {xdg / 'zed' / 'settings.json'}", "user", _jsonc,
                _zed_entries, _zed_server(env)),
        _Source(home / ".codeium" / "windsurf" / "mcp_config.json", "Windsurf ~/.codeium/windsurf/mcp_config.json",
                "user", _jsonc, _key("mcpServers"), _windsurf_server(env, cursor_expander(home, project))),
    ]
    sources += [_Source(path, f"Claude Desktop {path}", "user", _json, _key("mcpServers"),
                        _json_shaped_server(env, no_expansion)) for path in _claude_desktop_files(home, xdg)]
    return sources


def default_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("HOME") or Path.home())
