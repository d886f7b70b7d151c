"""Command line: `yeetui run`, `sessions`, `profiles`, `agents`, `worktrees`, `trust`, `doctor`, `mcp`, `acp`,
`--version`.

Only argparse is imported at module level, so `yeetui --version` and `--help` stay fast; each command
imports what it needs.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from yeetui import __version__
from yeetui.application.process import is_warm_server, protect_process, serve_warm_workers, start_warm
from yeetui.cli.exit_codes import exit_codes_text
from yeetui.heavy_imports import gc_paused

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction["_Parser"]
    """What `add_subparsers` returns (argparse names it only privately)."""
else:
    Subparsers = Any


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"yeetui: error: {message}\n")


TRUST_HELP = ("trust this project first, as `yeetui trust` does (remembered): its agent files and config may then "
              "widen rights; what they grant is listed on stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="yeetui", description="A terminal app for LLM coding agents built around subagents.",
                     epilog=exit_codes_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"yeetui {__version__}")
    _add_tui_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = sub.add_parser("run", help="run one prompt headless and print the result")
    run.add_argument("prompt", nargs="?", help="the task (omit with --resume to just continue)")
    run.add_argument("--profile", "-p", help="agent profile (default: the primary profile, generic)")
    run.add_argument("--model", "-m", dest="run_model", help="model as provider/model")
    run.add_argument("--json", action="store_true", help="print one JSON event per line, the last a result")
    run.add_argument("--yes", "-y", action="store_true", help="allow tool calls that would ask permission")
    run.add_argument("--trust", action="store_true", help=TRUST_HELP)
    run.add_argument("--resume", metavar="SESSION", help="continue this session (id or unique prefix)")
    run.add_argument("--continue", dest="cont", action="store_true",
                     help="continue the latest session that has messages")
    _add_budget(run)

    sessions = sub.add_parser("sessions", help="list and show sessions")
    ssub = sessions.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=_Parser)
    slist = ssub.add_parser("list", help="recent sessions with their latest run")
    slist.add_argument("--json", action="store_true")
    slist.add_argument("--limit", type=int, default=50)
    sshow = ssub.add_parser("show", help="a session's runs and transcript")
    sshow.add_argument("id")
    sshow.add_argument("--json", action="store_true")

    profiles = sub.add_parser("profiles", help="list, show and validate agent profiles")
    psub = profiles.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=_Parser)
    plist = psub.add_parser("list", help="every profile and where it comes from")
    plist.add_argument("--json", action="store_true")
    pshow = psub.add_parser("show", help="one profile, merged")
    pshow.add_argument("name")
    pshow.add_argument("--json", action="store_true")
    pval = psub.add_parser("validate", help="check profile files (all, or one PATH)")
    pval.add_argument("path", nargs="?")
    pval.add_argument("--json", action="store_true")
    pval.add_argument("--strict", action="store_true", help="exit non-zero on warnings too")
    trust = sub.add_parser("trust", help="trust this project: its agent files and config may then widen rights")
    trust.add_argument("path", nargs="?", help="the project directory (default: the current one)")
    trust.add_argument("--revoke", action="store_true", help="stop trusting it")
    trust.add_argument("--json", action="store_true")
    doctor = sub.add_parser("doctor", help="what this machine gives yeetui: the bash sandbox, tmux, keys, trust")
    doctor.add_argument("--json", action="store_true")
    mcp = sub.add_parser("mcp", help="the MCP servers your config files define (Claude Code, OpenCode, Cursor, "
                         "Codex, Gemini, yeetui), and approving a project's")
    msub = mcp.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=_Parser)
    mlist = msub.add_parser("list", help="every server: where it is defined, what it runs, whether it may start")
    mlist.add_argument("--json", action="store_true")
    mlist.add_argument("--check", action="store_true",
                       help="start each server that may start, list its tools, and stop it again")
    mlist.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                       help="with --check: how long a server has to start (default 30)")
    mapprove = msub.add_parser("approve", help="let a server a project file defines start, exactly as it is now")
    mapprove.add_argument("names", nargs="+", metavar="NAME")
    mapprove.add_argument("--json", action="store_true")
    mserve = msub.add_parser("serve", help="serve yeetui's subagents as MCP tools (spawn, wait, result, …) on stdio, "
                             "or with --http on loopback")
    mserve.add_argument("--http", action="store_true",
                        help="streamable HTTP instead of stdio; every request needs the bearer token "
                             "(YEETUI_MCP_TOKEN, else one printed at start)")
    mserve.add_argument("--host", default="127.0.0.1", help="with --http: the address (default 127.0.0.1)")
    mserve.add_argument("--port", type=int, default=0, help="with --http: the port (default: any free one)")
    mserve.add_argument("--no-token", action="store_true",
                        help="refused with --http (any local user could use the server): set YEETUI_MCP_TOKEN and "
                             "send it as a bearer token instead")
    sub.add_parser("acp", help="serve yeetui as an Agent Client Protocol agent on stdio (for Zed, JetBrains, any "
                   "ACP client): run it as the agent's command")
    mrevoke = msub.add_parser("revoke", help="withdraw the approval of a project's server")
    mrevoke.add_argument("names", nargs="+", metavar="NAME")
    mrevoke.add_argument("--json", action="store_true")
    mlogin = msub.add_parser("login", help="sign in to a remote server that asks for OAuth: its page opens in your "
                             "browser (and its address is printed); the token is kept for yeetui's connections")
    mlogin.add_argument("name", metavar="NAME", nargs="?", help="a configured server (or give --url)")
    mlogin.add_argument("--url", help="the server's URL, when it is not configured (or to try one before)")
    mlogin.add_argument("--no-browser", action="store_true", help="only print the page's address")
    mlogin.add_argument("--client-id", help="the client id the server's owner gave you (instead of registering)")
    mlogin.add_argument("--client-secret-env", metavar="VAR", help="the variable holding that client's secret "
                        "(never on the command line, where other users' `ps` would see it)")
    mlogout = msub.add_parser("logout", help="forget the token and registration of a server you signed in to")
    mlogout.add_argument("name", metavar="NAME", nargs="?")
    mlogout.add_argument("--url")
    _add_agents(sub)
    _add_worktrees(sub)
    _add_schedule(sub)
    fleet = sub.add_parser("fleet", help="every run of every project here: what needs you, what works, what is done")
    fleet.add_argument("--json", action="store_true")
    fleet.add_argument("--print", action="store_true", help="print the listing once instead of the full screen")
    fleet.add_argument("--limit", type=_positive(int), default=500,
                       help="done runs listed, newest first (the counts and needs you cover every run)")
    return parser


def _add_tui_options(parser: argparse.ArgumentParser) -> None:
    """The options of `yeetui` alone (the TUI)."""
    parser.add_argument("--model", help="model for this run, as provider/model")
    parser.add_argument("--continue", dest="cont", action="store_true",
                        help="open the TUI on the latest conversation that has messages")
    parser.add_argument("--resume", metavar="SESSION", help="open the TUI on this session (id or unique prefix)")


class _NotTheTui(Exception):
    """What the TUI's own parser cannot read: the full parser reads it (and says what is wrong)."""


