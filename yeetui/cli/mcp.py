"""`yeetui mcp list|approve|revoke|login|logout`: the MCP servers the user's files define, consent to a
project's, and signing in to a remote one that asks for OAuth (yeetui.mcp.oauth).

`list` shows every server found in Claude Code's, OpenCode's, Cursor's, Codex's, Gemini's and yeetui's files:
its name, where it is defined, what it runs (the resolved command or URL; env and header *names* only, their
values may be secrets), and whether it may start. `approve NAME` lets a server a project file defines start,
exactly as configured now (an edit asks again); the command prints what it approved. What the files say is
printed terminal-safe: a cloned repository's file must not drive the user's terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from yeetui import paths
from yeetui.application.mcp import McpServers, ServerRow, described
from yeetui.cli.common import error, open_surface
from yeetui.cli.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from yeetui.errors import YeetuiError
from yeetui.text import terminal_safe


async def cmd_mcp(args: argparse.Namespace) -> int:
    if args.action == "serve":
        return await _serve(args)
    servers = McpServers(paths.find_project_root(Path.cwd()))
    if args.action == "list":
        return await _list(servers, args)
    if args.action == "approve":
        return await _approve(servers, args)
    if args.action in ("login", "logout"):
        return await _sign_in_or_out(servers, args)
    return await _revoke(servers, args)


async def _sign_in_or_out(servers: McpServers, args: argparse.Namespace) -> int:
    if bool(args.name) == bool(args.url):
        error(args, f"yeetui mcp {args.action}: name a configured server, or give --url (one of the two)")
        return EXIT_USAGE
    try:
        url = args.url or servers.remote_url(args.name)
    except YeetuiError as exc:
        error(args, str(exc))
        return EXIT_FAILED
    if args.action == "logout":
        forgot = await servers.sign_out(url)
        print(f"{args.name or url}: {'signed out (its token is forgotten)' if forgot else 'was not signed in'}")
        return EXIT_OK

    async def open_page(address: str) -> None:
        print(terminal_safe(f"Sign in to {args.name or url} on this page (it opens in your browser):\n  {address}"),
              flush=True)
        if not args.no_browser:
            import webbrowser

            await asyncio.to_thread(webbrowser.open, address)

    client = None
    if args.client_id:
        secret = None
        if args.client_secret_env:
            import os

            if not (secret := os.environ.get(args.client_secret_env)):
                error(args, f"yeetui mcp login: {args.client_secret_env} is not set (it should hold the client's "
                            "secret)")
                return EXIT_USAGE
        client = (args.client_id, secret)
    elif args.client_secret_env:
        error(args, "yeetui mcp login: --client-secret-env goes with --client-id")
        return EXIT_USAGE
    try:
        await servers.sign_in(url, open_page=open_page, client=client)
    except YeetuiError as exc:
        error(args, str(exc))
        return EXIT_FAILED
    print(terminal_safe(f"Signed in to {args.name or url}; yeetui's connections to it use the token from now on."))
    return EXIT_OK


async def _serve(args: argparse.Namespace) -> int:
    """On stdio, stdout is the protocol's: everything else (warnings) goes to stderr. Over HTTP the address and
    the token are printed to stderr; the token is `YEETUI_MCP_TOKEN` when set, else a new random one."""
    import os
    import secrets

    from yeetui.application.mcp_http import serve_http
    from yeetui.application.mcp_serve import AgentService, build_server

    if args.http and args.no_token:
        error(args, "--no-token is refused with --http: without a token, any program of any user on this machine "
                    "could reach the server, start agents that write in this project and read what they found. "
                    "Set YEETUI_MCP_TOKEN to a secret and have the client send the header "
                    "`Authorization: Bearer <secret>`, or serve on stdio (leave out --http): only the program that "
                    "started yeetui can reach that.")
        return EXIT_USAGE
    surface = await open_surface(args)
    try:
        if not args.http:
            await build_server(AgentService(surface)).run_stdio_async()
            return EXIT_OK
        token = os.environ.get("YEETUI_MCP_TOKEN") or secrets.token_urlsafe(32)

        def ready(port: int) -> None:
            print(f"yeetui mcp serve: http://{args.host}:{port}/mcp", file=sys.stderr, flush=True)
            if not os.environ.get("YEETUI_MCP_TOKEN"):
                print(f"yeetui mcp serve: send the header  Authorization: Bearer {token}", file=sys.stderr,
                      flush=True)

        await serve_http(AgentService(surface), host=args.host, port=args.port, token=token, on_ready=ready)
    finally:
        await surface.close()
    return EXIT_OK


def _row_json(row: ServerRow) -> dict[str, object]:
    """A server as `--json` lists it: every value as its file writes it (`${…}` unexpanded), never a secret."""
    spec = row.spec
    return {"name": spec.name, "state": row.state, "reason": row.reason or None, "scope": spec.scope,
            "source": spec.source, "path": str(spec.path), "transport": spec.transport,
            "command": list(spec.command_as_written or spec.command), "url": spec.url_as_written or spec.url,
            "cwd": spec.cwd_as_written, "env": sorted(spec.env_as_written), "headers": sorted(spec.headers_as_written),
            "env_as_written": dict(sorted(spec.env_as_written.items())),
            "headers_as_written": dict(sorted(spec.headers_as_written.items())), "read_only": spec.read_only,
            "confined": spec.needs_consent and spec.transport == "stdio" and not spec.unconfined,
            "pins": sorted(spec.pins)}


async def _list(servers: McpServers, args: argparse.Namespace) -> int:
    if args.check:
        return await _check(servers, args)
    listing = await servers.listing()
    if args.json:
        print(json.dumps({"servers": [_row_json(r) for r in listing.rows],
                          "shadowed": [{"name": hidden.name, "path": str(hidden.path), "by": str(winner.path)}
                                       for hidden, winner in listing.shadowed],
                          "problems": listing.problems}))
        return EXIT_OK
    if not listing.rows and not listing.problems:
        print("No MCP servers are configured (looked in Claude Code's, OpenCode's, Cursor's, Codex's, Gemini's and "
              "yeetui's config files).")
    for row in listing.rows:
        spec = row.spec
        print(terminal_safe(f"{spec.name}  [{spec.scope}] {row.state_text}"))
        print(terminal_safe(f"    {spec.source}: {spec.path}"))
        for line in described(row, reason=False):
            print(terminal_safe(f"    {line}"))
    for hidden, winner in listing.shadowed:
        print(terminal_safe(f"{hidden.name} in {hidden.path} is shadowed by the one in {winner.path}"))
    for problem in listing.problems:
        print(terminal_safe(f"problem: {problem}"))
    return EXIT_OK


async def _check(servers: McpServers, args: argparse.Namespace) -> int:
    """Exit 1 when a server that should start did not."""
    if args.timeout <= 0:
        error(args, f"--timeout must be more than 0 seconds (it is {args.timeout:g}).")
        return EXIT_USAGE
    checked = await servers.check(start_timeout=args.timeout)
    failed = False
    rows = []
    for row, status in checked:
        entry = _row_json(row)
        if status is not None:
            entry.update(started=status.state == "started", error=status.error, reason=status.reason,
                         tools=[t.qualified for t in status.tools], skipped=status.skipped)
            failed |= status.state != "started"
        rows.append(entry)
        if args.json:
            continue
        if status is None:
            print(terminal_safe(f"{row.spec.name}: not started — {row.state_text}"))
        elif status.state == "started":
            names = ", ".join(t.name for t in status.tools) or "none"
            print(terminal_safe(f"{row.spec.name}: started, {len(status.tools)} tools: {names}"))
            for skipped in status.skipped:
                print(terminal_safe(f"    skipped {skipped}"))
        else:
            print(terminal_safe(f"{row.spec.name}: failed — {status.reason or status.error}"))
            if status.error and status.error != status.reason:
                print(terminal_safe(f"    in full: {status.error}"))
    if args.json:
        print(json.dumps({"servers": rows}))
    elif not checked:
        print("No MCP servers are configured.")
    return EXIT_FAILED if failed else EXIT_OK


async def _approve(servers: McpServers, args: argparse.Namespace) -> int:
    approved = []
    for name in args.names:
        try:
            spec = await servers.approve(name)
        except YeetuiError as exc:
            error(args, str(exc))
            return EXIT_FAILED
        approved.append(spec)
        if not args.json:
            print(terminal_safe(f"Approved {spec.name} from {spec.path}, exactly this:"))
            for line in described(ServerRow(spec, "approved"), reason=False):
                print(terminal_safe(f"    {line}"))
            print("An edit of its entry, or of a file it runs, will ask again.")
            if missing := servers.command_missing(spec):
                print(terminal_safe(f"Note: {missing}."))
    if args.json:
        print(json.dumps({"approved": [{**_row_json(ServerRow(s, "approved")), "target": s.target,
                                        "command_missing": servers.command_missing(s)} for s in approved]}))
    return EXIT_OK


async def _revoke(servers: McpServers, args: argparse.Namespace) -> int:
    counts = {name: await servers.revoke(name) for name in args.names}
    if args.json:
        print(json.dumps({"revoked": counts}))
    else:
        for name, count in counts.items():
            print(f"{name}: {'approval withdrawn' if count else 'was not approved'}")
    return EXIT_OK
