"""Work-arounds for defects of the pinned Textual release, each named with its upstream issue.

Each one checks for the defective part before touching it, so a Textual release that fixes (or renames) it
turns the work-around into a no-op rather than an error.
"""

from __future__ import annotations

from textual._styles_cache import StylesCache


def release_styles_caches() -> None:
    """Let the caches of unmounted widgets go.

    `StylesCache.get_inner_outer` is an `lru_cache(1024)` on an instance method, so its keys hold the
    `StylesCache` of the last 1,024 widgets drawn — and through it every line each one last drew (`Strip`s,
    each with seven small caches of its own) — long after the widgets are gone (Textualize/textual#6665).
    Paging down a long conversation mounts and unmounts hundreds of message views: ~60 MB stayed resident
    after one pass through a 1,000-message session. Emptying the cache costs a pair of `Style`s per live
    widget on its next draw.
    """
    cache_clear = getattr(getattr(StylesCache, "get_inner_outer", None), "cache_clear", None)
    if cache_clear is not None:
        cache_clear()
