"""The slash commands: one table of them (`all_commands`), what each does, and how a typed one is run.

A command is a `SlashCommand` record whose handler gets the main screen through `CommandScreen` (see
yeetui.tui.commands) and the text typed after the name. The table is the built-in commands, then one per
profile with a `slash` trigger; /help, the command palette (ctrl+p), the composer's completion and the
suggestions for a mistyped name all read it.

This module must not import yeetui.tui.screens (the main screen imports it). Domain modules are imported
inside the handlers that need them, like the rest of the TUI's command paths.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from yeetui.application.commands import CommandFile, placed_commands
from yeetui.application.runs import command_budget
from yeetui.application.worktrees import Strategy
from yeetui.errors import YeetuiError
from yeetui.events import RunStatus
from yeetui.store.records import WorktreeRecord
from yeetui.text import clip_words, one_line
from yeetui.tui.commands import CommandScreen, Handler, SlashCommand, suggest
from yeetui.tui.textual_workarounds import app_bindings
from yeetui.tui.themes import save_theme

if TYPE_CHECKING:
    from yeetui.application.runs import Pane
    from yeetui.definitions.profiles import ProfileSet

COMPOSER_KEYS: tuple[tuple[str, str], ...] = (
    ("enter", "send"), ("ctrl+j / shift+enter", "new line"), ("up / down", "history"),
)
"""The composer's own keys, listed in /help after the app's bindings."""
PANEL_KEYS: tuple[tuple[str, str], ...] = (
    ("ledger: enter", "open the run's session (tab moves to the ledger)"),
    ("ledger: alt+s", "steer: open its session to type guidance"),
    ("ledger: alt+c", "ask the run to wrap up (asks first)"), ("ledger: alt+x", "stop the run now (asks first)"),
    ("ledger: alt+t", "watch the run's tmux pane"), ("ledger: alt+e", "show the run's tmux pane inside yeetui"),
    ("inbox: enter", "open the item's session"), ("inbox: alt+a", "accept a pair's interjection"),
    ("inbox: alt+d", "dismiss"), ("inbox: alt+r", "reply to it from the composer"),
    ("inbox: alt+m", "merge its agent's worktree branch into your branch (asks first)"),
    ("inbox: alt+w", "open a shell in its agent's worktree"),
)
"""Keys of the ledger and inbox panels (their BINDINGS; tests/tui checks the two agree). A letter typed
while a panel has the focus goes into the composer."""


async def run_slash(screen: CommandScreen, name: str, args: str, *, typed: str = "") -> None:
    """Run the command `name` with `args`; an unknown name or a refusal is shown as a notice. `typed`: what
    the user sent, put back in the composer when the command is unknown (nothing typed is lost)."""
    command = next((c for c in screen.commands if c.name == name), None)
    if command is None:
        close = suggest(name, screen.commands)
        hint = f" Did you mean {', '.join('/' + c for c in close)}?" if close else ""
        kept = ""
        if typed:
            screen.give_back(typed)
            kept = " Nothing was sent: your text is back in the composer."
        await screen.notice("warning", f"Unknown command /{name}.{hint}{kept} Type /help for the list.")
        return
    try:
        await command.handler(screen, args)
    except YeetuiError as exc:
        await screen.notice("error", str(exc))


def palette_action(screen: CommandScreen, command: SlashCommand) -> Callable[[], Awaitable[None]]:
    """What choosing `command` in the command palette does: fill the composer in, or run it."""
    async def run() -> None:
        if command.palette_prefills:
            screen.prefill(f"/{command.name} ")
        else:
            await run_slash(screen, command.name, "")
    return run


async def _text_given(screen: CommandScreen, args: str, usage: str) -> bool:
    """True when the command got text; otherwise says how to use it."""
    if args:
        return True
    await screen.notice("warning", f"Usage: {usage}")
    return False


# -- the built-in commands ---------------------------------------------------------------------------


async def _help(screen: CommandScreen, args: str) -> None:
    app = screen.app
    keys = [(app.get_key_display(b), b.description or b.action) for b in app_bindings(app) if b.description]
    await screen.show_help([*keys, *COMPOSER_KEYS, *PANEL_KEYS], [(c.usage, c.help) for c in screen.commands])


async def _new(screen: CommandScreen, args: str) -> None:
    await screen.new_session()


async def _sessions(screen: CommandScreen, args: str) -> None:
    await screen.open_switcher()


async def _inbox(screen: CommandScreen, args: str) -> None:
    screen.toggle_inbox()


INBOX_WIDTH = 38
"""Columns the inbox takes beside the conversation on a wide terminal (main.tcss)."""


async def _agents(screen: CommandScreen, args: str) -> None:
    """One line per profile, its description cut after a whole word (…) to fit the conversation's width,
    so nothing wraps mid-phrase into the next profile's columns."""
    profiles = list(screen.surface.profiles.profiles.values())
    width = screen.app.size.width
    room = width - (INBOX_WIDTH if width >= 100 else 0) - 7  # scrollbar, the notice's padding and icon
    names = max((len(p.name) for p in profiles), default=0) + 2
    caps = max((len(", ".join(p.capabilities)) for p in profiles), default=0) + 2
    lines = [f"{p.name:<{names}}{', '.join(p.capabilities):<{caps}}"
             f"{clip_words(one_line(p.description), max(room - names - caps, 12))}" for p in profiles]
    await screen.notice("info", "Agent profiles:\n" + "\n".join(line.rstrip() for line in lines))


