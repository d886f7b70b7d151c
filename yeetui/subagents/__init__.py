"""Many runs: spawning children under limits, delivering their results exactly once, the ledger, the
interactive session control, detached workers, the agent tools, the orchestrator and the pair watcher."""
