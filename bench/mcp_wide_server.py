"""An MCP server with many tools of realistic size, for bench_mcp: `python bench/mcp_wide_server.py NAME N`.

Each tool takes a few described parameters, as real servers' tools do (a repository path, a filter, a limit,
a flag); the descriptions are a sentence or two. Built with the SDK's own server."""

from __future__ import annotations

import sys
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer

VERBS = ["list", "get", "search", "create", "update", "delete", "describe", "sync", "export", "import"]
NOUNS = ["issues", "branches", "commits", "files", "comments", "labels", "releases", "tags", "users", "jobs"]


def _tool(tool_name: str) -> Callable[..., str]:
    def tool(repository: str, query: str = "", limit: int = 20, include_archived: bool = False) -> str:
        return f"{tool_name}: {repository} {query} {limit} {include_archived}"
    return tool


def make(name: str, count: int) -> MCPServer:
    server = MCPServer(name)
    for index in range(count):
        verb, noun = VERBS[index % len(VERBS)], NOUNS[(index // len(VERBS)) % len(NOUNS)]
        tool_name = f"{verb}_{noun}" if index < len(VERBS) * len(NOUNS) else f"{verb}_{noun}_{index}"

        tool = _tool(tool_name)
        tool.__doc__ = (f"{verb.capitalize()} the {noun} of a repository on the {name} service. Returns at most "
                        f"`limit` entries, newest first; `query` filters by title and body text.")
        server.add_tool(tool, name=tool_name)
    return server


if __name__ == "__main__":
    make(sys.argv[1], int(sys.argv[2])).run("stdio")
