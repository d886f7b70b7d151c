"""MCP tool manifests, eager versus lazy, and the delay of a tool's first use (issue 27).

Five real MCP servers (bench/mcp_wide_server.py, built with the SDK) of twenty tools each are started through
yeetui's connections. Compared, in the tokens a model is sent with every request (≈ characters / 4 for both,
the same estimate on each side, so the ratio is what counts):
  eager   every tool's name, description and input schema, as tool definitions (what a client that offers all
          MCP tools up front sends);
  lazy    yeetui's index (servers and tool names) and the `mcp_load` tool's definition.
And the delay of a tool's first use: `mcp_load` of one server's tools plus the call, against the same call
on a connection already loaded (both on warm servers), and a cold start of a server to its first answer.

Usage: python bench/bench_mcp.py [--quick] [--servers N] [--tools N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import median, show
from yeetui.mcp.client import McpConnection, McpConnections
from yeetui.mcp.servers import ServerSpec
from yeetui.runs.mcp_tools import McpAccess, McpLoadTool
from yeetui.tools.registry import ToolRegistry

SERVER = str(Path(__file__).resolve().parent / "mcp_wide_server.py")


def tokens(text: str) -> float:
    return len(text) / 4


def spec(name: str, tools: int) -> ServerSpec:
    return ServerSpec(name=name, transport="stdio", scope="user", source="bench", path=Path(SERVER),
                      command=(sys.executable, SERVER, name, str(tools)))


def definition(name: str, description: str, schema: dict) -> str:
    return json.dumps({"name": name, "description": description, "input_schema": schema})


async def main_async(servers: int, tools: int, rounds: int) -> None:
    names = [f"svc{i}" for i in range(servers)]
    connections = McpConnections([spec(n, tools) for n in names])
    try:
        started = await connections.start_all()
        failed = [s for s in started if s.state != "started"]
        if failed:
            raise SystemExit(f"a bench server did not start: {failed[0].name}: {failed[0].error}")
        every = [t for s in started for t in s.tools]
        eager = "".join(definition(t.qualified, t.description, t.input_schema) for t in every)
        access = McpAccess(connections, names, "inherit", ToolRegistry([]))
        load_spec = McpLoadTool().spec()
        lazy = await access.index() + definition(load_spec.name, load_spec.description, load_spec.input_schema)
        print(f"tool manifest with {servers} servers / {len(every)} tools, ≈ tokens (characters / 4):", flush=True)
        show("  lazy (index + mcp_load) vs eager (every schema)", tokens(lazy), tokens(eager), unit="tokens",
             goal_text=f"goal lazy < 10 % of eager: {'met' if len(lazy) < 0.1 * len(eager) else 'NOT met'}")

        first_use, warm_call = [], []
        for round_ in range(rounds):
            server = names[round_ % len(names)]
            tool = next(t for s in started if s.name == server for t in s.tools)
            fresh = McpAccess(connections, names, "inherit", ToolRegistry([]))
            begin = time.perf_counter()
            loaded = await fresh.load(server, [tool.name])
            await connections.get(server).call(tool.name, {"repository": "r"})  # type: ignore[union-attr]
            first_use.append(time.perf_counter() - begin)
            assert not loaded.is_error, loaded.content
            begin = time.perf_counter()
            await connections.get(server).call(tool.name, {"repository": "r"})  # type: ignore[union-attr]
            warm_call.append(time.perf_counter() - begin)
        print(f"first use of a tool, {rounds} round(s), medians:", flush=True)
        show("  mcp_load + first call vs a call of a loaded tool", median(first_use), median(warm_call))
    finally:
        await connections.close()

    cold, warm = [], []
    for _ in range(max(1, rounds // 2)):
        connection = McpConnection(spec("cold", tools))
        begin = time.perf_counter()
        status = await connection.ensure_started()
        await connection.call(status.tools[0].name, {"repository": "r"})
        cold.append(time.perf_counter() - begin)
        begin = time.perf_counter()
        await connection.call(status.tools[0].name, {"repository": "r"})
        warm.append(time.perf_counter() - begin)
        await connection.close()
    show("  a server's cold start to its first answer vs a warm call", median(cold), median(warm))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny configuration (smoke test)")
    parser.add_argument("--servers", type=int, default=None, help="servers (default 5; --quick: 2)")
    parser.add_argument("--tools", type=int, default=20, help="tools per server")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    asyncio.run(main_async(args.servers or (2 if args.quick else 5), args.tools,
                           args.rounds or (2 if args.quick else 10)))


if __name__ == "__main__":
    main()
