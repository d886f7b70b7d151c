"""Settings, layered: defaults < user config.yaml < project .yeetui/config.yaml < YEETUI_* env < CLI flags.

The project layer is untrusted (it arrives with whatever repository the user cloned): it may not set
provider base URLs or keys — those entries are dropped with a warning. API keys live in `SecretStr` and
are only ever unwrapped when a provider client is built.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_validator,
)
from pydantic_core import InitErrorDetails

from yeetui import paths
from yeetui.definitions.profiles import BudgetLimits
from yeetui.errors import ConfigError
from yeetui.providers.base import ProviderCredentials, credentials_from_env, other_model_hint, split_model
from yeetui.providers.pricing import Price
from yeetui.providers.tiers import TIER_NAMES, TIERS
from yeetui.settings.trust import is_trusted
from yeetui.yamlfile import DocumentError, parse_yaml

DEFAULT_MODEL = "anthropic/claude-sonnet-4-6"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProviderConfig(_Model):
    api_key: SecretStr | None = None
    """Key for this provider. Prefer the standard env var (ANTHROPIC_API_KEY, OPENAI_API_KEY, …)."""
    base_url: str | None = None
    """Endpoint override, e.g. a proxy or a local server."""


class ToolConfig(_Model):
    bash_timeout: float = Field(120.0, gt=0)
    """Seconds before a bash command (and its children) is killed, unless the call asks for less/more."""
    bash_max_timeout: float = Field(600.0, gt=0)
    output_cap: int = Field(30_000, gt=0)
    """Characters of tool output kept per call."""
    bash_sandbox: Literal["auto", "required", "unshielded"] = "auto"
    """`auto`/`required`: read-only agents' bash runs in bubblewrap or Landlock; writable agents' bash only in
    bubblewrap, which keeps `.git/`, `.yeetui/`, `.claude/`, `.opencode/` read-only — where it cannot run,
    their bash is refused. `unshielded` (your own config only, never a project's) accepts the Landlock fallback
    for them, which cannot shield those folders, or no sandbox at all where even Landlock fails."""
    bash_network: bool = False
    """Agents' bash may use the network inside its sandbox (a profile can allow it for itself:
    `workspace.network`)."""


class RetryConfig(_Model):
    max_attempts: int = Field(5, ge=1, le=20)
    """Attempts per model turn on 429/5xx/overloaded/dropped connections."""
    base_delay: float = Field(1.0, ge=0)
    max_delay: float = Field(30.0, ge=0)


class WatcherConfig(_Model):
    debounce: float = Field(1.5, ge=0)
    """Seconds of quiet in the watched conversation before the pair watcher looks at what changed."""
    min_interval: float = Field(20.0, ge=0)
    """Seconds between two pair runs at least."""
    max_per_hour: int = Field(30, ge=1)
    """Pair runs per hour at most."""


class WorktreeConfig(_Model):
    auto_merge: Literal["off", "merge", "squash", "ff"] = "off"
    """When an orchestrator's reviewer approves a builder's branch, merge it into your branch at once (with a
    merge commit, squashed, or fast-forward only) instead of leaving the decision to you. Not from an untrusted
    project's config: only your word merges."""


class ProjectGrants(_Model):
    """What only your own config.yaml may grant the files a project brings (a project's config setting these is
    ignored, trusted or not)."""

    unconfined_mcp_servers: list[str] = Field(default_factory=list)
    """Names of project-defined MCP servers that may start outside the OS sandbox where no sandbox works here
    (by default such a server does not start). One that runs a project file runs code an agent can write."""
    unconfined_hooks: list[str] = Field(default_factory=list)
    """Commands (as written) of a trusted project's hooks that may run outside the OS sandbox where no sandbox
    works here (by default such a hook does not run)."""
    mcp_secrets: dict[str, list[str]] = Field(default_factory=dict)
    """Project-defined MCP server name → the secret-named variables (`*KEY*`, `*TOKEN*`, `*SECRET*`,
    `*PASSWORD*`, provider keys) its file may pass it. A project's server that names any other such variable
    is refused: `{"env": {"DEBUG": "${ANTHROPIC_API_KEY}"}}` would hand it your key."""


