"""One run, start to end: the agent loop, its spec, the launcher that creates and executes it, tool calls,
permissions, prompts, history repair and compaction. Nothing here knows about other runs."""
