"""Work-arounds for defects of the pinned Textual release hold (and fail if the defect changes shape)."""

from __future__ import annotations

import gc

from textual._compositor import CompositorUpdate
from textual._styles_cache import StylesCache
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static, TextArea

from yeetui.tui.textual_workarounds import (
    MeasuredAfterEachUpdate,
    app_bindings,
    being_removed,
    own_bindings,
    paint_now,
    release_styles_caches,
    user_keymap,
)


class Column(App[None]):
    def compose(self) -> ComposeResult:
        yield VerticalScroll()


def orphaned_styles_caches(app: App[None]) -> int:
    for node in app.screen.walk_children(with_self=True):
        node.displayed_children  # noqa: B018  # a parent's cached list of its shown children is refreshed
    gc.collect()
    live = {id(widget._styles_cache) for widget in [app.screen, *app.screen.walk_children(Widget)]}
    return sum(1 for cache in gc.get_objects() if isinstance(cache, StylesCache) and id(cache) not in live)


async def test_the_lines_of_unmounted_widgets_are_released() -> None:
    app = Column()
    async with app.run_test(size=(60, 60)) as pilot:
        column = app.query_one(VerticalScroll)
        await column.mount(Static("stays"))
        await column.mount_all([Static(f"line {n}\n" * 3) for n in range(30)])
        await pilot.pause()
        before = orphaned_styles_caches(app)
        await column.remove_children(list(column.children)[1:])
        await pilot.pause()
        # Textual's lru_cache on StylesCache.get_inner_outer keeps the drawn widgets' caches (and lines)
        kept = orphaned_styles_caches(app)
        assert kept >= before + 10  # the ones drawn (about half fit on the screen)
        release_styles_caches()
        assert orphaned_styles_caches(app) <= before


class Keyed(App[None]):
    BINDINGS = [("ctrl+t", "toggle_dark", "Theme"), Binding("f9", "bell", "Ring", id="ring")]

    def compose(self) -> ComposeResult:
        yield KeyedArea()


class KeyedArea(TextArea):
    BINDINGS = [Binding("f5", "select_all", id="area.all"), Binding("f6", "cursor_left", priority=True)]


async def test_the_apps_own_bindings_and_the_users_keymap_are_read_where_textual_keeps_them() -> None:
    """`app_bindings` and `user_keymap` read Textual's private `_bindings` / `_keymap`: a release that moves
    them fails here, not silently in /help, the hotkey collision check or the composer's keys."""
    app = Keyed()
    async with app.run_test():
        assert {(b.key, b.description) for b in app_bindings(app)} >= {("ctrl+t", "Theme"), ("f9", "Ring")}
        assert all(isinstance(b, Binding) for b in app_bindings(app))
        area = app.query_one(KeyedArea)
        assert [b.action for b in own_bindings(area, "backspace")] == ["delete_left"]
        assert [b.action for b in own_bindings(area, "f5")] == ["select_all"]
        assert own_bindings(area, "f6") == [] and own_bindings(area, "f9") == []  # priority; the app's
        app.set_keymap({"ring": "f8", "area.all": "f7"})
        assert user_keymap(app) == {"ring": "f8", "area.all": "f7"}
        assert own_bindings(area, "f5") == [] and [b.action for b in own_bindings(area, "f7")] == ["select_all"]


class Measured(MeasuredAfterEachUpdate, Static):
    pass


async def test_a_widget_whose_content_changes_while_a_layout_is_pending_gets_its_new_height() -> None:
    """A layout of the screen runs between two updates of a widget (on a loaded machine the screen's layout
    for another widget comes before this one's idle): the widget must still get the height of its last
    content. A plain Static keeps the height the layout measured in between — Textual's defect; when that
    assertion fails, a release fixed it and `MeasuredAfterEachUpdate` can go."""
    app = Column()
    async with app.run_test(size=(60, 20)) as pilot:
        column = app.query_one(VerticalScroll)
        plain, measured = Static("x"), Measured("x")
        await column.mount_all([plain, measured])
        await pilot.pause()
        for widget in (plain, measured):
            widget.update("")  # a layout is pending for it...
        mounted = column.mount(Static("a sibling"))  # ...when the screen is laid out for another widget,
        app.screen._refresh_layout()  # which measures it empty
        for widget in (plain, measured):
            widget.update("one\ntwo\nthree")
        await mounted
        await pilot.pause()
        assert measured.size.height == 3
        assert plain.size.height != 3  # the height measured in between, kept


class Typed(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("ELSEWHERE")
        yield TextArea()


async def test_a_widget_s_repaint_is_written_at_once_and_only_its_own() -> None:
    """`paint_now` renders the screen's dirty regions through Textual's private compositor and `_display`:
    a release that moves them fails here, not as keys echoed a frame late. Only the widget's own lines are
    written, nothing while updates are batched or another screen is shown."""
    app = Typed()
    async with app.run_test(size=(40, 12)) as pilot:
        area = app.query_one(TextArea)
        area.focus()
        await pilot.pause()
        written: list[str] = []
        display = app._display

        def record(screen: object, update: CompositorUpdate | None) -> None:
            written.append("" if update is None else update.render_segments(app.console))

        app._display = record  # type: ignore[method-assign, assignment]  # Textual's private painter, recorded
        app.query_one(Static).update("CHANGED-TOO")
        area.insert("typed-now")
        assert paint_now(area)
        assert len(written) == 1 and "typed-now" in written[0] and "CHANGED" not in written[0]
        assert paint_now(area)  # nothing left to draw
        assert written[-1] == ""
        with app.batch_update():
            area.insert("+")
            assert not paint_now(area)
        await app.push_screen(ModalScreen())
        await pilot.pause()
        area.insert("!")
        assert not paint_now(area)
        app._display = display  # type: ignore[method-assign]


async def test_a_widget_being_removed_says_so_from_the_start_of_its_removal() -> None:
    """`being_removed` reads Textual's private flags: false while mounted; true for the node and every child as
    soon as `remove()` starts, while the children are still there; true once it is gone."""
    app = Column()
    async with app.run_test(size=(40, 10)) as pilot:
        column = app.query_one(VerticalScroll)
        line = Static("a line")
        await column.mount(line)
        assert not being_removed(column) and not being_removed(line) and not being_removed(app.screen)
        removal = column.remove()
        assert being_removed(column) and being_removed(line)
        assert not being_removed(app.screen)
        await removal
        await pilot.pause()
        assert being_removed(column) and being_removed(line)
