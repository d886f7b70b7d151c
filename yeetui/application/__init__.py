"""The application surface: the use cases every front end calls — the TUI, the CLI and, next, the ACP and MCP
servers — so none of them repeats another's logic or reaches into the domain's inner parts (the spawner,
the worktree manager, the sandbox, providers, the SQLite store). A fourth import-linter contract holds the
front ends to it.

Modules import what they need when used: importing this package costs nothing at start-up.
"""
