"""yeetui: a terminal app for LLM coding agents built around subagents."""

__version__ = "0.1.0"
