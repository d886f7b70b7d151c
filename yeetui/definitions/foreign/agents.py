"""Claude Code (`.claude/agents/**.md`) and OpenCode (`.opencode/agent(s)/**.md`) agent files, translated into
yeetui profile fields.

Every restriction a file states is kept: a tool it leaves out or disallows is not offered, a denied
permission is denied, `permissionMode: plan` is read-only, turn limits stay limits. What cannot be
translated fails closed — the agent gets fewer rights and a warning says why — never more. Keys with no
yeetui meaning and no effect on rights (colour, temperature, …) are ignored.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import Any

from yeetui.yamlfile import Document, DocumentError, KeyPath, read_text

Notes = list[tuple[int, str]]

CLAUDE_TOOLS = {"Read": "read_file", "Write": "write_file", "Edit": "edit_file", "MultiEdit": "edit_file",
                "NotebookEdit": "edit_file", "Bash": "bash", "Glob": "glob", "Grep": "grep", "LS": "list_dir"}
CLAUDE_MODELS: dict[str, str | None] = {"sonnet": "anthropic/claude-sonnet-4-6",
                                        "opus": "anthropic/claude-opus-4-5",
                                        "haiku": "anthropic/claude-haiku-4-5", "inherit": None}
AGENT_TOOLS = ["spawn_subagent", "request_review", "list_agents", "get_agent_result", "cancel_agent",
               "send_message"]
"""yeetui's tools for running other agents: what Claude Code's `Task` and OpenCode's `task` stand for."""
WRITING = ["write_file", "edit_file", "bash"]
OPENCODE_TOOLS = {"write": ["write_file"], "edit": ["edit_file"], "patch": ["edit_file"], "bash": ["bash"],
                  "read": ["read_file"], "glob": ["glob"], "grep": ["grep"], "list": ["list_dir"],
                  "task": AGENT_TOOLS}
OPENCODE_PERMISSIONS = {"edit": ["write_file", "edit_file"], "write": ["write_file"], "bash": ["bash"],
                        "read": ["read_file"], "glob": ["glob"], "grep": ["grep"], "list": ["list_dir"],
                        "task": AGENT_TOOLS}
OPENCODE_MODES = {"primary": ["primary"], "subagent": ["subtask"], "all": ["primary", "subtask"]}
FOREIGN_PROVIDERS = {"github-copilot": "GitHub Copilot", "opencode": "OpenCode Zen", "opencode-zen": "OpenCode Zen"}
"""Model providers only reachable through another tool's subscription: yeetui cannot call them."""
PROVIDER_NAMES = {"google": "gemini", "amazon-bedrock": "bedrock", "google-vertex": "vertex_ai"}
"""models.dev provider ids (OpenCode's) whose yeetui/litellm name differs."""
BARE_MODELS = (("claude-", "anthropic"), ("gpt-", "openai"), ("o1", "openai"), ("o3", "openai"),
               ("o4", "openai"), ("chatgpt-", "openai"), ("codex-", "openai"), ("gemini-", "gemini"))
"""A model named without its provider (`gpt-5`) is resolved like an alias, by its family's prefix."""
MAX_PROMPT_FILE = 262_144