class _TuiParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _NotTheTui(message)


def tui_args(argv: Sequence[str]) -> argparse.Namespace | None:
    """`yeetui` with at most the TUI's own options, parsed without building every command's parser (~13 ms of
    the start-up, 2-core machine); None for anything else — a command, --help, --version, a mistake — which
    `build_parser` reads."""
    parser = _TuiParser(prog="yeetui", add_help=False)
    _add_tui_options(parser)
    try:
        args, rest = parser.parse_known_args(list(argv))
    except _NotTheTui:
        return None
    if rest:
        return None
    args.command = None
    return args


def _positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
        return value

    return parse


def _add_agents(sub: Subparsers) -> None:
    agents = sub.add_parser("agents", help="start, list, inspect, cancel and resume subagent runs")
    asub = agents.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=_Parser)
    start = asub.add_parser("start", help="start PROFILE on PROMPT in a detached process (or --wait for it)")
    start.add_argument("profile")
    start.add_argument("prompt")
    start.add_argument("--wait", action="store_true", help="run here and print the result instead of detaching")
    start.add_argument("--json", action="store_true")
    start.add_argument("--model", "-m", dest="agent_model", help="model as provider/model")
    start.add_argument("--context", default="none", metavar="SPEC",
                       help="context for the task: none, file:<path>, session_id:<id>, …")
    start.add_argument("--timeout", type=_positive(float), metavar="S", help="seconds before the run is stopped")
    start.add_argument("--label", metavar="L", help="a title for the run's session")
    start.add_argument("--yes", "-y", action="store_true", help="allow tool calls that would ask permission")
    asks = start.add_mutually_exclusive_group()
    asks.add_argument("--ask-timeout", type=_positive(float), metavar="S",
                      help="without --yes, a detached run's permission question waits for an answer in `yeetui "
                           "fleet` or any yeetui TUI; after S seconds unanswered it is refused (default: it waits "
                           "as long as the run's own timeout allows)")
    asks.add_argument("--refuse-asks", action="store_true",
                      help="refuse every tool call that would ask permission at once, as `yeetui run` does")
    start.add_argument("--trust", action="store_true", help=TRUST_HELP)
    _add_budget(start)
    alist = asub.add_parser("list", help="live and recently finished runs")
    alist.add_argument("--json", action="store_true")
    alist.add_argument("--all", action="store_true", help="every run, not only live and recent ones")
    status = asub.add_parser("status", help="one run's record and result")
    status.add_argument("id")
    status.add_argument("--json", action="store_true")
    send = asub.add_parser("send", help="message a subagent: a running one reads it at its next turn; a finished "
                                        "one goes on with it in its own session, here, and its answer is printed")
    send.add_argument("id", help="run id, unique prefix, or label (oracle#2)")
    send.add_argument("message")
    send.add_argument("--json", action="store_true")
    send.add_argument("--yes", "-y", action="store_true", help="allow tool calls that would ask permission")
    send.add_argument("--ask-anywhere", action="store_true",
                      help="a finished run's follow-up: its permission questions wait for an answer in `yeetui "
                           "fleet` or any yeetui app instead of being refused")
    send.add_argument("--trust", action="store_true", help=TRUST_HELP)
    steer = asub.add_parser("steer", help="send guidance to a running run (read at its next turn)")
    steer.add_argument("id")
    steer.add_argument("message")
    steer.add_argument("--json", action="store_true")
    cancel = asub.add_parser("cancel", help="cancel a queued or running run")
    cancel.add_argument("id")
    cancel.add_argument("--json", action="store_true")
    history = asub.add_parser("history", help="finished runs, newest first")
    history.add_argument("--json", action="store_true")
    history.add_argument("--limit", type=_positive(int), default=20, metavar="N")
    resume = asub.add_parser("resume", help="continue an interrupted run (detached, or --wait)")
    resume.add_argument("id")
    resume.add_argument("--wait", action="store_true")
    resume.add_argument("--json", action="store_true")
    resume.add_argument("--yes", "-y", action="store_true", help="with --wait: allow tool calls that would ask")

    worker = sub.add_parser("agent")  # hidden: no help, so it is not listed
    wsub = worker.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=_Parser)
    wrun = wsub.add_parser("run")
    wrun.add_argument("--run-id", required=True)
    wrun.add_argument("--resume", action="store_true")
    wrun.add_argument("--env-file", help="read the environment from this JSON file, then remove it")
    wrun.add_argument("--show", action="store_true", help="print progress and the answer (in a tmux pane)")
    wsub.add_parser("leave-panes")  # a yeetui that used the tmux server died: tidy it if nobody else uses it


