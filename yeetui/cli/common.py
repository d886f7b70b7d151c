"""The bodies of the CLI commands. Errors become one readable line on stderr and a non-zero exit code."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from yeetui import paths
from yeetui.errors import YeetuiError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_WAITING_USER, EXIT_CANCELLED = 0, 1, 2, 3, 130


def dispatch(args: argparse.Namespace) -> int:
    setup_logging()
    handler = {"run": cmd_run, "sessions": cmd_sessions, "profiles": cmd_profiles, "agents": cmd_agents,
               "agent": cmd_agent}[args.command]
    try:
        return asyncio.run(_guarded(handler, args))
    except KeyboardInterrupt:
        return EXIT_CANCELLED


async def _guarded(handler, args: argparse.Namespace) -> int:
    try:
        return await handler(args)
    except YeetuiError as exc:
        _error(args, str(exc))
        return EXIT_FAILED


def _error(args: argparse.Namespace, message: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps({"type": "error", "message": message}), flush=True)
    print(f"yeetui: {message}", file=sys.stderr, flush=True)


def setup_logging() -> None:
    """Log to the data dir, through the key-redacting filter. Nothing is logged to the terminal."""
    from yeetui.redact import RedactingFilter

    path = paths.log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        handler = logging.NullHandler()
    handler.addFilter(RedactingFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    for noisy in ("httpx", "httpcore", "LiteLLM", "litellm", "anthropic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


async def _open_runtime(args: argparse.Namespace):
    from yeetui.runtime import Runtime

    runtime = await Runtime.open(cwd=Path.cwd())
    for warning in runtime.warnings:
        if getattr(args, "json", False):
            print(json.dumps({"type": "notice", "level": "warning", "text": warning}), flush=True)
        else:
            print(f"yeetui: warning: {warning}", file=sys.stderr, flush=True)
    return runtime


# -- run -------------------------------------------------------------------------------------------

async def cmd_run(args: argparse.Namespace) -> int:
    from yeetui.events import RunStatus, TextDelta, event_to_json
    from yeetui.runtime import answer_permissions_headless

    if not args.prompt and not (args.resume or args.cont):
        _error(args, "run needs a PROMPT (or --resume SESSION / --continue to continue one).")
        return EXIT_USAGE
    runtime = await _open_runtime(args)
    try:
        answer_permissions_headless(runtime, approve=args.yes)
        if args.json:
            runtime.bus.add_listener(lambda e: print(json.dumps(event_to_json(e), default=str), flush=True))
        elif sys.stderr.isatty():
            runtime.bus.add_listener(lambda e: isinstance(e, TextDelta) and print(
                e.text, end="", file=sys.stderr, flush=True))
        session_id = args.resume
        if args.cont and not session_id:
            latest = await runtime.store.latest_session()
            if latest is None:
                _error(args, "--continue: there is no session to continue yet.")
                return EXIT_USAGE
            session_id = latest.id
        task = asyncio.ensure_future(runtime.run_prompt(
            args.prompt, profile_name=args.profile, model=args.run_model or args.model, session_id=session_id))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        try:
            result = await task
        except asyncio.CancelledError:
            _error(args, "cancelled.")
            return EXIT_CANCELLED
        if args.json:
            print(json.dumps(result.to_json(), default=str), flush=True)
        else:
            if sys.stderr.isatty():
                print(file=sys.stderr)
            if result.output:
                print(result.output, flush=True)
            if result.status != RunStatus.COMPLETED:
                print(f"yeetui: run {result.status.value}: {result.error or result.output or ''}".rstrip(": "),
                      file=sys.stderr, flush=True)
        if result.status == RunStatus.COMPLETED:
            return EXIT_OK
        return EXIT_WAITING_USER if result.status == RunStatus.WAITING_USER else EXIT_FAILED
    finally:
        await runtime.close()


# -- agents (yeetui/cli/agents.py) -----------------------------------------------------------------

async def cmd_agents(args: argparse.Namespace) -> int:
    from yeetui.cli.agents import cmd_agents as run_agents_command

    return await run_agents_command(args)


async def cmd_agent(args: argparse.Namespace) -> int:
    from yeetui.cli.agents import cmd_agent as run_worker

    return await run_worker(args)


# -- sessions --------------------------------------------------------------------------------------

async def cmd_sessions(args: argparse.Namespace) -> int:
    from yeetui.store import Store

    async with await Store.open(paths.database_path()) as store:
        await store.mark_interrupted()  # runs whose process died show as interrupted, never as running
        if args.action == "list":
            rows = []
            for session in await store.list_sessions(limit=args.limit):
                runs = await store.list_runs(session_id=session.id, limit=1000)
                rows.append({**session.to_json(), "runs": [r.to_json() for r in runs],
                             "status": runs[0].status.value if runs else None})
            if args.json:
                print(json.dumps(rows, default=str, indent=None))
            else:
                for row in rows:
                    print(f"{row['id'][:12]}  {row['status'] or '-':<18} {row['profile']:<12} {row['title']}")
            return EXIT_OK
        session = await store.resolve_session(args.id)
        runs = await store.list_runs(session_id=session.id, limit=1000)
        messages = await store.messages(session.id)
        data: dict[str, Any] = {**session.to_json(), "runs": [r.to_json() for r in runs],
                                "messages": [{"id": m.id, "run_id": m.run_id, "partial": m.partial,
                                              **m.message.model_dump(mode="json")} for m in messages]}
        if args.json:
            print(json.dumps(data, default=str))
        else:
            print(f"session {session.id}  profile {session.profile}  {session.title}")
            for run in runs:
                print(f"  run {run.id[:12]} {run.status.value} {run.model or ''} {run.error or ''}".rstrip())
            for m in messages:
                print(f"--- {m.message.role}{' (partial)' if m.partial else ''}")
                for part in m.message.parts:
                    print(_describe_part(part))
        return EXIT_OK


def _describe_part(part: Any) -> str:
    if part.kind == "text":
        return part.text
    if part.kind == "thinking":
        return f"[thinking] {part.text[:200]}"
    if part.kind == "tool_call":
        return f"[tool call {part.name}] {json.dumps(part.arguments)[:300]}"
    return f"[tool result{' error' if part.is_error else ''}] {part.content[:300]}"


# -- profiles --------------------------------------------------------------------------------------

async def cmd_profiles(args: argparse.Namespace) -> int:
    from yeetui.profile_loader import load_profiles, validate_profile_file
    from yeetui.resources import builtin_dir

    if args.action == "validate" and args.path:
        errors = validate_profile_file(Path(args.path))
    else:
        profiles = load_profiles(project_dir=Path.cwd(), user_dir=paths.config_dir() / "agents",
                                 builtin_dir=builtin_dir("agents"))
        errors = profiles.errors
    if args.action == "validate":
        if args.json:
            print(json.dumps({"ok": not errors, "errors": [str(e) for e in errors]}))
        elif errors:
            for err in errors:
                print(str(err), file=sys.stderr)
        else:
            print("All profiles are valid." if not args.path else f"{args.path}: valid.")
        return EXIT_FAILED if errors else EXIT_OK
    for err in errors:
        print(f"yeetui: warning: {err}", file=sys.stderr)
    if args.action == "list":
        rows = [{"name": p.name, "description": p.description, "capabilities": list(p.capabilities),
                 "model": p.model, "sources": [str(s) for s in p.sources]} for p in profiles.profiles.values()]
        if args.json:
            print(json.dumps(rows))
        else:
            for row in rows:
                print(f"{row['name']:<14} {','.join(row['capabilities']):<28} {row['description']}")
        return EXIT_OK
    profile = profiles.get(args.name)
    data = profile.model_dump(mode="json")
    data["sources"] = [str(s) for s in profile.sources]
    if args.json:
        print(json.dumps(data))
    else:
        import yaml

        print(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return EXIT_OK
