"""Setting up a yeetui process before it does anything else (light: the CLI imports it at start-up)."""

from __future__ import annotations

from yeetui.system.hardening import protect_process

__all__ = ["protect_process"]
"""`protect_process()`: this process's memory (keys among it) cannot be read by the agents' commands."""