def model_choices(screen: CommandScreen) -> list[tuple[str, str]]:
    """(model, note) for the /model picker: each tier of every provider in the tiers table the user has a
    key for, the tiers config overrides, and the model in use."""
    return screen.surface.models.choices(screen.model or screen.surface.settings.model)


async def _model(screen: CommandScreen, args: str) -> None:
    if not args:
        current = screen.model or screen.surface.settings.model

        async def picked(model: str | None) -> None:
            if model and model != current:
                await _model(screen, model)

        screen.pick("models of your configured providers", model_choices(screen), current, picked)
        return
    if (problem := screen.surface.models.problem(args)) is not None:
        await screen.notice("error", f"{problem} The model stays {screen.model or screen.surface.settings.model}.")
        return
    await screen.set_model(args)
    await screen.notice("info", f"Model set to {args} for this window's sessions.")


async def _compact(screen: CommandScreen, args: str) -> None:
    await screen.notice("info", "Compacting the conversation…")
    summary = await screen.surface.sessions.compact(screen.current or "", model=screen.model)
    await screen.notice("info", f"Compacted: {len(summary)} characters of summary replace the "
                        "earlier turns in the model's context.")


def stop_question(label: str, *, now: bool, queued: bool = False) -> tuple[str, str, str]:
    """(question, detail, yes) of the confirmation before a run is asked to wrap up, or stopped `now`; a
    `queued` run has not started, so either way it just leaves the queue."""
    if queued:
        return (f"Cancel {label}?", "It has not started (it waits for a run slot): it leaves the queue at once.",
                "Cancel it")
    if now:
        return f"Stop {label} now?", "It is stopped at once, in the middle of what it is doing.", "Stop now"
    return (f"Ask {label} to wrap up?", "It finishes its turn and reports; it is stopped in 30 s at the latest.",
            "Wrap up")


