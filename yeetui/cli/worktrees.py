"""`yeetui worktrees …`: the worktrees agents work in, from the shell — create, list, show, claim, release, sync,
merge, discard, delete, stale, cleanup."""

from __future__ import annotations

import argparse
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from yeetui import paths
from yeetui.application.worktrees import MergeOutcome, Strategy, WorktreeDesk
from yeetui.cli.common import table
from yeetui.cli.exit_codes import EXIT_FAILED, EXIT_OK
from yeetui.store import Store


async def cmd_worktrees(args: argparse.Namespace) -> int:
    async with await Store.open(paths.database_path()) as store:
        handler = _HANDLERS[args.action]
        return await handler(WorktreeDesk(store), args)


async def _create(desk: WorktreeDesk, args: argparse.Namespace) -> int:
    wt = await desk.create(Path.cwd(), task=args.task, prefix=args.prefix, base=args.base,
                           owner_session=args.session, clone=args.clone)
    _print(args, wt.to_json(), f"{wt.id[:8]}  {wt.branch}  {wt.path}")
    return EXIT_OK


async def _list(desk: WorktreeDesk, args: argparse.Namespace) -> int:
    rows = await desk.listed(include_ended=args.all)
    if args.json:
        print(json.dumps([w.to_json() for w in rows], default=str))
        return EXIT_OK
    if not rows:
        print("No worktrees." if args.all else "No active worktrees (--all lists ended ones too).")
        return EXIT_OK
    print(table(("ID", "STATUS", "BRANCH", "OWNER", "PATH"),
                [(wt.id[:8], wt.status, wt.branch, wt.owner_session_id[:8] if wt.owner_session_id else "-",
                  str(wt.path)) for wt in rows]))
    return EXIT_OK


async def _show(desk: WorktreeDesk, args: argparse.Namespace) -> int:
    wt = await desk.resolve(args.id)
    state = await desk.state(wt)
    data = {**wt.to_json(), "exists": state.exists, "changed": state.changed, "commits": state.commits}
    base = (wt.base_commit or "?")[:10]
    lines = [f"worktree {wt.id}  {wt.status}  ({wt.kind})", f"  branch   {wt.branch} (from {base})",
             f"  path     {wt.path}", f"  checkout {wt.repo}", f"  owner    {wt.owner_session_id or '-'}",
             f"  label    {wt.label or '-'}"]
    if wt.status == "active":
        lines.append(f"  work     {state.commits} commit(s), {len(state.changed)} uncommitted change(s)"
                     if state.exists else "  work     its folder is gone")
        lines.append(f"  merge it: yeetui worktrees merge {wt.id[:8]}   throw it away: yeetui worktrees discard "
                     f"{wt.id[:8]}")
    _print(args, data, "\n".join(lines))
    return EXIT_OK


async def _claim(desk: WorktreeDesk, args: argparse.Namespace) -> int:
    wt, session_id = await desk.claim(args.id, args.session)
    _print(args, wt.to_json(), f"{wt.branch} now belongs to session {session_id[:12]}.")
    return EXIT_OK


async def _release(desk: WorktreeDesk, args: argparse.Namespace) -> int:
    wt = await desk.release(args.id)
    _print(args, wt.to_json(), f"{wt.branch} belongs to no session now.")
    return EXIT_OK


async def _sync(desk: WorktreeDesk, args: argparse.Namespace) -> int:
    wt = await desk.resolve(args.id)
    return _outcome(args, await desk.sync(wt, how="merge" if args.merge else "rebase"))


async def _merge(desk: WorktreeDesk, args: argparse.Namespace) -> int:
    wt = await desk.resolve(args.id)
    strategy: Strategy = "ff" if args.ff else "squash" if args.squash else "merge"
    return _outcome(args, await desk.merge(wt, strategy=strategy, message=args.message))


async def _discard(desk: WorktreeDesk, args: argparse.Namespace) -> int:
    wt = await desk.discard(await desk.resolve(args.id))
    _print(args, wt.to_json(), f"Discarded {wt.branch}: its worktree and branch are removed.")
    return EXIT_OK


async def _delete(desk: WorktreeDesk, args: argparse.Namespace) -> int:
    wt = await desk.delete(await desk.resolve(args.id), force=args.force)
    _print(args, wt.to_json(), f"Deleted worktree {wt.path} and branch {wt.branch}.")
    return EXIT_OK


async def _stale(desk: WorktreeDesk, args: argparse.Namespace) -> int:
    rows = await desk.stale(older_than=timedelta(hours=args.hours))
    text = "\n".join(f"{w.id[:8]}  {w.branch}  {w.path}" for w in rows) or "No stale worktrees."
    _print(args, [w.to_json() for w in rows], text)
    return EXIT_OK


async def _cleanup(desk: WorktreeDesk, args: argparse.Namespace) -> int:
    plan = await desk.cleanup(apply=args.apply, older_than=timedelta(hours=args.hours))
    data = [{"id": e.worktree.id, "branch": e.worktree.branch, "path": str(e.worktree.path), "action": e.action,
             "reason": e.reason, "done": args.apply and e.action == "remove"} for e in plan]
    verb = "removed" if args.apply else "would remove"
    lines = [f"{verb if e.action == 'remove' else 'keeps':<12}  {e.worktree.id[:8]}  {e.worktree.branch}  "
             f"({e.reason})" for e in plan] or ["Nothing to clean up."]
    if plan and not args.apply:
        lines.append("This was a dry run; `yeetui worktrees cleanup --apply` removes them.")
    _print(args, data, "\n".join(lines))
    return EXIT_OK


def _outcome(args: argparse.Namespace, outcome: MergeOutcome) -> int:
    data = {"merged": outcome.merged, "into": str(outcome.into), "target": outcome.target,
            "commit": outcome.commit, "conflicts": outcome.conflicts, "message": outcome.message}
    _print(args, data, outcome.message)
    return EXIT_OK if outcome.merged else EXIT_FAILED


def _print(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, default=str) if args.json else text)


_HANDLERS = {"create": _create, "list": _list, "show": _show, "claim": _claim, "release": _release, "sync": _sync,
             "merge": _merge, "discard": _discard, "delete": _delete, "stale": _stale, "cleanup": _cleanup}
