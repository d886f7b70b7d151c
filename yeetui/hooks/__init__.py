"""Lifecycle hooks: commands the user configured, run at moments of an agent's life — with Claude Code's event
names, configuration shape and JSON payloads, so the hook scripts people already wrote for Claude Code work
unchanged (`sources` reads them, `runner` runs them).

Events: `SessionStart`, `UserPromptSubmit`, `PreToolUse`, `PostToolUse`, `PermissionRequest`, `Notification`,
`SubagentStart`, `SubagentStop`, `Stop`. A hook reads its payload as JSON on stdin; exit 0 is success (for
`UserPromptSubmit` and `SessionStart` its stdout is context for the agent); exit 2 blocks what it can block
(a tool call, a prompt, an agent stopping), its stderr saying why; any other failure — a crash, a timeout, a
command not found — is reported and changes nothing. A hook may also answer in JSON on stdout (`decision`,
`reason`, `hookSpecificOutput.permissionDecision`, `additionalContext`).

Hooks are the user's own commands and run with the user's rights, outside the agents' sandbox: only those in
the user's own config, and those of a project the user trusted (`.claude/settings.json`), ever run.
"""