async def _cancel(screen: CommandScreen, args: str, *, abort: bool = False) -> None:
    runs = screen.surface.runs  # in this process, in tmux panes, detached: wherever they run
    target = await runs.find_running(args, under_session=screen.current)
    if target is None:
        await screen.notice("warning", f"No running subagent {args!r}." if args else
                            "No running subagent here. Usage: /cancel [oracle#4|run id]")
        return
    now = abort or runs.wrapping_up(target.id)  # `/cancel!`, or a second `/cancel`: stop it now
    queued = target.status == RunStatus.QUEUED

    async def stop() -> None:
        if queued:
            await runs.cancel(target.id, graceful=False)
            await screen.notice("info", f"Cancelled {target.label} before it started.")
            return
        if now:
            await runs.cancel(target.id, graceful=False)
            await screen.notice("info", f"Stopped {target.label}.")
            return
        await runs.cancel(target.id, graceful=True)
        await screen.notice("info", f"Asked {target.label} to wrap up (it is stopped in 30 s at the latest); "
                            "/cancel again or /cancel! stops it now.")

    screen.confirm(*stop_question(target.label or target.profile, now=now, queued=queued), stop)


async def _abort(screen: CommandScreen, args: str) -> None:
    await _cancel(screen, args, abort=True)


_BUDGET_FLAGS = {"--max-cost": ("max_cost", float), "--max-tokens": ("max_tokens", int),
                 "--max-turns": ("max_turns", int), "--max-minutes": ("max_minutes", float)}


class FlagError(ValueError):
    """A spawn flag the user typed wrong (said as a notice; nothing starts)."""


def spawn_flags(args: str) -> tuple[dict[str, Any], str]:
    """Leading flags of a spawning command: `--tmux` (or `--pane`) runs the subagent in a tmux pane; `--max-cost
    USD`, `--max-tokens N`, `--max-turns N`, `--max-minutes M` give it and its own subagents a budget. (spawn
    keywords, the rest). Raises FlagError naming a flag whose value is not a positive number."""
    kw: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    words = args.split(" ")
    while words and words[0].startswith("--"):
        flag = words.pop(0)
        if flag in ("--tmux", "--pane"):
            kw["mode"] = "tmux"
        elif flag in _BUDGET_FLAGS:
            name, kind = _BUDGET_FLAGS[flag]
            value = words.pop(0) if words else ""
            try:
                number = kind(value)
            except ValueError:
                number = 0
            if number <= 0:
                raise FlagError(f"{flag} needs a positive {'whole ' if kind is int else ''}number, not {value!r}.")
            limits[name] = number
        else:
            words.insert(0, flag)
            break
    if limits:
        kw["budget"] = command_budget(**limits)
    return kw, " ".join(words).strip()


async def _flags(screen: CommandScreen, args: str, command: str) -> tuple[dict[str, Any] | None, str]:
    """`spawn_flags`, a mistake said to the user, what they typed back in the composer to mend (None: nothing
    is started)."""
    try:
        return spawn_flags(args)
    except FlagError as exc:
        screen.give_back(f"/{command} {args}")
        await screen.notice("warning", f"{exc} Nothing was started: your text is back in the composer.")
        return None, args


async def _oracle(screen: CommandScreen, args: str) -> None:
    where, args = await _flags(screen, args, "oracle")
    if where is not None and await _text_given(screen, args, "/oracle [--tmux] [--max-cost USD] <question>"):
        await screen.spawn("oracle", args, **where)


async def _review(screen: CommandScreen, args: str) -> None:
    runs = screen.surface.runs
    await screen.show_spawned(await runs.review(parent_session_id=screen.current or "", target=args or None))


async def _worktree(screen: CommandScreen, name: str) -> WorktreeRecord:
    return await screen.surface.worktrees.find(name, within_session=screen.current)


async def _merge(screen: CommandScreen, args: str) -> None:
    words = args.split()
    strategy: Strategy = "squash" if "--squash" in words else "ff" if "--ff" in words else "merge"
    names = [w for w in words if not w.startswith("--")]
    ask_merge(screen, [await _worktree(screen, names[0] if names else "")], strategy)


