"""The pair watcher as the user switches it from any front end: on or off for one session, configured by the
settings' `watcher` section."""

from __future__ import annotations

from yeetui.runtime import Runtime

__all__ = ["PairWatching"]


class PairWatching:
    """Pair-watcher use cases over one runtime."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    async def toggle(self, session_id: str) -> bool:
        """Turn the watcher of `session_id` on or off; True when it is now on."""
        conf = self._runtime.settings.watcher
        watcher = await self._runtime.watchers.toggle(session_id, debounce=conf.debounce,
                                                      min_interval=conf.min_interval,
                                                      max_per_hour=conf.max_per_hour)
        return watcher is not None

    def watching(self, session_id: str) -> bool:
        """A watcher is on for `session_id`."""
        return self._runtime.watchers.get(session_id) is not None
