"""Importing big libraries (the provider SDKs, Textual, a command's modules) with the cyclic collector paused.

`import anthropic` alone builds ~1,500 pydantic model classes and loads ~3,500 modules. While it runs, CPython
starts a young collection every 700 net allocations and a full one every hundred of those, each walking a heap
that keeps growing: work thrown away, as nothing an import creates is garbage. Paused, the SDK's import takes
a few per cent less CPU (1.61 s against 1.69 s on a 2-core machine, ten interleaved runs each; a subagent
worker's imports 1.88 s against 1.94 s), which every subagent worker, `yeetui run`, ACP and MCP server pays at
start.

The pause is process-wide, so overlapping users (an import in a worker thread while the TUI starts) share it:
the collector is turned back on when the last of them ends, and only if it was on when the first began.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_resume = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the body with the cyclic garbage collector off (reference counting still frees memory)."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