def ask_merge(screen: CommandScreen, trees: Sequence[WorktreeRecord], strategy: Strategy = "merge") -> None:
    """Ask once whether to merge the branches of `trees` into the user's branch; on a deliberate yes, merge them
    in order, stopping at the first that does not merge."""
    names = ", ".join(wt.label or wt.branch for wt in trees)
    branches = ", ".join(wt.branch for wt in trees)
    detail = (f"{branches} into the branch checked out in {trees[0].repo} ({strategy}); work left uncommitted "
              "in a worktree is committed first.")

    async def merge() -> None:
        for wt in trees:
            await screen.notice("info", f"Merging {wt.branch} into {wt.repo}…")
            outcome = await screen.surface.worktrees.merge(wt, strategy=strategy)
            await screen.notice("info" if outcome.merged else "warning", outcome.message)
            if not outcome.merged:
                return

    screen.confirm(f"Merge {names} into your branch?", detail, "Merge", merge)


async def _discard(screen: CommandScreen, args: str) -> None:
    wt = await _worktree(screen, args.strip())

    async def discard() -> None:
        await screen.surface.worktrees.discard(wt)
        await screen.notice("info", f"Discarded {wt.label or wt.branch}: worktree {wt.path} and branch {wt.branch} "
                            "are removed.")

    screen.confirm(f"Discard {wt.label or wt.branch}'s work?", f"The worktree {wt.path} and its branch {wt.branch} "
                   "are removed, with every change in them.", "Discard", discard)


async def _open(screen: CommandScreen, args: str) -> None:
    """A shell in a subagent's worktree, to look at or finish its work before merging."""
    wt = await _worktree(screen, args.strip())
    await screen.notice("info", await open_worktree_shell(screen, wt, wt.label or wt.branch))


async def open_worktree_shell(screen: CommandScreen, wt: WorktreeRecord, name: str) -> str:
    """A shell in the worktree `wt` of `name`, beside the app (/open, alt+w, the fleet's w); what to say of it."""
    shown = await screen.surface.worktrees.open_shell(wt)
    if shown.how == "command":
        return f"{name}'s worktree (branch {wt.branch}): {shown.detail}"
    where = "beside yeetui" if shown.how == "tmux-split" else f"in {shown.detail}"
    return f"Opened a shell in {name}'s worktree {wt.path} {where} (branch {wt.branch})."


async def _worktrees(screen: CommandScreen, args: str) -> None:
    rows = await screen.surface.worktrees.active_with_state()
    if not rows:
        await screen.notice("info", "No active worktrees.")
        return
    lines = []
    for wt, state in rows:
        work = f"{state.commits} commit(s)" + (f", {len(state.changed)} uncommitted" if state.dirty else "")
        lines.append(f"{wt.label or wt.id[:8]:<12} {wt.branch:<36} {work}")
    await screen.notice("info", "Worktrees (/merge NAME, /discard NAME):\n" + "\n".join(lines))


async def _attach(screen: CommandScreen, args: str) -> None:
    """Show a pane child's tmux window: a split of the user's tmux, a terminal window, or the command."""
    name = args.strip()
    run = await screen.surface.runs.find_in_pane(name)
    if run is None:
        await screen.notice("warning", f"No run in a tmux pane{f' named {name!r}' if name else ''}. Start one with "
                            "/oracle --tmux <question>, or set `mode: tmux` in a profile.")
        return
    pane = await screen.surface.runs.pane_of(run)
    if pane is None:
        await screen.notice("warning", f"The tmux window of {run.label or run.profile} is gone.")
        return
    await screen.notice("info", await show_pane(screen, pane, run.label or run.profile))


async def show_pane(screen: CommandScreen, pane: Pane, label: str) -> str:
    """Put `label`'s tmux window in front of the user (/attach, alt+t, the fleet's t); what to say of it."""
    shown = await screen.surface.runs.show_pane(pane)
    return {"tmux-split": f"{label} is in the split on the right (its own tmux: detach with the prefix key, d).",
            "tmux-window": f"{label} is in a new window of your tmux.",
            "terminal": f"{label} opened in a new {shown.detail} window.",
            "command": f"Watch {label} from another terminal: {shown.detail}"}[shown.how]