def _add_schedule(sub: Subparsers) -> None:
    schedule = sub.add_parser("schedule", help="agents that run on a schedule: add, list, pause, resume, remove, "
                                               "run-now, daemon")
    ssub = schedule.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=_Parser)
    add = ssub.add_parser("add", help="run PROFILE on PROMPT at WHEN (cron, or 'every 30m')")
    add.add_argument("when", help="a cron expression ('0 7 * * 1-5', local time) or 'every 30m' / '2h' / '1d'")
    add.add_argument("prompt")
    add.add_argument("--profile", "-p", required=True)
    add.add_argument("--missed", choices=("skip", "once"), default="skip",
                     help="a trigger missed while no yeetui ran: skip it (default) or run once on wake")
    add.add_argument("--yes", "-y", action="store_true", help="its runs may make tool calls that would ask")
    add.add_argument("--json", action="store_true")
    _add_budget(add)
    listing = ssub.add_parser("list", help="the schedules, their next trigger and their last run")
    listing.add_argument("--json", action="store_true")
    for name, text in (("pause", "stop firing it"), ("resume", "fire it again, from its next trigger"),
                       ("remove", "delete it"), ("run-now", "start its run now")):
        one = ssub.add_parser(name, help=text)
        one.add_argument("id")
        one.add_argument("--json", action="store_true")
    daemon = ssub.add_parser("daemon", help="fire due schedules until stopped (a foreground process)")
    daemon.add_argument("--interval", type=_positive(float), default=5.0, help="seconds between looks")
    daemon.add_argument("--once", action="store_true", help="look once and exit")


