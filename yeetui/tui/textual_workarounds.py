"""Work-arounds for defects of the pinned Textual release, each named with its upstream issue, and the only
uses of Textual's private names (each with a test in tests/tui/test_textual_workarounds.py that fails when a
release changes it).

Each one checks for the defective part before touching it, so a Textual release that fixes (or renames) it
turns the work-around into a no-op rather than an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from textual._styles_cache import StylesCache
from textual.app import App
from textual.binding import Binding
from textual.dom import DOMNode
from textual.geometry import Region, Size
from textual.widget import Widget


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


class SizedByLayout:
    """Mixin for widgets whose size only ever changes as the result of a layout: no second layout after it.

    When a layout gives a widget a new virtual size, Textual stores it through a reactive that asks for
    another layout of the whole screen; the second one finds nothing to change. While an answer streams,
    every line it gains grows the answer's text, the answer and the conversation: each such frame was laid
    out twice (~630 layouts for ~320 new lines in 30 s). Scrollbars still appear and disappear as they should:
    `_scroll_update` runs either way, and the scrollbar reactives ask for their own layout when they change.
    """

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        # A mixin's super() is the widget it is mixed into; mypy sees only `object` here.
        updated: bool = super()._size_updated(size, virtual_size, container_size, layout=False)  # type: ignore[misc]
        return updated


class MeasuredAfterEachUpdate:
    """Mixin for widgets whose content changes (and with it their height) more than once between two idles.

    `refresh(layout=True)` counts a layout update (`_layout_updates`, part of the key of the widget's cached
    box model) only when no layout is pending yet. A layout that runs meanwhile — the screen's, for another
    widget — caches this one's box model for the content it had then; the next content then finds that
    cached box model under the same key, and the widget keeps the old height for good. On a loaded machine
    an answer's open end, replaced right after a frozen part was mounted above it, stayed 0 lines tall
    until the next write. Counting every such refresh makes the next layout measure the new content.
    """

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False,
                recompose: bool = False) -> Self:
        if layout and getattr(self, "_layout_required", False) and hasattr(self, "_layout_updates"):
            self._layout_updates += 1
        # A mixin's super() is the widget it is mixed into; mypy sees only `object` here.
        refreshed: Self = super().refresh(*regions, repaint=repaint, layout=layout,  # type: ignore[misc]
                                          recompose=recompose)
        return refreshed


def app_bindings(app: App[Any]) -> list[Binding]:
    """The app's own key bindings (its BINDINGS, as the user's keymap changed them), without the screens' and
    widgets' that `active_bindings` mixes in. Textual keeps them in the private `_bindings`."""
    return [binding for _, binding in getattr(app, "_bindings", ())]


def own_bindings(widget: Widget, key: str) -> list[Binding]:
    """The widget's own bindings for `key` (not its ancestors', not priority ones), with the user's keymap
    applied: those Textual runs once the key has bubbled back to the app. Textual keeps them in the private
    `_bindings`."""
    bindings = getattr(widget, "_bindings", None)
    if bindings is None:
        return []
    bindings = bindings.copy()
    keymap = user_keymap(widget.app)
    if keymap:
        bindings.apply_keymap(keymap)
    return [binding for binding in bindings.key_to_bindings.get(key, ()) if not binding.priority]


def user_keymap(app: App[Any]) -> Mapping[str, str]:
    """The keymap the user set (`set_keymap`): binding id → keys. Textual keeps it in the private `_keymap`;
    a widget that handles keys before Textual's bindings (the composer) must honour it too."""
    keymap = getattr(app, "_keymap", None)
    return keymap if isinstance(keymap, Mapping) else {}


def paint_now(widget: Widget) -> bool:
    """Write what `widget` has to repaint to the terminal now, rather than at its screen's next frame; whether
    it did.

    Textual draws a screen at most `TEXTUAL_FPS` (60) times a second: a refresh waits for the next frame, up
    to 1/60 s, and that frame also carries whatever else changed meanwhile — while an answer streams, a layout
    of the screen and a repaint of the conversation, 20 ms and more. For a typed key the user waits on the
    echo alone, and drawing it at once is what terminal emulators and other TUIs do (television's 60 fps cap
    dropped for input, alexpasmantier/television#1108; a synchronous render after input in ghostty-web,
    coder/ghostty-web#161). Only the widget's own lines are drawn, where the screen's last frame put it: what
    the terminal shows is that frame, so a layout still pending (which may move the widget) moves it, and
    repaints both places, at the next frame as before. Nothing is drawn while updates are batched, or when
    the widget is not on the screen shown.
    """
    app = widget.app
    screen = widget.screen
    compositor = getattr(screen, "_compositor", None)
    if (compositor is None or not hasattr(app, "_display") or getattr(app, "_batch_count", True) or app.is_inline
            or screen is not app.screen or widget not in compositor.visible_widgets):
        return False
    compositor.update_widgets({widget})
    app._display(screen, compositor.render_update(screen_stack=getattr(app, "_background_screens", [])))
    return True


def being_removed(node: DOMNode) -> bool:
    """Whether Textual has begun taking `node` down (its `remove()`, or the app's shutdown).

    Textual marks the whole subtree at once (the private `_pruning`; `_closing` and `_closed` later), then
    removes the children first and the node last, and stops the node's workers only then. A worker of the node
    that was awaiting I/O meanwhile runs on and finds its children gone: the main screen's start-up, when the
    app is taken down just as the session opens (a `query_one` raised NoMatches). No public property says so.
    """
    return any(getattr(node, flag, False) is True for flag in ("_pruning", "_closing", "_closed"))
