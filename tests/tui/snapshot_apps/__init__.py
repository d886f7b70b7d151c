"""Helper apps and fixed data for the snapshot tests (tests/tui/test_snapshots.py)."""
