"""Agents users already have, run as yeetui subagents over the Agent Client Protocol (`process`)."""
