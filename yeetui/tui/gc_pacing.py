"""Full garbage collections while the user is not typing.

A full collection walks every object the app tracks; after a long answer that is 100 ms and more with the
event loop stopped, and a key typed meanwhile echoes that much later. CPython runs one when enough gen-1
collections have piled up, whatever the user is doing. With `calm_gc` those automatic full collections are
off (their threshold is out of reach) and `FullCollections.tick`, called every second, runs one when it is
due and the keyboard has been quiet for a moment — or, if the user never pauses, after `MAX_DELAY` anyway,
so cycles never pile up without bound.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import time
from collections.abc import Callable

from yeetui.tui.textual_workarounds import release_styles_caches

GEN0_THRESHOLD = 10_000
"""Allocations between young collections (CPython's 700 promotes far more temporaries of a streaming
answer into the older generations)."""
DUE_AFTER = 10
"""Gen-1 collections after which a full one is due (CPython's own threshold)."""
QUIET = 1.5
"""Seconds without a key after which a due full collection runs."""
MAX_DELAY = 60.0
"""Seconds a due full collection waits for a quiet moment at most."""
DROPPED_DUE = 150
"""Views unmounted since the last full collection after which one is due whatever the gen-1 count says.
An unmounted view lived long enough to reach the oldest generation, and its reference cycles (parent,
message pump, styles) wait there for a full collection: paging down a long session, ~500 KB of them per
page piled up, and the heap they grew stays fragmented after they are freed (RSS +55 MB after one pass
through 1,000 messages, against +15 MB when collected every ~150 views)."""


def calm_gc() -> None:
    """Move what exists now — modules, classes, the runtime, the screen — out of the collector's sight
    (`gc.freeze`), collect young objects less often, and leave full collections to `FullCollections`.
    Measured with bench_tui's load case: largest stall 398 → 102 ms from the first two; a full collection
    still took 112 ms while a 40 KB answer streamed (bench_typing), hence the third."""
    gc.freeze()
    gc.set_threshold(GEN0_THRESHOLD, 10, 1_000_000_000)


def _malloc_trim() -> Callable[[int], object] | None:
    """glibc's `malloc_trim`, which hands freed heap pages back to the system, or None elsewhere. Looked up
    among the symbols the process has loaded: `ctypes.util.find_library` would run `ldconfig -p` on the way
    to the first frame (this module is imported for it)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim: Callable[[int], object] = ctypes.CDLL(None).malloc_trim
        return trim
    except (OSError, AttributeError):
        return None


_TRIM = _malloc_trim()


def collect_fully() -> None:
    """A full collection, then the freed memory handed back (after scrolling through a long session, most of
    what was allocated for it is free but would stay in the process)."""
    release_styles_caches()
    gc.collect(2)
    if _TRIM is not None:
        _TRIM(0)


class FullCollections:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 pending: Callable[[], int] = lambda: gc.get_count()[2],
                 collect: Callable[[], object] = collect_fully) -> None:
        self._clock, self._pending, self._collect = clock, pending, collect
        self._key_at = -float("inf")
        self._due_since: float | None = None
        self._dropped = 0

    def dropped(self, views: int) -> None:
        """`views` widgets were unmounted (they are garbage now, freed by the next full collection)."""
        self._dropped += views

    def key(self) -> None:
        """A key was pressed."""
        self._key_at = self._clock()

    def tick(self) -> bool:
        """Run a full collection if one is due and the moment is right; True if it ran."""
        now = self._clock()
        if self._pending() < DUE_AFTER and self._dropped < DROPPED_DUE:
            self._due_since = None
            return False
        if self._due_since is None:
            self._due_since = now
        if now - self._key_at < QUIET and now - self._due_since < MAX_DELAY:
            return False
        self._collect()
        self._due_since = None
        self._dropped = 0
        return True
