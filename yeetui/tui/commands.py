"""Slash commands: the built-in ones, plus one per profile with a `slash` trigger. Pure data + parsing;
the main screen carries them out (`cmd_<name>` methods in yeetui.tui.slash)."""

from __future__ import annotations

from dataclasses import dataclass

from yeetui.profiles import ProfileSet


@dataclass(frozen=True)
class SlashCommand:
    name: str
    """Without the slash: `oracle`."""
    usage: str
    help: str
    handler: str
    """`cmd_<handler>` on the screen; profile triggers use `profile`."""
    profile: str | None = None


BUILTIN: tuple[SlashCommand, ...] = (
    SlashCommand("help", "/help", "keys and commands", "help"),
    SlashCommand("new", "/new", "start a new session", "new"),
    SlashCommand("sessions", "/sessions", "open the session switcher", "sessions"),
    SlashCommand("inbox", "/inbox", "show or hide the inbox", "inbox"),
    SlashCommand("agents", "/agents", "list agent profiles", "agents"),
    SlashCommand("model", "/model [provider/model]", "show or set this session's model", "model"),
    SlashCommand("compact", "/compact", "summarise the conversation to free context", "compact"),
    SlashCommand("cancel", "/cancel [run]", "stop a subagent (label like oracle#4, or run id)", "cancel"),
    SlashCommand("oracle", "/oracle <question>", "ask the read-only oracle", "oracle"),
    SlashCommand("review", "/review [target]", "review the working tree or a ref/range", "review"),
    SlashCommand("pair", "/pair", "toggle the pair-programmer watcher", "pair"),
    SlashCommand("orchestrate", "/orchestrate <goal>", "plan → build → review with subagents", "orchestrate"),
    SlashCommand("theme", "/theme [name]", "switch the theme (remembered)", "theme"),
    SlashCommand("quit", "/quit", "leave yeetui", "quit"),
)


def all_commands(profiles: ProfileSet | None) -> list[SlashCommand]:
    """Built-ins first; a profile's slash trigger adds a command unless a built-in has that name."""
    commands = list(BUILTIN)
    taken = {c.name for c in commands}
    for profile in (profiles.profiles.values() if profiles else ()):
        slash = profile.triggers.slash
        if slash and slash.lstrip("/") not in taken:
            name = slash.lstrip("/")
            commands.append(SlashCommand(name, f"{slash} <task>", profile.description or f"run {profile.name}",
                                         "profile", profile=profile.name))
            taken.add(name)
    return commands


def parse(text: str) -> tuple[str, str] | None:
    """`/oracle why?` → ("oracle", "why?"); None when `text` is not a slash command."""
    if not text.startswith("/") or text.startswith("//"):
        return None
    head, _, rest = text[1:].partition(" ")
    return head.strip().lower(), rest.strip()


def suggest(name: str, commands: list[SlashCommand]) -> list[str]:
    """Close names for an unknown command (prefix or subsequence matches)."""
    names = [c.name for c in commands]
    close = [n for n in names if n.startswith(name[:2])] or [n for n in names if _subsequence(name, n)]
    return close[:4]


def _subsequence(needle: str, hay: str) -> bool:
    it = iter(hay)
    return all(ch in it for ch in needle)