def _add_budget(parser: argparse.ArgumentParser) -> None:
    """What the run and every subagent it starts may spend together; reaching a limit halts them all."""
    group = parser.add_argument_group("budget (the run and all its subagents together; a limit halts them all)")
    group.add_argument("--max-cost", type=_positive(float), metavar="USD", help="US dollars")
    group.add_argument("--max-tokens", type=_positive(int), metavar="N", help="input plus output tokens")
    group.add_argument("--max-turns", type=_positive(int), metavar="N", help="model requests")
    group.add_argument("--max-minutes", type=_positive(float), metavar="M", help="minutes of wall-clock time")


def _add_worktrees(sub: Subparsers) -> None:
    wt = sub.add_parser("worktrees", help="git worktrees agents work in: list, merge, discard, clean up")
    wsub = wt.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=_Parser)

    def command(name: str, text: str, *, ident: bool = True) -> argparse.ArgumentParser:
        parser = wsub.add_parser(name, help=text)
        if ident:
            parser.add_argument("id", help="worktree id or unique prefix")
        parser.add_argument("--json", action="store_true")
        return parser

    create = command("create", "a new worktree on a new branch, from HEAD (or --base)", ident=False)
    create.add_argument("task", help="what it is for; names the branch")
    create.add_argument("--base", metavar="REV", help="start from this revision instead of HEAD")
    create.add_argument("--prefix", default="yeetui/", help="branch prefix (default: yeetui/)")
    create.add_argument("--clone", action="store_true", help="a local clone instead of a worktree")
    create.add_argument("--session", metavar="ID", help="the session that owns it")
    listing = command("list", "worktrees of every repository", ident=False)
    listing.add_argument("--all", action="store_true", help="also merged, discarded and deleted ones")
    command("show", "one worktree: where, which branch, what is in it")
    claim = command("claim", "give a worktree to a session (refused while another holds it)")
    claim.add_argument("session", help="session id or unique prefix")
    command("release", "a worktree belongs to no session any more")
    sync = command("sync", "bring a worktree up to date with its checkout's HEAD (rebase; --merge to merge)")
    sync.add_argument("--merge", action="store_true")
    merge = command("merge", "merge a worktree's branch into the checkout it came from, then remove it")
    how = merge.add_mutually_exclusive_group()
    how.add_argument("--ff", action="store_true", help="fast-forward only")
    how.add_argument("--squash", action="store_true", help="one commit with all of its changes")
    merge.add_argument("--message", "-m", help="the merge (or squash) commit's message")
    command("discard", "throw a worktree's work away: remove it and its branch")
    delete = command("delete", "remove a worktree and its branch (refused with work in it unless --force)")
    delete.add_argument("--force", action="store_true")
    stale = command("stale", "worktrees untouched for a while whose session runs nothing", ident=False)
    stale.add_argument("--hours", type=float, default=24.0)
    cleanup = command("cleanup", "remove what is merged, discarded or stale with nothing in it (dry run "
                      "unless --apply)", ident=False)
    cleanup.add_argument("--apply", action="store_true", help="remove them (default: only list them)")
    cleanup.add_argument("--hours", type=float, default=24.0)


