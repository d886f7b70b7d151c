"""What external agents record of their own work on disk, read back where the protocol does not carry it.

ACP has no message for a subagent's spend in the forms today's agents speak: Claude Code's adapter drops
its subagents' usage, and OpenCode names a `task` child only in a tool's output and never reports its cost.
Both agents keep their own records (`claude`: a JSON-lines file per subagent; `opencode`: a SQLite database
with each session's totals), so yeetui reads the one number it needs there. Each reader finds a record only by
plain ids, reads it read-only and bounded, and checks every field: another program's file is hostile input.
"""
