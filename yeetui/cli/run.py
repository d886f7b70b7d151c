"""`yeetui run PROMPT`: one run in the foreground, headless; the result on stdout, exit 0 on success.

Subagents the agent started in the background are waited for before the result is printed (see
`_wait_for_background`): a headless run never drops a child's result silently."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Sequence
from typing import Any

from yeetui.application.runs import RunDesk
from yeetui.application.surface import FrontEnd
from yeetui.cli.common import budget_of, error, open_surface
from yeetui.cli.exit_codes import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_USAGE, EXIT_WAITING_USER
from yeetui.cli.progress import HeadlessProgress
from yeetui.events import PermissionRequested, RunStatus, event_to_json
from yeetui.redact import redact
from yeetui.store.coordination import PermissionAsk
from yeetui.text import clip, one_line

_ENDED = {RunStatus.BUDGET_EXHAUSTED: "halted", RunStatus.QUOTA_EXHAUSTED: "stopped"}
"""How a run's ending reads on stderr where its status value is not plain words (`budget_exhausted`: halted,
followed by the error that says by which limit); `--json` keeps the status value."""


async def cmd_run(args: argparse.Namespace) -> int:
    if not args.prompt and not (args.resume or args.cont):
        error(args, "run needs a PROMPT (or --resume SESSION / --continue to continue one).")
        return EXIT_USAGE
    # --model reaches the subagents too; nobody is there to answer a permission question
    surface = await open_surface(args, FrontEnd(model=args.run_model or args.model, approve_asks=args.yes,
                                                headless=True))
    runs = surface.runs
    try:
        secrets = runs.secrets
        if args.json:
            surface.bus.add_listener(lambda e: print(redact(json.dumps(event_to_json(e), default=str), secrets),
                                                     flush=True))
        else:
            HeadlessProgress(surface.bus)
        session_id = args.resume
        if args.cont and not session_id:
            latest = await surface.sessions.latest()
            if latest is None:
                error(args, "--continue: there is no session to continue yet.")
                return EXIT_FAILED
            session_id = latest.id
        task: asyncio.Future[Any] = asyncio.ensure_future(runs.run_prompt(
            args.prompt, profile=args.profile, model=args.run_model or args.model, session_id=session_id,
            budget=budget_of(args)))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # a closed terminal stops it cleanly too
            loop.add_signal_handler(sig, lambda: task.cancel())  # whichever task is current
        try:
            result = await task
            task = asyncio.ensure_future(_wait_for_background(runs, result.session_id))
            await task
        except asyncio.CancelledError:
            error(args, "cancelled.")
            return EXIT_CANCELLED
        if args.json:
            print(redact(json.dumps(result.to_json(), default=str), secrets), flush=True)
        else:
            if result.output:
                print(redact(result.output, secrets), flush=True)
            if result.status != RunStatus.COMPLETED:
                said = redact(result.error or result.output or "", secrets)
                ended = _ENDED.get(result.status, result.status.value)
                print(f"yeetui: run {ended}: {said}".rstrip(": "), file=sys.stderr, flush=True)
        # Pane children refused in their own process: their workers recorded each refusal in the store.
        if refused := await runs.refused_unattended():
            _say_refused(refused, args)
        if result.status == RunStatus.COMPLETED:
            # The agent finished, but said it could not do the task: a script must not read that as success.
            done = (result.result or {}).get("status", "success") == "success"
            return EXIT_OK if done else EXIT_FAILED
        return EXIT_WAITING_USER if result.status == RunStatus.WAITING_USER else EXIT_FAILED
    finally:
        await surface.close()


def _say_refused(refused: Sequence[PermissionRequested | PermissionAsk], args: argparse.Namespace) -> None:
    """Tool calls under an `ask` rule were refused (no --yes; here or in a subagent's pane): say which, and
    how to allow them."""
    shown = "; ".join(f"{r.tool} {clip(one_line(r.subject), 60)!r} ({r.agent_label})" for r in refused[:5])
    more = f" and {len(refused) - 5} more" if len(refused) > 5 else ""
    calls = f"{len(refused)} tool calls that need" if len(refused) > 1 else "1 tool call that needs"
    print(f"yeetui: refused {calls} your permission: "
          f"{shown}{more}. Nobody could be asked (a headless run): rerun with --yes to allow them, or allow them "
          "in a permission rule.", file=sys.stderr, flush=True)


async def _wait_for_background(runs: RunDesk, session_id: str) -> None:
    """Subagents the primary started without waiting (`blocking: false`) that still run when it ends: wait for
    them, saying so on stderr, so their results reach the session instead of being cut off. Ctrl-C (or
    SIGTERM) stops them; the run then exits as cancelled."""
    live = runs.children_running(session_id)
    if not live:
        return
    print(f"yeetui: waiting for {len(live)} subagent{'s' if len(live) > 1 else ''} still running: {', '.join(live)} "
          "(ctrl-c stops them)", file=sys.stderr, flush=True)
    await runs.await_children(session_id)