async def _embed(screen: CommandScreen, args: str) -> None:
    """Show a pane child's tmux window inside the TUI; `/embed` alone closes the one shown."""
    name = args.strip()
    if not name:
        await screen.embed(None)
        return
    run = await screen.surface.runs.find_in_pane(name)
    pane = await screen.surface.runs.pane_of(run) if run is not None else None
    if run is None or pane is None:
        await screen.notice("warning", f"No tmux pane of {name!r} to show. /attach lists how to watch panes.")
        return
    await screen.embed(pane, run.label or run.profile)


async def _send(screen: CommandScreen, args: str) -> None:
    """`/send oracle#2 and the cache?`: a running subagent reads it at its next turn; a finished one goes on with
    it in its own session, with its earlier context, and its answer comes back as its first did."""
    name, _, text = args.strip().partition(" ")
    if not name or not text.strip():
        await screen.notice("warning", "Usage: /send <agent> <message>, e.g. /send oracle#2 and the cache?")
        return
    try:
        run = await screen.surface.runs.resolve(name)
    except YeetuiError as exc:
        await screen.notice("warning", str(exc))
        return
    session = await screen.surface.sessions.get(run.session_id)
    if session is not None:
        await screen.send_to(session, text.strip())


SCHEDULE_USAGE = ('/schedule [list] · /schedule add "<cron>"|every 30m <profile> <prompt> [--yes] [--missed once] · '
                  "/schedule pause|resume|remove|run-now <id>")


async def _schedule(screen: CommandScreen, args: str) -> None:
    """Scheduled agents of this project, as `yeetui schedule` has them (fired while any yeetui runs)."""
    from yeetui.application.schedules import describe_fire, describe_spec, describe_state, local_time

    scheduler = screen.surface.schedules
    words = args.split()
    action = words[0] if words else "list"
    if action == "list":
        listing = await scheduler.listing()
        if not listing:
            await screen.notice("info", f"No schedules. {SCHEDULE_USAGE}")
            return
        lines = [f"{s.id}  {describe_spec(s.spec):<18} {s.profile:<12} {describe_state(s)} · "
                 f"last {describe_fire(fire)} · {clip_words(one_line(s.prompt), 50)}" for s, fire in listing]
        await screen.notice("info", "Schedules:\n" + "\n".join(lines))
    elif action == "add":
        parsed = _schedule_words(args.strip()[len("add"):])
        if isinstance(parsed, str):
            await screen.notice("warning", f"{parsed} Usage: {SCHEDULE_USAGE}")
            return
        when, profile, prompt, approve, missed = parsed
        try:
            schedule = await scheduler.add(project_dir=screen.surface.project_dir, when=when, profile=profile,
                                           prompt=prompt, missed=missed, approve=approve)
        except YeetuiError as exc:
            await screen.notice("warning", str(exc))
            return
        await screen.notice("info", f"Schedule {schedule.id}: {profile} {schedule.spec!r}, next at "
                            f"{local_time(schedule.next_at)}. It fires while `yeetui schedule daemon` or any "
                            "yeetui app runs; its runs show in the fleet (ctrl+g).")
    elif action in ("pause", "resume", "remove", "run-now") and len(words) == 2:
        if action == "run-now":
            run_id = await scheduler.run_now(words[1])
            await screen.notice("info", f"Schedule {words[1]}: started run {run_id[:12]} (ctrl+g shows it).")
            return
        done = await {"pause": scheduler.pause, "resume": scheduler.resume, "remove": scheduler.remove}[action](
            words[1])
        said = {"pause": "paused", "resume": f"resumed; next at {local_time(done.next_at)}",
                "remove": "removed"}[action]
        await screen.notice("info", f"Schedule {done.id} {said}.")
    else:
        await screen.notice("warning", f"Usage: {SCHEDULE_USAGE}")