class ModelPrice(_Model):
    """What a model costs, in US dollars per million tokens: an entry of `models` named by the model
    (`openrouter/qwen/qwen3-coder: {input_per_mtok: 0.2, output_per_mtok: 0.8}`)."""

    input_per_mtok: float = Field(ge=0, allow_inf_nan=False)
    output_per_mtok: float = Field(ge=0, allow_inf_nan=False)
    cache_read_per_mtok: float | None = Field(None, ge=0, allow_inf_nan=False)
    """Input read from the provider's prompt cache; unset: charged as input."""
    cache_write_per_mtok: float | None = Field(None, ge=0, allow_inf_nan=False)
    """Input written to the provider's prompt cache; unset: charged as input."""

    def price(self) -> Price:
        def either(own: float | None) -> float:
            return self.input_per_mtok if own is None else own

        return Price(self.input_per_mtok, self.output_per_mtok, either(self.cache_read_per_mtok),
                     either(self.cache_write_per_mtok))


_PRICES = TypeAdapter(dict[str, ModelPrice])


class Settings(_Model):
    model: str = DEFAULT_MODEL
    """Default model, `provider/model`. Env: YEETUI_MODEL."""
    thinking: Literal["off", "low", "medium", "high"] | None = None
    """Default thinking level when the profile sets none."""
    primary_profile: str = "generic"
    """Profile of the primary agent."""
    max_tokens: int = Field(8192, gt=0)
    """Output token limit per model turn."""
    compact_at_tokens: int | None = Field(160_000, gt=1000)
    """Auto-compact the conversation when a turn's input exceeds this many tokens (None: never)."""
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    models: dict[Literal["strong", "default", "fast"], str] = Field(default_factory=dict)
    """Two kinds of entry. A tier (`strong`, `default`, `fast`) names the model of the profiles that ask for
    it (`oracle: strong`), e.g. `strong: openai/o3`; an unset tier follows the provider of the model you chose
    (see yeetui.providers.tiers). A model's name (`provider/model`) gives its price in US dollars per million
    tokens (`openrouter/qwen/qwen3-coder: {input_per_mtok: 0.2, output_per_mtok: 0.8}`, see `ModelPrice`), so
    that its cost is counted and a dollar budget holds on it; it replaces yeetui's own price for that name.
    Only the tiers stay in this mapping: the prices are read into `prices` (only from your own config.yaml,
    never a project's: a price is what a budget counts)."""
    _prices: dict[str, ModelPrice] = PrivateAttr(default_factory=dict)
    tools: ToolConfig = Field(default_factory=ToolConfig)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    watcher: WatcherConfig = Field(default_factory=WatcherConfig)
    worktrees: WorktreeConfig = Field(default_factory=WorktreeConfig)
    permissions: dict[str, Any] = Field(default_factory=dict)
    """Global permission rules (`tool: action` or `tool: {pattern: action}`), below profile rules."""
    theme: str = "yeetui-dark"
    keymap: dict[str, str] = Field(default_factory=dict)
    """Binding id → keys, e.g. `toggle_pair: f3`."""
    subagent_mode: Literal["in_process", "tmux", "terminal", "headless"] | None = None
    """Where subagents run when neither the spawn nor the profile says: in this process, in a window of
    yeetui's tmux server (`tmux`; `terminal` also opens a terminal window on it), or a background worker."""
    context_files: list[str] = Field(default_factory=lambda: ["AGENTS.md", "CLAUDE.md"])
    """Workspace files read into the primary system prompt."""
    hooks: dict[str, Any] = Field(default_factory=dict)
    """Commands run at moments of an agent's life, in Claude Code's shape (`PreToolUse: [{matcher: Bash, hooks:
    [{type: command, command: …}]}]`; see `yeetui.hooks`). A trusted project's `.claude/settings.json` hooks run
    too; an untrusted project's never do."""
    stall_after: float | None = Field(120.0, ge=5)
    """Seconds a running agent may go without progress (no token streamed, no tool call begun or ended) before
    the ledger and `agents list` show it `stalled`, with what it waits on (None: never)."""
    quota_hold_minutes: float = Field(30.0, gt=0)
    """When a provider refuses for the account's quota or credit, runs queued for it wait this long (or until a
    request to it succeeds) instead of starting into the same refusal."""
    budget: BudgetLimits = Field(default_factory=BudgetLimits)
    """What each of your requests may spend with every subagent it starts (a top-level run's budget; profiles,
    spawns and `--max-cost` may only tighten it). A project's config may lower these limits, never raise them."""
    mcp_index_wait: float = Field(3.0, ge=0, le=120)
    """Seconds a run's first request waits for its MCP servers to list their tools; a slower server is listed as
    still starting (`mcp_load` waits for it), so a hung one never holds up the conversation."""
    project_grants: ProjectGrants = Field(default_factory=ProjectGrants)
    """What a project's MCP servers and hooks may have beyond the defaults; read from your own config only."""
    mcp_servers: dict[str, Any] = Field(default_factory=dict)
    """MCP servers of yeetui's own config, beside those Claude Code's, OpenCode's, Cursor's, Codex's and Gemini's
    files define; read and checked by `yeetui.mcp.sources` (a project's need the user's approval)."""

    @property
    def prices(self) -> dict[str, Price]:
        """The prices `models` gives, by `provider/model` name."""
        return {name: entry.price() for name, entry in self._prices.items()}

    @model_validator(mode="wrap")
    @classmethod
    def _prices_apart(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Settings:
        """`models` holds tiers and prices: the prices are validated (errors located at `models.NAME…`, as the
        file has them) and kept apart, so that `models` maps tiers to model names only."""
        prices: dict[str, ModelPrice] = {}
        if isinstance(data, Mapping) and isinstance(data.get("models"), Mapping):
            tiers = {k: v for k, v in data["models"].items() if k in TIER_NAMES}
            priced = {k: v for k, v in data["models"].items() if k not in TIER_NAMES}
            prices = _validated_prices(priced)
            data = {**data, "models": tiers}
        settings: Settings = handler(data)
        settings._prices = prices
        return settings


def _validated_prices(entries: Mapping[str, Any]) -> dict[str, ModelPrice]:
    """The price entries of `models`, each named `provider/model` with a price mapping; raises a ValidationError
    located at `models.NAME[.FIELD]`."""
    errors: list[InitErrorDetails] = []
    for name, value in entries.items():
        provider, slash, bare = str(name).partition("/")
        if not (isinstance(name, str) and provider and slash and bare):
            errors.append({"type": "value_error", "loc": ("models", str(name)), "input": value, "ctx": {"error": (
                f"{name!r} is neither a tier ({', '.join(TIER_NAMES)}) nor a model name (provider/model) given a "
                "price")}})
        elif not isinstance(value, Mapping):
            errors.append({"type": "value_error", "loc": ("models", name), "input": value, "ctx": {"error": (
                f"a model's entry is its price, {{input_per_mtok: …, output_per_mtok: …}} (US dollars per million "
                f"tokens), not {value!r}; only a tier ({', '.join(TIER_NAMES)}) names a model")}})
    if not errors:
        try:
            return _PRICES.validate_python(dict(entries))
        except ValidationError as exc:
            for found in exc.errors():
                detail: InitErrorDetails = {"type": found["type"], "loc": ("models", *found["loc"]),
                                            "input": found["input"]}
                if "ctx" in found:
                    detail["ctx"] = found["ctx"]
                errors.append(detail)
    raise ValidationError.from_exception_data("Settings", errors)


@dataclass
class LoadedSettings:
    settings: Settings
    warnings: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


_UNTRUSTED_PROVIDER_KEYS = ("api_key", "base_url")


def _read_yaml(path: Path) -> tuple[dict[str, Any], dict[tuple[Any, ...], int]]:
    """The file's settings and the line of every key (for error messages)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc.strerror}.") from exc
    try:
        data, lines = parse_yaml(text, path)
    except DocumentError as exc:
        raise ConfigError(str(exc)) from None
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: the config file must be a mapping of settings, not {type(data).__name__}.")
    return data, lines


def _deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    """YEETUI_MODEL, YEETUI_THINKING, … and nested ones with `__` (YEETUI_TOOLS__BASH_TIMEOUT)."""
    skip = {"YEETUI_CONFIG_DIR", "YEETUI_DATA_DIR", "YEETUI_NETGUARD"}
    layer: dict[str, Any] = {}
    for name, value in env.items():
        if not name.startswith("YEETUI_") or name in skip or not value:
            continue
        keys = name[len("YEETUI_"):].lower().split("__")
        if keys[0] not in Settings.model_fields:
            continue
        node = layer
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return layer


Layer = tuple[str, Path | None, dict[str, Any], dict[tuple[Any, ...], int]]


def _origin(loc: tuple[Any, ...], layers: list[Layer]) -> str:
    """Name the layer (file:line, or env) that supplied the value at `loc`."""
    for label, path, data, lines in reversed(layers):
        node: Any = data
        for part in loc:
            if isinstance(node, dict) and part in node:
                node = node[part]
            else:
                break
        else:
            if path is None:
                return label
            line = lines.get(tuple(loc))
            return f"{path}:{line}" if line else str(path)
    return "settings"


_PROJECT_MAY_ONLY_LOWER = (("tools", "output_cap"), ("tools", "bash_timeout"), ("tools", "bash_max_timeout"),
                           ("retry", "max_attempts"), ("retry", "max_delay"), ("max_tokens",))
"""Limits a project config may tighten but not raise: more output per tool call, longer commands, more
retries would be a cloned repository spending the user's money and time."""


_UNTRUSTED_CONFIG = ("this project is not trusted, and its config may narrow rights and limits but not widen "
                     "them (nor rebind keys); `yeetui trust` in the project allows it")


def _defaults_and(layers: list[Layer]) -> Settings:
    """The settings the layers read so far give (defaults when they do not validate: reported later)."""
    merged: dict[str, Any] = {}
    for _, _, data, _ in layers:
        merged = _deep_merge(merged, data)
    try:
        return Settings.model_validate(merged)
    except ValidationError:
        return Settings()


def _narrow_project_layer(data: dict[str, Any], base: Settings, where: Path) -> list[str]:
    """Drop from a project config (in place) what would widen an agent's rights or limits; say what went.

    A cloned repository's config may narrow permissions (`ask`, `deny`) but not allow anything, may not
    rebind keys (a remapped permission dialog would answer for the user), and may lower but not raise
    the limits in `_PROJECT_MAY_ONLY_LOWER`."""
    return [*_drop_widening_keys(data, where), *_drop_allow_rules(data, where), *_drop_raised_limits(data, base, where)]


def _drop_users_own(data: dict[str, Any], where: Path) -> list[str]:
    """Drop from a project config (in place) what only the user's own may set, trusted or not: provider keys
    and endpoints, model prices, the unshielded sandbox, grants to the project's servers and hooks."""
    warnings: list[str] = []
    for name, conf in (data.get("providers") or {}).items():
        if isinstance(conf, dict):
            for key in _UNTRUSTED_PROVIDER_KEYS:
                if key in conf:
                    del conf[key]
                    warnings.append(f"{where}: ignored providers.{name}.{key} — a project config may not set "
                                    "provider keys or endpoints; put it in your user config.yaml or env.")
    models = data.get("models")
    if isinstance(models, dict):
        for name in [name for name in models if name not in TIER_NAMES]:
            del models[name]
            warnings.append(f"{where}: ignored models.{name} — a project config may not price a model (a budget "
                            "counts spend at that price, trusted or not); put it in your user config.yaml.")
    tools = data.get("tools")
    if isinstance(tools, dict) and tools.get("bash_sandbox") == "unshielded":
        del tools["bash_sandbox"]
        warnings.append(f"{where}: ignored tools.bash_sandbox: unshielded — only your own config.yaml may accept "
                        "a sandbox that leaves .git/ writable, trusted or not.")
    if "project_grants" in data:
        del data["project_grants"]
        warnings.append(f"{where}: ignored project_grants — only your own config.yaml may grant a project's "
                        "servers and hooks more, trusted or not.")
    return warnings


def _drop_widening_keys(data: dict[str, Any], where: Path) -> list[str]:
    """Keys a project may not set at all (keys, hooks) or only to their strictest value (the sandbox, merging)."""
    warnings: list[str] = []
    if "keymap" in data:
        del data["keymap"]
        warnings.append(f"{where}: ignored keymap — {_UNTRUSTED_CONFIG}.")
    if "hooks" in data:  # commands run with the user's rights
        del data["hooks"]
        warnings.append(f"{where}: ignored hooks — {_UNTRUSTED_CONFIG}.")
    tools = data.get("tools")
    if isinstance(tools, dict):
        if tools.get("bash_sandbox", "required") != "required":
            warnings.append(f"{where}: ignored tools.bash_sandbox: {tools.pop('bash_sandbox')} — {_UNTRUSTED_CONFIG}.")
        if tools.get("bash_network", False) is not False:
            warnings.append(f"{where}: ignored tools.bash_network: {tools.pop('bash_network')} — {_UNTRUSTED_CONFIG}.")
    worktrees = data.get("worktrees")
    if isinstance(worktrees, dict) and worktrees.get("auto_merge", "off") != "off":
        warnings.append(f"{where}: ignored worktrees.auto_merge: {worktrees.pop('auto_merge')} — {_UNTRUSTED_CONFIG}.")
    return warnings


def _drop_allow_rules(data: dict[str, Any], where: Path) -> list[str]:
    """A project's permission rules may ask or deny, never allow."""
    warnings: list[str] = []
    rules = data.get("permissions")
    if not isinstance(rules, dict):
        return warnings
    for tool, rule in list(rules.items()):
        if rule == "allow":
            del rules[tool]
            warnings.append(f"{where}: ignored permissions.{tool}: allow — {_UNTRUSTED_CONFIG}.")
        elif isinstance(rule, dict):
            for pattern, action in list(rule.items()):
                if action == "allow":
                    del rule[pattern]
                    warnings.append(f"{where}: ignored permissions.{tool}.{pattern!r}: allow — "
                                    f"{_UNTRUSTED_CONFIG}.")
    return warnings


def _drop_raised_limits(data: dict[str, Any], base: Settings, where: Path) -> list[str]:
    """The limits in `_PROJECT_MAY_ONLY_LOWER` a project sets above the user's."""
    warnings: list[str] = []
    for path in _PROJECT_MAY_ONLY_LOWER:
        holder: Any = data
        for key in path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(holder, dict) or path[-1] not in holder:
            continue
        current: Any = base
        for key in path:
            current = getattr(current, key)
        value = holder[path[-1]]
        number = value
        if isinstance(value, str):  # `output_cap: "10000000"` validates as the number it spells
            try:
                number = float(value.strip())
            except ValueError:
                continue  # not a number at all: validation refuses it, naming the file
        if isinstance(number, int | float) and not isinstance(number, bool) and number > current:
            del holder[path[-1]]
            warnings.append(f"{where}: ignored {'.'.join(path)}: {value} (above {current}) — {_UNTRUSTED_CONFIG}.")
    return warnings


def _keep_project_budget_lower(data: dict[str, Any], base: Settings, where: Path) -> list[str]:
    """A project's `budget` may add or lower limits, never raise or lift one the user set (trusted or not: it
    is the user's money)."""
    budget = data.get("budget")
    if not isinstance(budget, dict):
        return []
    warnings: list[str] = []
    for key, value in list(budget.items()):
        current = getattr(base.budget, key, None)
        if current is None:
            continue
        number = value
        if isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                continue  # not a number: validation refuses it, naming the file
        if value is None or (isinstance(number, int | float) and not isinstance(number, bool) and number > current):
            del budget[key]
            warnings.append(f"{where}: ignored budget.{key}: {value} (your config.yaml sets {current}) — a "
                            "project's config may lower a budget, not raise it.")
    return warnings


def load_settings(
    *,
    project_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    trusted: bool | None = None,
) -> LoadedSettings:
    """Build Settings from every layer. Raises ConfigError naming the file, line and key at fault.

    The project layer of a project the user has not trusted (`yeetui.settings.trust`; looked up when `trusted` is
    None) may narrow but not widen (see `_narrow_project_layer`); provider keys and endpoints are never
    taken from it, trusted or not."""
    env = os.environ if env is None else env
    warnings: list[str] = []
    layers: list[Layer] = []
    files: list[Path] = []

    user_file = paths.config_dir(env) / "config.yaml"
    if user_file.is_file():
        layers.append(("user config", user_file, *_read_yaml(user_file)))
        files.append(user_file)

    if project_dir is not None:
        project_file = paths.project_config_dir(project_dir) / "config.yaml"
        if project_file.is_file() and not project_file.resolve().is_relative_to(Path(project_dir).resolve()):
            warnings.append(f"{project_file} leads out of the project (to {project_file.resolve()}); it was not "
                            "read: the project's config must be in the project, where trusting it pins its content.")
        elif project_file.is_file():
            data, lines = _read_yaml(project_file)
            warnings += _drop_users_own(data, project_file)
            warnings += _keep_project_budget_lower(data, _defaults_and(layers), project_file)
            if not (is_trusted(project_dir, env) if trusted is None else trusted):
                warnings += _narrow_project_layer(data, _defaults_and(layers), project_file)
            layers.append(("project config", project_file, data, lines))
            files.append(project_file)

    layers.append(("environment (YEETUI_*)", None, _env_layer(env), {}))
    if overrides:
        layers.append(("command-line flags", None, dict(overrides), {}))

    merged: dict[str, Any] = {}
    for _, _, data, _ in layers:
        merged = _deep_merge(merged, data)
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            key = ".".join(str(p) for p in loc)
            problems.append(f"{_origin(loc, layers)}: setting '{key}': {err['msg']}")
        raise ConfigError("Invalid configuration — " + "; ".join(problems)) from None
    return LoadedSettings(settings=settings, warnings=warnings, files=files)


def provider_credentials(settings: Settings, provider: str,
                         env: Mapping[str, str] | None = None) -> ProviderCredentials:
    """Credentials for `provider`: the standard env vars first, then the user config's providers entry."""
    env = os.environ if env is None else env
    creds = credentials_from_env(provider, env)
    conf = settings.providers.get(provider)
    if conf is None:
        return creds
    api_key = creds.api_key or (conf.api_key.get_secret_value() if conf.api_key else None)
    return ProviderCredentials(api_key=api_key, base_url=creds.base_url or conf.base_url)


def provider_setup_problem(settings: Settings, model: str, env: Mapping[str, str] | None = None) -> str | None:
    """A sentence telling how to configure the provider of `model` when it has no key; None when set up."""
    provider, _ = split_model(model)
    if provider_credentials(settings, provider, env).api_key or provider == "ollama":
        return None
    var = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY",
           "openrouter": "OPENROUTER_API_KEY"}.get(provider, f"{provider.upper()}_API_KEY")
    keyed = [name for name in TIERS if provider_credentials(settings, name, env).api_key]
    hint = other_model_hint(provider, keyed) or " Or pick another model with /model."
    config = paths.config_dir(env) / "config.yaml"
    return (f"No API key for {provider} (model {model}). Set {var}, or add `providers: {{{provider}: "
            f"{{api_key: …}}}}` to {config}.{hint}")