COMMANDS = {
    "run": ("yeetui.cli.run", "cmd_run"),
    "sessions": ("yeetui.cli.sessions", "cmd_sessions"),
    "profiles": ("yeetui.cli.profiles", "cmd_profiles"),
    "agents": ("yeetui.cli.agents", "cmd_agents"),
    "trust": ("yeetui.cli.trust", "cmd_trust"),
    "mcp": ("yeetui.cli.mcp", "cmd_mcp"),
    "acp": ("yeetui.cli.acp", "cmd_acp"),
    "doctor": ("yeetui.cli.doctor", "cmd_doctor"),
    "agent": ("yeetui.cli.agents", "cmd_agent"),
    "worktrees": ("yeetui.cli.worktrees", "cmd_worktrees"),
    "schedule": ("yeetui.cli.schedule", "cmd_schedule"),
    "fleet": ("yeetui.cli.fleet", "cmd_fleet"),
}
"""Subcommand → (module, coroutine function)."""


def main(argv: Sequence[str] | None = None) -> int:
    protect_process()  # before any key is read: the agents' commands must not read this process's memory
    if argv is None:  # this process's own command line: a worker's may be run by the warm server instead
        argv = sys.argv[1:]
        if is_warm_server(argv):
            return serve_warm_workers(argv, preload=_preload, run=_command)
        start_warm(argv)  # returns when no warm server ran it
    return _command(list(argv))


def _preload() -> None:
    """What the warm server imports of the CLI for a worker: the command's module."""
    from yeetui.cli import agents, common  # noqa: F401


def _command(argv: list[str], stand_in: int | None = None) -> int:
    """Run the command `argv`; `stand_in`: in a worker forked warm, the pid of the process standing in for it."""
    args = tui_args(argv) or build_parser().parse_args(argv)
    args.stand_in = stand_in
    if args.command is None:
        return run_tui(args)
    # Imported on use: a command loads only what it needs (`yeetui` alone starts the TUI without them).
    module, name = COMMANDS[args.command]
    with gc_paused():
        from yeetui.cli.common import run_command

        command = getattr(importlib.import_module(module), name)
    return run_command(command, args)


def run_tui(args: argparse.Namespace) -> int:
    """`yeetui`: the full-screen app in the current directory."""
    if args.model and "/" not in args.model:
        print(f"yeetui: error: --model {args.model!r} is not of the form provider/model "
              "(for example anthropic/claude-sonnet-4-6).", file=sys.stderr)
        return 2
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        print("yeetui: the TUI needs a terminal; for scripts use `yeetui run PROMPT` (see yeetui --help).",
              file=sys.stderr)
        return 2
    with gc_paused():
        from yeetui.cli.common import setup_logging
        from yeetui.tui.app import YeetuiApp

    app = YeetuiApp(resume=args.resume, continue_latest=args.cont, model=args.model, tune_gc=True,
                    setup_logging=setup_logging)
    app.run()
    if app.exit_note:
        print(app.exit_note, file=sys.stderr)
    return app.return_code or 0


if __name__ == "__main__":
    raise SystemExit(main())
