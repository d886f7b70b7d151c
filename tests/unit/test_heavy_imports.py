"""The collector pause around big imports: off inside, back on after, shared by overlapping users."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from yeetui.heavy_imports import gc_paused


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_it_is_on_again_after_the_body_raises() -> None:
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("an import failed")
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_overlapping_pauses_in_two_threads_end_with_the_last_one() -> None:
    """Thread A pauses, B pauses, A ends first: the collector stays off until B ends too, then is on."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def first() -> None:
        with gc_paused():
            a_in.set()
            b_in.wait(60)
        a_out.set()

    def second() -> None:
        a_in.wait(60)
        with gc_paused():
            b_in.set()
            a_out.wait(60)
            seen["after A ended"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert seen == {"after A ended": False}
    assert gc.isenabled()