def _schedule_words(text: str) -> tuple[str, str, str, bool, str] | str:
    """`"0 7 * * 1-5" reviewer review yesterday's commits --yes`: (when, profile, prompt, --yes, --missed), or
    what is wrong. The time is quoted, `every 30m`, or five cron fields; the prompt is the rest (an apostrophe in
    it is text); `--yes` and `--missed skip|once` may stand anywhere after the time."""
    text = text.strip()
    if text[:1] in ("'", '"'):
        close = text.find(text[0], 1)
        if close < 0:
            return "The quoted time has no closing quote."
        when, rest = text[1:close], text[close + 1:]
    else:
        words = text.split()
        count = 2 if words[:1] == ["every"] else 5
        when, rest = " ".join(words[:count]), " ".join(words[count:])
    words, approve, missed = rest.split(), False, "skip"
    kept: list[str] = []
    at = 0
    while at < len(words):
        if words[at] == "--yes":
            approve = True
        elif words[at] == "--missed" and at + 1 < len(words):
            missed, at = words[at + 1], at + 1
        else:
            kept.append(words[at])
        at += 1
    if len(kept) < 2:
        return "Give the time, a profile and a prompt."
    return when, kept[0], " ".join(kept[1:]), approve, missed


async def _pair(screen: CommandScreen, args: str) -> None:
    await screen.toggle_pair()


async def _orchestrate(screen: CommandScreen, args: str) -> None:
    where, args = await _flags(screen, args, "orchestrate")
    if where is not None and await _text_given(screen, args, "/orchestrate [--tmux] [--max-cost USD] <goal>"):
        await screen.spawn("orchestrator", args, **where)


async def _theme(screen: CommandScreen, args: str) -> None:
    app = screen.app
    names = sorted(app.available_themes)
    if not args:
        async def picked(name: str | None) -> None:
            if name and name != app.theme:
                await _theme(screen, name)

        screen.pick("themes", [(name, "") for name in names], app.theme, picked)
        return
    if args not in app.available_themes:
        await screen.notice("warning", f"No theme {args!r}. Available: {', '.join(names)}")
        return
    app.theme = args
    save_theme(args)
    await screen.notice("info", f"Theme set to {args} (remembered for next time).")


async def _mcp(screen: CommandScreen, args: str) -> None:
    """Every MCP server with its state here: connected, failed and why, waiting for approval and how to give it."""
    await screen.notice("info", await screen.surface.mcp.overview())


async def _quit(screen: CommandScreen, args: str) -> None:
    screen.app.exit()


def builtin_commands() -> tuple[SlashCommand, ...]:
    """The commands every window has, in the order /help lists them."""
    return (
        SlashCommand("help", "/help", "keys and commands", _help),
        SlashCommand("new", "/new", "start a new session", _new),
        SlashCommand("clear", "/clear", "start a new session (as /new; Claude Code's name)", _new),
        SlashCommand("sessions", "/sessions", "open the session switcher", _sessions),
        SlashCommand("inbox", "/inbox", "show or hide the inbox", _inbox),
        SlashCommand("agents", "/agents", "list agent profiles", _agents),
        SlashCommand("model", "/model [provider/model]", "set this window's model (alone: pick from a list)", _model),
        SlashCommand("compact", "/compact", "summarise the conversation to free context", _compact),
        SlashCommand("cancel", "/cancel [run]", "ask a subagent to wrap up (label like oracle#4, or run id); "
                     "again: stop it now", _cancel),
        SlashCommand("cancel!", "/cancel! [run]", "stop a subagent now", _abort),
        SlashCommand("oracle", "/oracle [--tmux] <question>", "ask the read-only oracle (--tmux: in a pane)", _oracle,
                     palette_prefills=True),
        SlashCommand("review", "/review [commit|range]", "review the working tree, a commit or a range (HEAD~2..)",
                     _review),
        SlashCommand("merge", "/merge [builder#1] [--squash|--ff]", "merge a subagent's worktree branch into "
                     "your branch", _merge),
        SlashCommand("discard", "/discard [builder#1]", "throw a subagent's worktree and branch away", _discard),
        SlashCommand("worktrees", "/worktrees", "list the worktrees subagents work in", _worktrees),
        SlashCommand("open", "/open [builder#1]", "open a shell in a subagent's worktree", _open),
        SlashCommand("attach", "/attach [oracle#1]", "watch a subagent's tmux pane", _attach),
        SlashCommand("embed", "/embed [oracle#1]", "show a subagent's tmux pane inside yeetui (alone: close it)",
                     _embed),
        SlashCommand("pair", "/pair", "toggle the pair-programmer watcher", _pair),
        SlashCommand("schedule", "/schedule [add|pause|resume|remove|run-now]",
                     "agents on a schedule: list them, add one (cron or every 30m), pause, run now", _schedule),
        SlashCommand("send", "/send <agent> <message>", "message a subagent (a finished one goes on with it)",
                     _send),
        SlashCommand("orchestrate", "/orchestrate <goal>", "plan → build → review with subagents", _orchestrate,
                     palette_prefills=True),
        SlashCommand("mcp", "/mcp", "MCP servers: which connected, which failed and why, which wait for "
                     "your approval", _mcp),
        SlashCommand("theme", "/theme [name]", "switch the theme, remembered (alone: pick from a list)", _theme),
        SlashCommand("quit", "/quit", "leave yeetui", _quit),
    )


