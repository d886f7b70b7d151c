"""A scrolling column that keeps only the entries near the screen mounted (the base of ConversationView).

Entries are built from `Item`s by the subclass. Items older than everything mounted are *held* (`_held`);
while the user reads far above the end, entries far below the screen are unmounted into a *gap* (`_below`,
re-mounted before `_gap_at`, or at the end when that is None, as the user scrolls towards it). Which step
comes next is decided after every scroll and layout (`_due_steps`), one step at a time.

Both are bounded: past `HELD_MAX` the oldest held items are dropped (`has_older`: the store has them), past
`BELOW_MAX` the newest items of the gap are (`has_newer`), and pages are fetched again from the store as the
user scrolls towards them — so memory stays flat however far the user scrolls, either way, and a jump to
the start of a long session only needs its first page. Back at the end, following it, what lies far above is
let go down to about what opening the session keeps (`_settling`, `SETTLED_HELD`).

Mounting or unmounting above the screen keeps the lines on screen still: the topmost visible entry is
pinned and the scroll offset corrected inside `arrange`, as Textual's own anchor is, so no frame shows the
content shifted. While following the end, the anchor keeps the bottom instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from textual.containers import VerticalScroll
from textual.geometry import Region, Size
from textual.layout import DockArrangeResult
from textual.message import Message
from textual.scrollbar import ScrollBar
from textual.widget import Widget

from yeetui.tui.textual_workarounds import SizedByLayout, release_styles_caches
from yeetui.tui.widgets.render_text import Item, chunk_end, chunk_start
from yeetui.tui.widgets.tool_views import Entry

SCREENS = 2
"""View heights of items mounted at once: by `load` and by each step of scrolling."""
HELD_MAX = 1000
"""Held items kept in memory; older ones are dropped (the store still has them)."""
BELOW_MAX = 1000
"""Items kept in the gap below the screen; newer ones are dropped (the store still has them)."""
SETTLED_HELD = 120
"""Held items kept once the user is back at the end, following it: about what opening the session holds."""

Step = Callable[[], Awaitable[bool]]


class EntryWindow(SizedByLayout, VerticalScroll):
    class Dropped(Message):
        """`views` widgets (entries and what they contain) were unmounted: garbage for the app's next full
        collection (see `gc_pacing.FullCollections.dropped`)."""

        def __init__(self, views: int) -> None:
            super().__init__()
            self.views = views

    def __init__(self, *, window: int, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]  # Widget's own keywords, passed through
        self.window = window
        self.has_older = False
        """Older messages exist in the store beyond the held ones."""
        self.has_newer = False
        """Newer messages exist in the store between the gap's items and what follows the gap."""
        self._held: list[Item] = []
        self._below: list[Item] = []
        self._gap_at: Widget | None = None
        self._pin: tuple[Widget, float] | None = None
        """An entry and the row (relative to the top of the view) that layouts keep it at."""
        self._arranged: DockArrangeResult | None = None
        self._regions_of: DockArrangeResult | None = None
        self._regions_by_widget: dict[Widget, Region] = {}
        self._step_pending = self._stepping = False
        self._live: Widget | None = None

    # -- for the subclass --------------------------------------------------------------------------

    def _build(self, items: Sequence[Item]) -> list[Widget]:
        """New views for `items`, oldest first; the first view of each message carries its items."""
        raise NotImplementedError

    def _forget(self, widgets: Sequence[Widget]) -> None:
        """`widgets` are about to be unmounted (drop any bookkeeping about them)."""

    async def _window_changed(self) -> None:
        """Items were held, released or dropped (the place to update an "older messages" line)."""

    def _want_store_page(self) -> None:
        """Nothing is held and the user is near the top, or few are held: time to fetch older items."""

    def _want_newer_page(self) -> None:
        """Few items are left in the gap, newer ones are only in the store, and the user is near the gap."""

    # -- queries -----------------------------------------------------------------------------------

    @property
    def entries(self) -> list[Widget]:
        """The mounted entries, oldest first."""
        return [child for child in self.children if isinstance(child, Entry)]

    @property
    def held(self) -> list[Item]:
        """Items older than everything mounted, oldest first."""
        return list(self._held)

    @property
    def paging(self) -> bool:
        """True while a step (mounting or unmounting entries) is scheduled or under way."""
        return self._step_pending or self._stepping

    @property
    def following(self) -> bool:
        """True while the view sticks to the end (the user has not scrolled away from it)."""
        return self.is_anchored and not self._anchor_released

    def _chunk_rows(self) -> tuple[int, int]:
        """Width and rows to fill per step. The terminal's height stands in for the view's: a view that
        was just mounted, or is hidden, has no settled size, and mounting a little more is cheap."""
        return (self.size.width or self.app.size.width) - 4, SCREENS * self.app.size.height

    def _reset(self, items: Sequence[Item]) -> list[Item]:
        """Forget everything paged; hold all but the newest chunk of `items` and return that chunk."""
        self._below.clear()
        self._gap_at, self._pin = None, None
        start = chunk_start(items, *self._chunk_rows())
        self._held = list(items[:start])
        return list(items[start:])

    def _hold_older(self, items: Sequence[Item]) -> None:
        self._held[:0] = items

    def _gap_at_end(self) -> bool:
        """True while the newest items are unmounted (the user reads far above the end)."""
        return (bool(self._below) or self.has_newer) and self._gap_at is None

    def _hold_newer(self, items: Sequence[Item], *, more: bool) -> None:
        """A newer page from the store: it joins the gap's items (`more`: still newer ones in the store)."""
        self._below.extend(items)
        if len(self._below) > BELOW_MAX:  # the gap grew from above meanwhile
            del self._below[BELOW_MAX:]
            more = True
        self.has_newer = more
        if not self._below and not more:
            self._gap_at = None
            self._sync_anchor()
        self._check()

    async def _replace(self, marker: list[Widget], first: Sequence[Item], below: Sequence[Item], *,
                       held: Sequence[Item] = (), has_older: bool = False, has_newer: bool = False,
                       keep: Sequence[Widget] = ()) -> None:
        """Show `first` in place of everything paged: `held` above it, `below` in a gap after it, then the
        entries in `keep` (a live answer and its tool blocks, which the store does not hold yet)."""
        kept = [child for child in self.children if child in keep]
        gone = [child for child in self.children if child not in kept]
        self._forget(gone)
        self._held, self._below = list(held), list(below)
        self.has_older, self.has_newer = has_older, has_newer
        self._pin = None
        views = self._build(first)
        with self.app.batch_update():
            await self._unmount(gone)
            before = kept[0] if kept else None
            if before is not None:
                await self.mount_all(marker + views, before=before)
            else:
                await self.mount_all(marker + views)
        self._gap_at = kept[0] if kept and (self._below or has_newer) else None

    async def _mount_at_end(self, views: Sequence[Widget]) -> None:
        """Mount new views at the end; a gap that was at the end now sits before them."""
        if views:
            if self._gap_at_end():
                self._gap_at = views[0]
            await self.mount_all(views)
        self._check()

    # -- deciding the next step --------------------------------------------------------------------

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._pin is not None:  # the user scrolled: the pinned entry moves with them
            self._pin = (self._pin[0], self._pin[1] - (new_value - old_value))
        if round(old_value) != round(new_value):
            self._sync_anchor()
            self._check()

    def _sync_anchor(self) -> None:
        """While the newest items are unmounted, the bottom of what is mounted is not the end: no anchor
        there (it would follow each chunk mounted below and race to the end). Back at the real end, the
        view follows again."""
        if self._gap_at_end():
            if self.is_anchored:
                self.anchor(False)
        elif not self.is_anchored and self.scroll_y >= self.max_scroll_y:
            self.anchor()

    def on_mouse_scroll_up(self) -> None:
        if self.scroll_y <= 0:
            self._check()

    def _check(self) -> None:
        """Schedule the next step if one is due (one at a time; each checks again after its layout)."""
        if self._step_pending or self._stepping or not self._showing():
            return
        if self._due_steps():
            self._step_pending = True
            self.call_later(self._run_step)
        elif not self._held and self._near_top():
            self._want_store_page()
        elif self.has_newer and not self._below and self._near_gap():
            self._want_newer_page()

    def _due_steps(self) -> list[Step]:
        """Steps worth trying now, most pressing first (a trim can find nothing far enough to unmount)."""
        if not self._showing():
            return []
        steps: list[Step] = []
        if len(self.children) > self.window + 1 or self._settling():
            steps.append(self._trim)
        if self._held and self._near_top():
            steps.append(self._reveal_above)
        if self._below and self._near_gap():
            steps.append(self._reveal_gap)
        return steps

    async def _run_step(self) -> None:
        self._step_pending = False
        if self._stepping:
            return
        self._stepping = True
        changed = False
        try:
            for step in self._due_steps():
                if changed := await step():
                    break
        finally:
            self._stepping = False
            self._sync_anchor()
        if changed:
            self.call_after_refresh(self._check)
        elif not self._held and self._near_top() and self._showing():
            self._want_store_page()
        elif self.has_newer and not self._below and self._near_gap() and self._showing():
            self._want_newer_page()

    def _showing(self) -> bool:
        """False while hidden (another session is shown) or gone: nothing is paged until it is back."""
        return bool(self.is_attached and self.display and self.size.height)

    def _near_top(self) -> bool:
        return self.scroll_y < self.size.height

    def _gap_y(self) -> int | None:
        if self._gap_at is None:
            return self.virtual_size.height
        return self._arranged_y(self._gap_at)

    def _near_gap(self) -> bool:
        gap = self._gap_y()
        height = self.size.height
        return gap is not None and self.scroll_y - height <= gap <= self.scroll_y + 2 * height

    # -- steps -------------------------------------------------------------------------------------

    async def _reveal_above(self) -> bool:
        """Mount the newest held items above what is shown."""
        start = chunk_start(self._held, *self._chunk_rows())
        items, self._held = self._held[start:], self._held[:start]
        if not items:
            return False
        await self._mount_items(items, before=next(iter(self.entries), None))
        if len(self._held) < 2 * self.window // 3:
            self._want_store_page()
        return True

    async def _reveal_gap(self) -> bool:
        """Mount a chunk of the gap: its oldest items when the user comes from above, else its newest."""
        gap = self._gap_y() or 0
        at = self._gap_at
        if gap >= self.scroll_y:
            end = chunk_end(self._below, *self._chunk_rows())
            items, self._below = self._below[:end], self._below[end:]
            await self._mount_items(items, before=at)
        else:
            start = chunk_start(self._below, *self._chunk_rows())
            items, self._below = self._below[start:], self._below[:start]
            views = await self._mount_items(items, before=at)
            self._gap_at = views[0] if views and self._below else at
        if self.has_newer:
            if len(self._below) < 2 * self.window // 3:
                self._want_newer_page()
        elif not self._below:
            self._gap_at = None
        return True

    async def _mount_items(self, items: Sequence[Item], *, before: Widget | None) -> list[Widget]:
        views = self._build(items)
        if views:
            self._pin_top()
            with self.app.batch_update():
                if before is not None and before.parent is self:
                    await self.mount_all(views, before=before)
                else:
                    await self.mount_all(views)
        await self._window_changed()
        return views

    def _settling(self) -> bool:
        """True when the user is back at the end with more than half a window mounted (after reading far up):
        time to let go of what is far above, down to about what opening the session mounts."""
        return self.following and not self._gap_at_end() and len(self.children) > self.window // 2

    async def _trim(self) -> bool:
        """Unmount entries far from the screen, down to a tenth below the window: far above it into
        `_held` while the user is in the lower half (or following), else far below it into the gap. Back at
        the end (`_settling`), down to a quarter of the window, and the held items to `SETTLED_HELD`."""
        entries = self.entries
        settling = len(entries) <= self.window and self._settling()
        excess = len(entries) - (self.window // 4 if settling else self.window - self.window // 10)
        if excess <= 0:
            return False
        lower_half = self.following or self._top_visible_index(entries) > len(entries) // 2
        if lower_half:
            doomed, gap_at = self._far_above(entries, excess, any_above=not settling), self._gap_at
        else:
            doomed, gap_at = self._far_below(entries, excess)
        if not doomed:
            return False
        items = [item for entry in doomed for item in entry.items]  # type: ignore[attr-defined]  # every Entry has items
        if lower_half:
            self._held.extend(items)
            after = entries[len(doomed)] if len(doomed) < len(entries) else None
            if after is not None and after is self._gap_at:  # all above the gap went: hold the gap's too
                self._held.extend(self._below)
                self._below, self._gap_at = [], None
            keep = min(SETTLED_HELD, HELD_MAX) if settling else HELD_MAX
            if len(self._held) > keep:
                del self._held[: len(self._held) - keep]
                self.has_older = True
        else:
            self._below[:0] = items
            self._gap_at = gap_at
            if len(self._below) > BELOW_MAX:
                del self._below[BELOW_MAX:]
                self.has_newer = True
        self._forget(doomed)
        self._pin_top()
        await self._unmount(doomed)
        await self._window_changed()
        return True

    def _far_above(self, entries: list[Widget], excess: int, *, any_above: bool = True) -> list[Widget]:
        """Up to `excess` oldest entries, whole rebuildable messages, lying above the screen by more than a
        screen (any, while following, unless not `any_above`)."""
        limit = None if self.following and any_above else self.scroll_y - self.size.height
        end = entries.index(self._gap_at) if self._gap_at in entries else len(entries)
        count = 0
        while count < min(excess, end) and self._rebuildable(entries[count]):
            region = self._regions().get(entries[count])
            if limit is not None and (region is None or region.bottom > limit):
                break
            count += 1
        while count > 0 and not self._boundary(entries, count):
            count -= 1
        return entries[:count]

    def _far_below(self, entries: list[Widget], excess: int) -> tuple[list[Widget], Widget | None]:
        """Up to `excess` entries, whole rebuildable messages, lying below the screen by more than a
        screen and ending where the gap is (or opening one); also the entry the gap is then before."""
        limit = self.scroll_y + 2 * self.size.height

        def far(index: int) -> bool:
            y = self._arranged_y(entries[index])
            return y is not None and y >= limit

        if self._below:  # the gap grows upwards
            end = entries.index(self._gap_at) if self._gap_at in entries else len(entries)
        else:  # a gap opens after the run of rebuildable entries that starts far below
            end = next((i for i in range(len(entries)) if far(i)), len(entries))
            while end < len(entries) and self._rebuildable(entries[end]):
                end += 1
            while end < len(entries) and not self._boundary(entries, end):
                end -= 1
        start = end
        while start > 0 and end - start < excess and self._rebuildable(entries[start - 1]) and far(start - 1):
            start -= 1
        while start < end and not self._boundary(entries, start):
            start += 1
        return entries[start:end], entries[end] if end < len(entries) else None

    async def _unmount(self, widgets: Sequence[Widget]) -> None:
        """Unmount `widgets`, keep nothing that would keep them alive (the regions of the layout before they
        went, Textual's styles-cache lru), and tell the app how much garbage that made."""
        views = sum(1 + len(widget.walk_children()) for widget in widgets)
        await self.remove_children(widgets)
        release_styles_caches()
        self._regions_of, self._regions_by_widget = None, {}
        if views:
            self.post_message(self.Dropped(views))

    def _unmounting(self, widget: Widget) -> None:
        """`widget` is being removed outside a trim: the gap, if it sits before it, moves to the next entry."""
        if widget is self._gap_at:
            entries = self.entries
            index = entries.index(widget) + 1 if widget in entries else len(entries)
            self._gap_at = entries[index] if index < len(entries) else None
            self._sync_anchor()

    def _rebuildable(self, entry: Widget) -> bool:
        return entry is not self._live and (bool(getattr(entry, "items", ())) or
                                           getattr(entry, "message_id", None) is not None)

    @staticmethod
    def _boundary(entries: list[Widget], index: int) -> bool:
        """True if `entries[index]` starts a message (a cut there keeps each message's views together)."""
        if index <= 0 or index >= len(entries):
            return True
        current = getattr(entries[index], "message_id", None)
        return current is None or current != getattr(entries[index - 1], "message_id", None)

    # -- keeping the visible lines in place --------------------------------------------------------

    def _top_visible_index(self, entries: list[Widget]) -> int:
        top = self.scroll_y
        regions = self._regions()
        for index, entry in enumerate(entries):
            region = regions.get(entry)
            if region is not None and region.bottom > top:
                return index
        return len(entries)

    def _pin_top(self) -> None:
        """Keep the topmost visible entry at its screen row through the coming layouts (the user's own
        scrolling moves the row), like a browser's scroll anchoring."""
        if self.following or self._arranged is None:
            return
        if self.app.animator.is_being_animated(self, "scroll_y"):
            self.app.animator.force_stop_animation(self, "scroll_y")  # a page-up in flight lands first
        entries = self.entries
        index = self._top_visible_index(entries)
        y = self._arranged_y(entries[index]) if index < len(entries) else None
        if y is not None:
            self._pin = (entries[index], y - self.scroll_y)

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        arranged = super().arrange(size, optimal)
        if optimal:
            return arranged
        self._arranged = arranged
        if self.following:
            self._pin = None  # the anchor keeps the end in view (and moves it without telling the pin)
        elif self._pin is not None:
            widget, row = self._pin
            y = self._arranged_y(widget)
            if y is None:
                self._pin = None
            elif y - row != self.scroll_y:
                self.set_reactive(VerticalScroll.scroll_y, max(0.0, y - row))
                self.set_reactive(VerticalScroll.scroll_target_y, self.scroll_y)
                self.vertical_scrollbar.set_reactive(ScrollBar.position, self.scroll_y)
        return arranged

    def _regions(self) -> dict[Widget, Region]:
        """Where each child was placed by the last layout (in the column's own coordinates)."""
        arranged = self._arranged
        if arranged is None:
            return {}
        if self._regions_of is not arranged:
            self._regions_by_widget = {p.widget: p.region for p in arranged.placements}
            self._regions_of = arranged
        return self._regions_by_widget

    def _arranged_y(self, widget: Widget) -> int | None:
        """`widget`'s row in the last layout (None if it was not in it)."""
        region = self._regions().get(widget)
        return region.y if region is not None else None