class Translation:
    """Collects yeetui fields from a foreign file, keeping each one's source line for error messages."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.data: dict[str, Any] = {}
        self.lines: dict[KeyPath, int] = {(): doc.lines.get((), 1)}
        self.notes: Notes = []

    def put(self, path: KeyPath, value: Any, source: KeyPath) -> None:
        node = self.data
        for part in path[:-1]:
            node = node.setdefault(str(part), {})
        node[str(path[-1])] = value
        for depth in range(1, len(path) + 1):
            self.lines.setdefault(path[:depth], self.doc.line_of(source))

    def disallow(self, tools: list[str], source: KeyPath) -> None:
        current = self.data.setdefault("disallowed_tools", [])
        current.extend(t for t in tools if t not in current)
        self.lines.setdefault(("disallowed_tools",), self.doc.line_of(source))

    def read_only(self, source: KeyPath) -> None:
        self.put(("workspace", "allow_writes"), False, source)

    def note(self, source: KeyPath, text: str) -> None:
        self.notes.append((self.doc.line_of(source), text))

    def result(self, prompt: str | None = None) -> tuple[Document, Notes]:
        self.data.setdefault("name", self.doc.data.get("name") or self.doc.path.stem)
        body = prompt if prompt is not None else self.doc.body
        if body and body.strip():
            self.data["prompt"] = body.strip()
        return Document(self.doc.path, self.data, self.doc.body, self.lines), self.notes


def _names(raw: Any) -> list[str] | None:
    """`Read, Grep` / `[Read, Grep]` / `Read Grep` → names; None when it is no list of names."""
    if isinstance(raw, str):
        return [t.strip() for t in re.split(r"[,\s]+(?![^()]*\))", raw) if t.strip()]
    if isinstance(raw, list) and all(isinstance(t, str) for t in raw):
        return [t.strip() for t in raw if t.strip()]
    return None


def _is_all(raw: Any) -> bool:
    return bool(raw == "*" or raw == ["*"])


def from_claude(doc: Document, project_dir: Path) -> tuple[Document | None, Notes]:
    """Claude Code agent: name, description, tools, disallowedTools, model, permissionMode, maxTurns."""
    fm, out = doc.data, Translation(doc)
    out.put(("capabilities",), ["subtask"], ())
    for key in ("name", "description"):
        if key in fm:
            out.put((key,), str(fm[key]) if fm[key] is not None else "", (key,))
    if "tools" in fm and not _is_all(fm["tools"]):
        names = _names(fm["tools"])
        if names is None:
            out.note(("tools",), f"'tools' should be a comma-separated list of names; {fm['tools']!r} gives the "
                     "agent no tools (fail closed)")
            out.put(("tools",), [], ("tools",))
        else:
            tools, patterns, dropped = _claude_tools(names)
            mcp = [_mcp_glob(n) for n in names if n.startswith("mcp__")]
            dropped = [n for n in dropped if not n.startswith("mcp__")]
            # A tools list names every tool the agent gets: MCP tools only as listed (none when none are).
            out.put(("mcp",), mcp or "none", ("tools",))
            if patterns:  # Bash(git diff:*): bash for those commands only
                tools.append("bash")
                out.put(("permissions", "bash"), {"*": "deny", **dict.fromkeys(patterns, "allow")}, ("tools",))
            if dropped:
                out.note(("tools",), f"Claude Code tools with no yeetui equivalent were dropped: {', '.join(dropped)}")
            out.put(("tools",), tools, ("tools",))
    if "disallowedTools" in fm:
        names = _names(fm["disallowedTools"])
        if names is None or _is_all(fm["disallowedTools"]):
            out.note(("disallowedTools",), "'disallowedTools' is not a list of tool names; every tool that can "
                     "change something is withheld (fail closed)")
            out.disallow([*WRITING, *AGENT_TOOLS], ("disallowedTools",))
        else:
            tools, patterns, _ = _claude_tools(names)
            out.disallow(tools + [n for n in names if n.startswith("mcp__")], ("disallowedTools",))
            if patterns:  # Bash(rm:*): those commands are denied, the rest of bash keeps its rules
                rules = out.data.get("permissions", {}).get("bash", {"*": "ask"})
                out.put(("permissions", "bash"), {**rules, **dict.fromkeys(patterns, "deny")}, ("disallowedTools",))
    if "mcpServers" in fm:
        _claude_mcp_servers(fm["mcpServers"], out)
    if "model" in fm and fm["model"] is not None:
        _model(str(fm["model"]), out)
    if "permissionMode" in fm:
        _permission_mode(fm["permissionMode"], out)
    if "maxTurns" in fm:
        out.put(("limits", "max_turns"), fm["maxTurns"], ("maxTurns",))
    if fm.get("hooks"):
        out.note(("hooks",), "yeetui does not run Claude Code hooks, which may guard tool calls; the agent is "
                 "read-only (fail closed)")
        out.read_only(("hooks",))
    return out.result()


def _claude_tools(names: list[str]) -> tuple[list[str], list[str], list[str]]:
    """yeetui tools, yeetui bash patterns (from `Bash(git diff:*)`), and the names with no equivalent."""
    tools: list[str] = []
    patterns: list[str] = []
    unknown: list[str] = []
    for name in names:
        command = re.fullmatch(r"Bash\((.*)\)", name)
        if command:
            spec = command[1].strip()
            prefix = spec.removesuffix(":*").removesuffix(" *").strip()
            patterns += [prefix, f"{prefix} *"] if spec.endswith("*") else [spec]
        elif name in CLAUDE_TOOLS:
            if CLAUDE_TOOLS[name] not in tools:
                tools.append(CLAUDE_TOOLS[name])
        else:
            unknown.append(name)
    return tools, patterns, unknown


def _mcp_glob(name: str) -> str:
    """`mcp__git__git_status` → `git/git_status`; `mcp__git` and `mcp__git__*` → `git`."""
    server, _, tool = name.removeprefix("mcp__").partition("__")
    return server if tool in ("", "*") else f"{server}/{tool}"


def _claude_mcp_servers(raw: Any, out: Translation) -> None:
    """`mcpServers: [git, time]` narrows the agent to those of the user's servers. A server defined inline in
    the agent file is not started: it would be a program a cloned file runs (define it in `.mcp.json`, where
    it needs your approval)."""
    source = ("mcpServers",)
    entries = raw if isinstance(raw, list) else [raw] if isinstance(raw, str | dict) else None
    if entries is None:
        out.note(source, "'mcpServers' should list server names; the agent gets no MCP servers (fail closed)")
        out.put(("mcp",), "none", source)
        return
    names = [e for e in entries if isinstance(e, str) and e.strip()]
    inline = [e for e in entries if isinstance(e, dict)]
    if inline:
        defined = sorted({str(k) for e in inline for k in e})
        out.note(source, f"MCP servers defined inside the agent file are not started ({', '.join(defined)}); "
                 "define them in .mcp.json, where they need your approval")
    current = out.data.get("mcp")
    if isinstance(current, list):  # the tools list named MCP tools too: both must allow a server
        names = [n for n in names if any(g == n or g.startswith(n + "/") for g in current)]
        out.put(("mcp",), [g for g in current if g.split("/", 1)[0] in names] or "none", source)
    else:
        out.put(("mcp",), names or "none", source)


def _permission_mode(mode: Any, out: Translation) -> None:
    source = ("permissionMode",)
    if mode == "default":
        return
    if mode == "plan":
        out.read_only(source)
    elif mode == "acceptEdits":
        for tool in ("write_file", "edit_file"):
            out.put(("permissions", tool), "allow", source)
    elif mode == "bypassPermissions":
        for tool in WRITING:
            out.put(("permissions", tool), "allow", source)
    elif mode == "dontAsk":
        for tool in WRITING:
            out.put(("permissions", tool), "deny", source)
    else:
        out.note(source, f"the permissionMode {mode!r} is not one yeetui knows (default, plan, acceptEdits, "
                 "dontAsk, bypassPermissions); the agent is read-only (fail closed)")
        out.read_only(source)


def _model(model: str, out: Translation) -> None:
    model = model.strip()
    source = ("model",)
    if model.lower() in CLAUDE_MODELS:
        out.put(("model",), CLAUDE_MODELS[model.lower()], source)
    elif "/" in model:
        provider, _, name = model.partition("/")
        if provider in FOREIGN_PROVIDERS:
            out.note(source, f"the model '{model}' is served only through {FOREIGN_PROVIDERS[provider]}, which "
                     "yeetui cannot call; the default model is used")
        else:
            out.put(("model",), f"{PROVIDER_NAMES.get(provider, provider)}/{name}", source)
    elif bare := next((p for prefix, p in BARE_MODELS if model.lower().startswith(prefix)), None):
        out.put(("model",), f"{bare}/{model}", source)
    else:
        out.note(source, f"the model '{model}' is not understood; the default model is used")


def from_opencode(doc: Document, project_dir: Path) -> tuple[Document | None, Notes]:
    """OpenCode agent: description, mode, model, prompt, tools, permission, steps, disable."""
    fm, out = doc.data, Translation(doc)
    if fm.get("disable") is True:
        out.note(("disable",), "the agent says 'disable: true'; it was not loaded")
        return None, out.notes
    for key in ("name", "description"):
        if key in fm:
            out.put((key,), str(fm[key]) if fm[key] is not None else "", (key,))
    if "model" in fm and fm["model"] is not None:
        _model(str(fm["model"]), out)
    mode = fm.get("mode", "all")
    if mode in OPENCODE_MODES:
        out.put(("capabilities",), OPENCODE_MODES[mode], ("mode",))
    else:
        out.note(("mode",), f"the mode '{mode}' is not one of primary, subagent, all; 'subagent' is assumed")
        out.put(("capabilities",), OPENCODE_MODES["subagent"], ("mode",))
    for key in ("steps", "maxSteps"):
        if key in fm:
            out.put(("limits", "max_turns"), fm[key], (key,))
    _opencode_tools(fm.get("tools"), out)
    _opencode_permission(fm.get("permission"), out)
    prompt = None
    if fm.get("prompt") is not None:
        prompt = _opencode_prompt(fm["prompt"], doc, project_dir, out)
    return out.result(prompt)


def _matching(key: str, table: dict[str, list[str]]) -> list[str]:
    found: list[str] = []
    for name, tools in table.items():
        if fnmatch.fnmatchcase(name, key):
            found.extend(t for t in tools if t not in found)
    return found


def _opencode_mcp(key: str) -> list[tuple[str, str]]:
    """What an OpenCode `tools` key that is no built-in tool names among MCP tools, which OpenCode calls
    `{server}_{tool}`: `github_*` → [(github, *)]. A server's name may hold `_` too, so `my_server_tool` is every
    way of splitting it ([(my, server_tool), (my_server, tool)]): only a server of that name can match, and a
    false key withholding one more name than meant errs on the safe side."""
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+_(?:[A-Za-z0-9_.\-]+|\*)", key):
        return []
    return [(key[:i], key[i + 1:]) for i, char in enumerate(key) if char == "_" and 0 < i < len(key) - 1]


def _opencode_tools(tools: Any, out: Translation) -> None:
    """`tools: {write: false}` withholds a tool; `{"*": false, read: true}` offers only what is named true;
    `{"github_*": false}` withholds an MCP server's tools (OpenCode names them `{server}_{tool}`)."""
    if tools is None:
        return
    if not isinstance(tools, dict):
        out.note(("tools",), "'tools' should map tool names to true/false; the agent gets no tools (fail closed)")
        out.put(("tools",), [], ("tools",))
        return
    enabled: dict[str, bool] = {}
    mcp_on: list[str] = []
    mcp_off: list[str] = []
    wildcard_off = False
    ignored = []
    for key, value in tools.items():
        matched = _matching(str(key), OPENCODE_TOOLS)
        if not isinstance(value, bool):
            out.note(("tools", key), f"tools.{key} should be true or false; it is taken as false (fail closed)")
            value = False
        if key == "*" and value is False:
            wildcard_off = True
        mcp = [] if matched or key == "*" else _opencode_mcp(str(key))
        if not matched and not mcp and key != "*":
            ignored.append(str(key))
        for tool in matched:
            enabled[tool] = value
        for server, tool in mcp:
            if value:
                mcp_on.append(server if tool == "*" else f"{server}/{tool}")
            else:
                mcp_off.append(f"mcp__{server}__{tool}")
    if ignored:
        out.note(("tools",), f"OpenCode tools with no yeetui equivalent were ignored: {', '.join(ignored)}")
    off = [t for t, on in enabled.items() if not on]
    if wildcard_off:
        out.put(("tools",), [t for t, on in enabled.items() if on], ("tools",))
        out.put(("mcp",), mcp_on or "none", ("tools",))  # "*": false turns MCP tools off too, but those named
    if off or mcp_off:
        out.disallow(off + mcp_off, ("tools",))


