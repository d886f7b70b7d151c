"""The orchestrator: a code-driven plan → build → review graph of child runs (engine, plan, prompts)."""
