"""Full garbage collections wait for a pause in the typing, but never longer than MAX_DELAY."""

from __future__ import annotations

import gc

from yeetui.tui.gc_pacing import DROPPED_DUE, DUE_AFTER, MAX_DELAY, QUIET, FullCollections, calm_gc


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pacer(clock: Clock, pending: list[int], runs: list[float]) -> FullCollections:
    def collect() -> None:
        runs.append(clock.now)
        pending[0] = 0

    return FullCollections(clock=clock, pending=lambda: pending[0], collect=collect)


def test_a_due_collection_waits_for_a_quiet_keyboard() -> None:
    clock, pending = Clock(), [0]
    runs: list[float] = []
    full = pacer(clock, pending, runs)
    assert not full.tick()  # nothing due
    pending[0] = DUE_AFTER
    full.key()
    clock.now += QUIET / 2
    assert not full.tick() and runs == []  # typing: it waits
    clock.now += QUIET
    assert full.tick() and runs == [clock.now]  # a pause: it runs
    assert not full.tick()  # and is not due again


def test_a_user_who_never_pauses_still_gets_one_after_max_delay() -> None:
    clock, pending = Clock(), [DUE_AFTER]
    runs: list[float] = []
    full = pacer(clock, pending, runs)
    start = clock.now
    while not runs:
        full.key()
        clock.now += 1.0
        full.tick()
        assert clock.now - start <= MAX_DELAY + 2
    assert MAX_DELAY <= runs[0] - start <= MAX_DELAY + 1


def test_calm_gc_leaves_full_collections_to_the_pacer() -> None:
    before = gc.get_threshold()
    try:
        calm_gc()
        young, _, full = gc.get_threshold()
        assert young > 700 and full >= 1_000_000  # automatic full collections are out of reach
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_many_unmounted_views_make_a_collection_due_whatever_the_generation_counts() -> None:
    clock, pending = Clock(), [0]
    runs: list[float] = []
    full = pacer(clock, pending, runs)
    full.dropped(DROPPED_DUE - 1)
    assert not full.tick()  # not yet
    full.dropped(1)
    full.key()
    assert not full.tick()  # due, but the user is typing
    clock.now += QUIET
    assert full.tick() and len(runs) == 1
    full.dropped(DROPPED_DUE - 1)
    assert not full.tick()  # the count started again


def test_the_app_collects_as_soon_as_enough_views_were_unmounted_unless_the_user_types(tmp_path) -> None:
    from yeetui.tui.app import YeetuiApp
    from yeetui.tui.widgets.conversation_window import EntryWindow

    clock, pending = Clock(), [0]
    runs: list[float] = []
    app = YeetuiApp(cwd=tmp_path, tune_gc=True)
    app.full_collections = pacer(clock, pending, runs)
    app.on_entry_window_dropped(EntryWindow.Dropped(DROPPED_DUE // 2))
    assert runs == []  # not due yet
    app.full_collections.key()
    app.on_entry_window_dropped(EntryWindow.Dropped(DROPPED_DUE))
    assert runs == []  # due, but the user is typing: the 1 s tick runs it after a pause
    clock.now += QUIET
    app.on_entry_window_dropped(EntryWindow.Dropped(1))
    assert runs == [clock.now]  # at once, not at the next tick