def _opencode_permission(permission: Any, out: Translation) -> None:
    """`permission: {edit: deny, bash: {"git *": allow}, "*": deny}`: keys may be globs; later keys win."""
    if permission is None:
        return
    if isinstance(permission, str):
        permission = {"*": permission}
    if not isinstance(permission, dict):
        out.note(("permission",), "'permission' should map tools to allow, ask or deny; every tool that can "
                 "change something is withheld (fail closed)")
        out.disallow([*WRITING, *AGENT_TOOLS], ("permission",))
        return
    rules: dict[str, tuple[Any, str]] = {}
    ignored = []
    for key, action in permission.items():
        matched = _matching(str(key), OPENCODE_PERMISSIONS)
        if not matched:
            ignored.append(str(key))
        for tool in matched:
            rules[tool] = (action, str(key))
    if ignored:
        out.note(("permission",), f"OpenCode permissions with no yeetui equivalent were ignored: {', '.join(ignored)}")
    for tool, (action, key) in rules.items():
        source = ("permission", key)
        if action == "deny":
            out.disallow([tool], source)
        elif tool in AGENT_TOOLS:
            continue  # yeetui has no per-call prompt for spawning; allow and ask leave it as it is
        elif action in ("allow", "ask") or isinstance(action, dict):
            out.put(("permissions", tool), action, source)
        else:
            out.put(("permissions", tool), action, source)  # validation names the bad value and its line


def _opencode_prompt(prompt: Any, doc: Document, project_dir: Path, out: Translation) -> str | None:
    """A `prompt:` field is the prompt (over the body); `{file:./x.md}` reads that file, inside the project."""
    source = ("prompt",)
    text = str(prompt)
    match = re.fullmatch(r"\s*\{file:(.+)\}\s*", text)
    if match is None:
        if doc.body and doc.body.strip():
            out.note(source, "the prompt is given both as 'prompt:' and as the body; 'prompt:' is used")
        return text
    target = Path(match[1].strip()).expanduser()
    target = (doc.path.parent / target) if not target.is_absolute() else target
    try:
        resolved = target.resolve(strict=True)
        if not resolved.is_relative_to(project_dir.resolve()) or not resolved.is_file():
            raise DocumentError(target, None, "outside the project")
        if resolved.stat().st_size > MAX_PROMPT_FILE:
            raise DocumentError(target, None, "too large")
        return read_text(resolved)
    except (OSError, DocumentError) as exc:
        why = exc.reason if isinstance(exc, DocumentError) else (exc.strerror or str(exc))
        out.note(source, f"the prompt file {match[1].strip()!r} cannot be read ({why}); the body is used instead")
        return None