# -- one command per profile with a slash trigger ----------------------------------------------------


def _run_profile(profile: str, name: str, usage: str) -> Handler:
    async def run(screen: CommandScreen, args: str) -> None:
        where, args = await _flags(screen, args, name)
        if where is not None and await _text_given(screen, args, usage):
            await screen.spawn(profile, args, **where)
    return run


def profile_commands(profiles: ProfileSet | None, taken: set[str]) -> list[SlashCommand]:
    """One command per profile whose `slash` trigger names no command in `taken` (nor an earlier profile's).
    From the palette these run at once, so an empty one shows its usage."""
    commands: list[SlashCommand] = []
    taken = set(taken)
    for profile in (profiles.profiles.values() if profiles else ()):
        slash = profile.triggers.slash
        if slash and (name := slash.lstrip("/")) not in taken:
            usage = f"{slash} <task>"
            commands.append(SlashCommand(name, usage, profile.description or f"run {profile.name}",
                                         _run_profile(profile.name, name, usage)))
            taken.add(name)
    return commands


# -- one command per command file (Claude Code, OpenCode, the user's) ---------------------------------


def _run_file(command: CommandFile) -> Handler:
    async def run(screen: CommandScreen, args: str) -> None:
        prompt = command.expand(args)
        if command.agent and command.agent in screen.surface.profiles:
            await screen.spawn(command.agent, prompt)
        else:
            await screen.send_prompt(prompt)  # always a prompt: never a `!` shell line, a command or `@` delegation
    return run


def file_commands(files: Sequence[CommandFile], taken: set[str]) -> tuple[list[SlashCommand], list[str]]:
    """A command per file; a name already taken keeps its meaning (the file gets `folder:name`)."""
    placed, warnings = placed_commands(files, taken)
    commands = []
    for command in placed:
        usage = f"/{command.name}" + (f" {command.argument_hint}" if command.argument_hint else "")
        origin = f"({command.source.parent.name}/{command.source.name})"
        commands.append(SlashCommand(command.name, usage, f"{command.description or 'prompt'} {origin}",
                                     _run_file(command)))
    return commands, warnings


def all_commands(profiles: ProfileSet | None,
                 files: Sequence[CommandFile] = ()) -> tuple[list[SlashCommand], list[str]]:
    """The table: built-ins first; a profile's slash trigger adds a command unless a built-in has that name; then
    the command files. Also what was renamed or skipped, to say at start."""
    builtins = builtin_commands()
    table = [*builtins, *profile_commands(profiles, {c.name for c in builtins})]
    from_files, warnings = file_commands(files, {c.name for c in table})
    return [*table, *from_files], warnings
