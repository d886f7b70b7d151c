"""`yeetui agents …`: start, list, inspect, cancel and resume subagent runs from the shell.

`agents start` without `--wait` writes the session and a queued run record here, then hands the run to a
detached worker process (`yeetui agent run --run-id ID`, hidden) and exits at once. The worker carries the
run to its end; SIGTERM (what `agents cancel` sends) makes it cancel the run, which then ends `cancelled`
and is delivered like any other ending. Every command reads the store, so it sees runs of any process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from yeetui.application.agents import (
    LIVE,
    SpawnHandle,
    SpawnRequest,
    Worker,
    cancel_run,
    check_resumable,
    ensure_final,
    run_json,
    stalled,
    steer_run,
    worker_env,
    worker_log,
)
from yeetui.application.surface import FrontEnd, Surface
from yeetui.cli.common import budget_of, error, open_store, open_surface, table
from yeetui.cli.exit_codes import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_WAITING_USER
from yeetui.cli.progress import HeadlessProgress, PaneView
from yeetui.events import RunStatus
from yeetui.messages import Usage
from yeetui.store import Store
from yeetui.store.records import RunRecord
from yeetui.subagents.ledger import format_elapsed, short_model
from yeetui.subagents.panes import leave_panes, leave_window
from yeetui.text import dollars, terminal_safe, tokens_text

RECENT = timedelta(minutes=15)
"""`agents list` shows live runs and runs that ended this recently (`--all`: every run)."""
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def exit_code(status: RunStatus) -> int:
    if status == RunStatus.COMPLETED:
        return EXIT_OK
    if status == RunStatus.WAITING_USER:
        return EXIT_WAITING_USER
    return EXIT_CANCELLED if status == RunStatus.CANCELLED else EXIT_FAILED


# -- the commands -----------------------------------------------------------------------------------

async def cmd_agents(args: argparse.Namespace) -> int:
    handler = {"start": _start, "list": _list, "status": _status, "cancel": _cancel, "history": _history,
               "resume": _resume, "steer": _steer, "send": _send}[args.action]
    return await handler(args)


async def _start(args: argparse.Namespace) -> int:
    if args.wait:

        request = SpawnRequest(profile=args.profile, prompt=args.prompt, blocking=True, requested_by="user",
                               model=args.agent_model or args.model, timeout=args.timeout, label=args.label,
                               session_context=args.context, budget=budget_of(args))
        return await _in_process(args, await open_surface(args, _headless(args)), request)
    surface = await open_surface(args)
    try:
        run, pid = await surface.agents.start_detached(profile=args.profile, prompt=args.prompt,
                                        model=args.agent_model or args.model, context=args.context,
                                        timeout=args.timeout, label=args.label, approve=args.yes,
                                        ask_wait=not args.refuse_asks, ask_timeout=args.ask_timeout,
                                        budget=budget_of(args))
    finally:
        await surface.close()
    _print_started(args, run, pid)
    return EXIT_OK


async def _resume(args: argparse.Namespace) -> int:
    surface = await open_surface(args, _headless(args) if args.wait else None)
    try:
        run = await surface.runs.resolve(args.id)  # Surface.open recovered runs whose process died
        check_resumable(run)
    except BaseException:
        await surface.close()
        raise
    if args.wait:
        return await _in_process(args, surface, run.id)
    try:
        pid = await surface.agents.resume_detached(run)
    finally:
        await surface.close()
    _print_started(args, run, pid)
    return EXIT_OK


def _print_started(args: argparse.Namespace, run: RunRecord, pid: int) -> None:
    if args.json:
        print(json.dumps({"run_id": run.id, "session_id": run.session_id, "status": "queued", "pid": pid,
                          "label": run.label, "profile": run.profile, "model": run.model,
                          "log": str(worker_log(run.id))}), flush=True)
    else:
        print(run.id, flush=True)


def _headless(args: argparse.Namespace) -> FrontEnd:
    """`--wait`: the run executes here and nobody is there to answer its permission questions."""
    return FrontEnd(approve_asks=getattr(args, "yes", False), headless=True)


async def _in_process(args: argparse.Namespace, surface: Surface, start: SpawnRequest | str) -> int:
    """Run to the end here (`--wait`): a new run from a request, or resume a run by id; then close `surface`.
    Ctrl-C or SIGTERM cancels the run."""
    try:
        if not args.json:
            HeadlessProgress(surface.bus)
        task, registered = await surface.agents.run_here(start, resume=True)
        loop = asyncio.get_running_loop()
        for sig in _SIGNALS:
            loop.add_signal_handler(sig, task.cancel)
        try:
            handle = await task
            run_id = handle.run_id
        except asyncio.CancelledError:
            if not registered:
                error(args, "cancelled before the run started.")
                return EXIT_CANCELLED
            run_id = registered[0]
        finally:
            for sig in _SIGNALS:
                loop.remove_signal_handler(sig)
        run = await ensure_final(surface.store, run_id)
        _print_finished(args, await run_json(surface.store, run))
        return exit_code(run.status)
    finally:
        await surface.close()


def _print_finished(args: argparse.Namespace, data: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(data, default=str), flush=True)
        return
    if data["output"]:
        print(data["output"], flush=True)
    if data["status"] != RunStatus.COMPLETED.value:
        print(f"yeetui: run {data['id'][:12]} {data['status']}: {data.get('error') or ''}".rstrip(": "),
              file=sys.stderr, flush=True)


async def _list(args: argparse.Namespace) -> int:
    async with await open_store() as store:
        runs = await store.list_runs(limit=1_000_000 if args.all else 1000)
        if not args.all:
            since = datetime.now(UTC) - RECENT
            runs = [r for r in runs if r.status in LIVE or (r.finished_at or r.created_at) >= since]
        runs.sort(key=lambda r: r.status not in LIVE)  # stable: live first, each part newest first
        await _print_runs(args, store, runs)
    return EXIT_OK


async def _history(args: argparse.Namespace) -> int:
    async with await open_store() as store:
        finals = [s for s in RunStatus if s.is_final]
        runs = await store.list_runs(statuses=finals, limit=max(args.limit * 4, 200))
        runs.sort(key=lambda r: r.finished_at or r.created_at, reverse=True)
        await _print_runs(args, store, runs[: args.limit])
    return EXIT_OK


async def _status(args: argparse.Namespace) -> int:
    async with await open_store() as store:
        run = await store.resolve_run(args.id)
        data = await run_json(store, run)
    if args.json:
        print(json.dumps(data, default=str))
        return EXIT_OK
    print(table(_HEADER, [_cells(run)], right=frozenset({4, 5})))
    tree_tokens = Usage(**data["tree"]["usage"]).total_tokens
    if tree_tokens > run.usage.total_tokens:  # what the whole tree cost, as the ledger's parent row says it
        own = dollars(run.cost if run.cost is not None or run.usage.total_tokens else 0.0)
        print(f"this run: {tokens_text(run.usage.total_tokens)} · {own}; with its subagents "
              f"(tree): {tokens_text(tree_tokens)} · {dollars(data['tree']['cost'])}")
    if run.error:
        print(f"error: {run.error}")
    if data["output"]:
        print(data["output"])
    return EXIT_OK


async def _cancel(args: argparse.Namespace) -> int:
    async with await open_store() as store:
        run = await store.resolve_run(args.id)
        name = f"Run {run.id[:12]} ({run.label or run.profile})"
        run = await cancel_run(store, run)
        data = await run_json(store, run)
    if args.json:
        print(json.dumps(data, default=str))
    else:
        print(f"{run.id[:12]} {run.label or run.profile} {run.status.value}")
    if run.status != RunStatus.CANCELLED:
        print(f"yeetui: {name} ended {run.status.value} before it could be cancelled.", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


async def _steer(args: argparse.Namespace) -> int:
    """Guidance for a running run, whichever yeetui process executes it: it reads it at its next turn."""
    async with await open_store() as store:
        run = await store.resolve_run(args.id)
        await steer_run(store, run, args.message)
    if args.json:
        print(json.dumps({"id": run.id, "label": run.label, "steered": True}))
    else:
        print(f"Run {run.id[:12]} ({run.label or run.profile}): guidance sent; it reads it at its next turn.")
    return EXIT_OK


async def _send(args: argparse.Namespace) -> int:
    """A message for a subagent: guidance for a running one; for a finished one, a follow-up turn in its own
    session with its earlier context, run here to its end (its answer also reaches its parent, once)."""
    async with await open_store() as store:
        run = await store.resolve_run(args.id)
    if not run.status.is_final:
        return await _steer(args)
    asking = args.ask_anywhere and not args.yes
    surface = await open_surface(args, FrontEnd(ask_anywhere=True) if asking else _headless(args))
    try:
        if not args.json:
            HeadlessProgress(surface.bus)
        desk = surface.runs
        handle = await desk.follow_up(run.session_id, args.message)
        task = asyncio.ensure_future(desk.wait(handle.run_id))
        loop = asyncio.get_running_loop()
        for sig in _SIGNALS:
            loop.add_signal_handler(sig, lambda: desk.abort(handle.run_id))
        try:
            await task
        finally:
            for sig in _SIGNALS:
                loop.remove_signal_handler(sig)
        ended = await ensure_final(surface.store, handle.run_id)
        _print_finished(args, await run_json(surface.store, ended))
        return exit_code(ended.status)
    finally:
        await surface.close()


async def _print_runs(args: argparse.Namespace, store: Store, runs: list[RunRecord]) -> None:
    idle = await stalled(store, runs, project_dir=Path.cwd())
    if args.json:
        rows = [await run_json(store, r) for r in runs]
        for row in rows:  # a running run that got nowhere for a while: said, with how long
            if row["id"] in idle:
                row["stalled"], row["idle_seconds"] = True, round(idle[row["id"]], 1)
        print(json.dumps(rows, default=str))
        return
    if not runs:
        print("No agent runs.", file=sys.stderr)
        return
    print(table(_HEADER, [_cells(run, idle.get(run.id)) for run in runs], right=frozenset({4, 5})))


_HEADER = ("RUN", "LABEL", "STATUS", "MODEL", "TIME", "COST", "TASK")


def _cells(run: RunRecord, idle: float | None = None) -> tuple[str, ...]:
    """`0b3c9e1f2a4d  oracle#4  running  claude-sonnet-4-6  0:42  $0.03  why does the login test flake?`; a run
    that got nowhere for `idle` seconds reads `stalled 3:10`."""
    end = run.finished_at or datetime.now(UTC)
    elapsed = format_elapsed((end - run.started_at).total_seconds()) if run.started_at else "-"
    cost = dollars(run.cost) if run.cost is not None or run.usage.total_tokens else dollars(0)
    prompt = " ".join(run.prompt.split())
    status = f"stalled {format_elapsed(idle)}" if idle is not None else run.status.value
    return (run.id[:12], run.label or run.profile, status, short_model(run.model or ""), elapsed, cost,
            f"{prompt[:60]}{'…' if len(prompt) > 60 else ''}")


# -- the hidden worker: `yeetui agent run --run-id ID` ---------------------------------------------

def show_ending(run: RunRecord, out: TextIO | None = None) -> None:
    """The end of a pane's window: the run's answer (a `complete` call's output is never streamed as text, so
    without this the window would show only progress), then how it ended."""
    out = out or sys.stdout
    data = run.result if isinstance(run.result, dict) else {}
    answer = str(data.get("output") or "").strip()
    label = run.label or run.profile
    try:
        if answer:
            out.write(f"\n[yeetui] {label}'s answer:\n{terminal_safe(answer)}\n")
        out.write(f"\n[yeetui] {label} {run.status.value}" + (f": {terminal_safe(run.error)}" if run.error else "")
                  + ". This window stays for reading while yeetui runs.\n")
        out.flush()
    except (OSError, ValueError):  # the window is gone: nobody reads it
        pass


async def cmd_agent(args: argparse.Namespace) -> int:
    """Execute a run record made by `agents start`/`agents resume`, in this (detached) process."""
    if args.action == "leave-panes":
        await leave_panes(os.environ)
        return EXIT_OK
    loop = asyncio.get_running_loop()
    stopping: list[int] = []
    task: asyncio.Future[SpawnHandle] | None = None

    def on_signal(sig: signal.Signals) -> None:
        stopping.append(1)
        if task is not None:
            # A pane's worker gets SIGHUP when its window is closed: the run's record says that, not just
            # "cancelled".
            task.cancel("its tmux pane was closed" if sig == signal.SIGHUP and args.show else None)

    for sig in _SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    worker_env(args.env_file)  # a tmux pane's worker: its environment, keys included, never on a command line
    worker = await Worker.open(args.run_id, cwd=Path.cwd(), stand_in=args.stand_in)
    try:
        worker.start()
        if args.show:
            PaneView(worker.bus, worker.run.id, asked_in_yeetui=worker.asked_in_yeetui)
        if not stopping:
            task = worker.execute(resume=args.resume)
            try:
                await task
            except asyncio.CancelledError:
                pass
        final = await worker.close()
        if args.show:
            show_ending(final)
        else:
            print(json.dumps(await run_json(worker.store, final), default=str), flush=True)
        return exit_code(final.status)
    finally:
        await worker.shut()
        if args.show:  # a pane's worker: its window joins those kept for reading, or goes with nobody left
            await leave_window(os.environ)
