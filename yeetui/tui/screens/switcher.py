"""The session switcher: the tree of sessions (primary → children → grandchildren) with a fuzzy filter.

The screen gets plain `SessionNode`s and returns what the user picked: a session id, `"new"` for a new
session, or None (escape). Typing filters the tree on label, title and profile: when some sessions match
every typed word at the start of one of their words (`log` → "fix the login test"), only those are shown;
otherwise any whose text holds each word as a subsequence. Ancestors of a match stay (dimmed) so every match
keeps its place in the tree; when nothing matches, a line says so and enter opens nothing (it never starts a
session the user did not ask for). While the filter has the
focus, up/down still move the tree's cursor and enter opens it; tab moves into the tree, where `p` or
backspace jump to the parent and `n` starts a new session.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Tree
from textual.widgets.tree import TreeNode

from yeetui.application.session_tree import SessionTreeNode
from yeetui.text import dollars, tokens_text

NEW_SESSION = "new"
"""What the switcher returns for "start a new session"."""
NEW_LABEL = "+ New session"
NOTHING = "nothing"
"""The line that says no session matches the filter: choosing it does nothing."""

_STATUS_WORDS = {"waiting_permission": "needs permission", "waiting_user": "needs input"}
_STATUS_GROUPS = {
    "running": "live", "watching": "live", "completed": "ok", "answered": "ok", "failed": "bad", "timeout": "bad",
    "budget_exhausted": "bad", "quota_exhausted": "bad",
    "waiting_permission": "attention", "waiting_user": "attention", "interrupted": "attention",
}
_TOGGLE = Style.from_meta({"toggle": True})
"""Clicking the expand icon toggles the node instead of opening it (Tree's own convention)."""


SessionNode = SessionTreeNode
"""A session as the switcher shows it: the application's read model, as it comes."""


def fuzzy_positions(query: str, text: str) -> list[int] | None:
    """Where the characters of `query` occur in order in `text` (case-insensitive); None when they do not."""
    lowered = text.lower()
    positions: list[int] = []
    start = 0
    for char in query.lower():
        index = lowered.find(char, start)
        if index < 0:
            return None
        positions.append(index)
        start = index + 1
    return positions


def word_positions(query: str, text: str) -> list[int] | None:
    """Where `query` occurs in `text` at the start of a word (case-insensitive); None when it does not."""
    found = re.search(r"(?<![^\W_])" + re.escape(query.lower()), text.lower())
    return list(range(found.start(), found.end())) if found else None


def match_positions(query: str, text: str) -> list[int] | None:
    """The characters to mark for `query` in `text`: a word it begins, else its letters in order."""
    return word_positions(query, text) or fuzzy_positions(query, text)


def _haystack(node: SessionNode) -> str:
    return f"{node.label} {node.title} {node.profile}"


def matches(query: str, node: SessionNode, *, whole_words: bool = False) -> bool:
    """Every word of `query` begins a word of the node's label, title and profile (`whole_words`), or is a
    subsequence of them."""
    find = word_positions if whole_words else fuzzy_positions
    return all(find(word, _haystack(node)) is not None for word in query.split())


def visible_ids(nodes: Iterable[SessionNode], query: str) -> tuple[set[str], set[str]]:
    """(ids to show, ids that match): the matches plus every ancestor of one. Word matches win: fuzzy ones
    count only when no session matches by words."""
    by_id = {node.id: node for node in nodes}
    matched = {node.id for node in by_id.values() if matches(query, node, whole_words=True)}
    if not matched:
        matched = {node.id for node in by_id.values() if matches(query, node)}
    shown: set[str] = set()
    for node_id in matched:
        current: str | None = node_id
        while current is not None and current in by_id and current not in shown:
            shown.add(current)
            current = by_id[current].parent_id
    return shown, matched


class SessionTree(Tree[str]):
    """A Tree whose labels are drawn from `SessionNode`s at render time, so theme changes apply."""

    COMPONENT_CLASSES = {
        "session-tree--live", "session-tree--ok", "session-tree--bad", "session-tree--attention",
        "session-tree--muted", "session-tree--unread", "session-tree--current", "session-tree--match",
        "session-tree--new", "session-tree--context",
    }

    DEFAULT_CSS = """
    SessionTree {
        & > .session-tree--live { color: $primary; }
        & > .session-tree--ok { color: $success; }
        & > .session-tree--bad { color: $error; }
        & > .session-tree--attention { color: $warning; }
        & > .session-tree--muted { color: $text-muted; }
        & > .session-tree--unread { color: $accent; text-style: bold; }
        & > .session-tree--current { color: $accent; text-style: bold; }
        & > .session-tree--match { text-style: bold underline; }
        & > .session-tree--new { color: $success; }
        & > .session-tree--context { text-style: dim; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        # Set before Tree's __init__, which already draws the root and so calls render_label.
        self.sessions: dict[str, SessionNode] = {}
        self.current: str | None = None
        self.query_text = ""
        self.matched: set[str] = set()
        super().__init__("sessions", id=id, classes=classes)
        self.show_root = False
        self.auto_expand = False

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"session-tree--{name}", partial=True)

    def label_text(self, session: SessionNode) -> Text:
        """`» oracle#4 · completed · 2 unread · 12k tok $0.04 · title` (» marks the current session; what it
        spent counts the sessions below it)."""
        text = Text()
        if session.id == self.current:
            text.append("» ", self._style("current"))
        text.append(session.label, Style(bold=True))
        text.append(" · ")
        text.append(_STATUS_WORDS.get(session.status, session.status),
                    self._style(_STATUS_GROUPS.get(session.status, "muted")))
        if session.unread:
            text.append(" · ")
            text.append(f"{session.unread} unread", self._style("unread"))
        if session.tokens:
            text.append(" · ")
            text.append(f"{tokens_text(session.tokens)} {dollars(session.cost)}", self._style("muted"))
        title = " ".join(session.title.split())
        if title:
            text.append(f" · {title}")
        if self.query_text:
            if session.id not in self.matched:
                text.stylize(self._style("context"))
            match_style = self._style("match")
            for word in self.query_text.split():
                for position in match_positions(word, text.plain) or ():
                    text.stylize(match_style, position, position + 1)
        return text

    def render_label(self, node: TreeNode[str], base_style: Style, style: Style) -> Text:
        if node.data == NEW_SESSION:
            label = Text(NEW_LABEL, self._style("new"))
        elif node.data == NOTHING:
            label = Text(f"No session matches {self.query_text} (esc closes; n in the tree starts a new one)",
                         self._style("muted"))
        elif node.data in self.sessions:
            label = self.label_text(self.sessions[node.data])
        else:
            label = Text(node.label) if isinstance(node.label, str) else node.label.copy()
        label.stylize(style)
        icon = ""
        if node.allow_expand:
            icon = self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE
        level, parent = 0, node.parent
        while parent is not None and parent is not self.root:
            level, parent = level + 1, parent.parent
        room = self.scrollable_content_region.width - level * self.guide_depth - len(icon)
        if room > 0 and label.cell_len > room:
            label.truncate(room, overflow="ellipsis")
        return Text.assemble((icon, base_style + _TOGGLE), label)


class SwitcherScreen(ModalScreen[str | None]):
    """Pick a session to open (its id), `"new"`, or nothing (None)."""

    BINDINGS = [
        Binding("escape", "close", "Close", id="switcher.close"),
        Binding("n", "new_session", "New session", id="switcher.new"),
        Binding("backspace,p", "parent", "Parent", id="switcher.parent"),
        Binding("down", "cursor_down", "Down", show=False, id="switcher.down"),
        Binding("up", "cursor_up", "Up", show=False, id="switcher.up"),
        Binding("slash", "focus_filter", "Filter", show=False, id="switcher.filter"),
    ]
    """
    | Key(s) | Description |
    | :- | :- |
    | escape | Close without choosing. |
    | enter | Open the session under the cursor. |
    | n | Start a new session (when not typing in the filter). |
    | backspace, p | Jump to the parent session (when not typing in the filter). |
    | up, down | Move the cursor (also while typing in the filter). |
    | / | Back to the filter. |
    """

    DEFAULT_CSS = """
    SwitcherScreen {
        align: center middle;
        #switcher-box {
            width: 90%;
            max-width: 110;
            height: 85%;
            border: round $primary;
            border-title-color: $primary;
            border-subtitle-color: $text-muted;
            background: $surface;
            padding: 0 1;
        }
        #switcher-filter { margin-bottom: 1; }
        SessionTree { height: 1fr; background: $surface; }
    }
    """

    def __init__(self, nodes: list[SessionNode], current: str | None) -> None:
        super().__init__()
        self.nodes = list(nodes)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="switcher-box") as box:
            box.border_title = "sessions"
            box.border_subtitle = "enter open · n new · p parent · esc close"
            yield Input(placeholder="filter: label, title or profile", id="switcher-filter", compact=True)
            yield SessionTree(id="switcher-tree")

    @property
    def session_tree(self) -> SessionTree:
        return self.query_one(SessionTree)

    def on_mount(self) -> None:
        self.rebuild("")
        self.query_one(Input).focus()

    # -- building ---------------------------------------------------------------------------------

    def rebuild(self, query: str) -> None:
        """Show the sessions that match `query` (all when it is blank) and their ancestors."""
        tree = self.session_tree
        tree.clear()
        tree.sessions = {node.id: node for node in self.nodes}
        tree.current, tree.query_text = self.current, query.strip()
        shown, tree.matched = visible_ids(self.nodes, tree.query_text)
        children: dict[str | None, list[SessionNode]] = {}
        for node in self.nodes:
            if node.id in shown:
                parent = node.parent_id if node.parent_id in shown else None
                children.setdefault(parent, []).append(node)
        placed: dict[str, TreeNode[str]] = {}
        new_entry = tree.root.add_leaf(NEW_LABEL, data=NEW_SESSION)

        def place(under: TreeNode[str], node: SessionNode) -> None:
            kids = [kid for kid in children.get(node.id, []) if kid.id not in placed]
            label = Text(node.label)
            branch = under.add(label, data=node.id, expand=True) if kids else under.add_leaf(label, data=node.id)
            placed[node.id] = branch
            for kid in kids:
                if kid.id not in placed:
                    place(branch, kid)

        for top in children.get(None, []):
            place(tree.root, top)
        for node in self.nodes:  # a cycle in parent ids: show what is left at the top rather than lose it
            if node.id in shown and node.id not in placed:
                place(tree.root, node)
        target: TreeNode[str] | None
        if tree.query_text:  # the first match; with none, a line saying so — never New session by itself
            target = next((placed[n.id] for n in self.nodes if n.id in tree.matched and n.id in placed), None) \
                or tree.root.add_leaf("", data=NOTHING)
        else:
            target = placed.get(self.current or "") or next(iter(placed.values()), None)
        tree.last_line  # noqa: B018 — builds the tree's lines, so the nodes know where they are
        tree.move_cursor(target or new_entry)

    @on(Input.Changed, "#switcher-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.rebuild(event.value)

    # -- choosing ---------------------------------------------------------------------------------

    @on(Input.Submitted, "#switcher-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._choose(self.session_tree.cursor_node)

    @on(Tree.NodeSelected)
    def _node_selected(self, event: Tree.NodeSelected[str]) -> None:
        event.stop()
        self._choose(event.node)

    def _choose(self, node: TreeNode[str] | None) -> None:
        if node is not None and node.data and node.data != NOTHING:
            self.dismiss(node.data)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_new_session(self) -> None:
        self.dismiss(NEW_SESSION)

    def action_parent(self) -> None:
        tree = self.session_tree
        node = tree.cursor_node
        if node is not None and node.parent is not None and node.parent is not tree.root:
            tree.move_cursor(node.parent)

    def action_cursor_down(self) -> None:
        self.session_tree.action_cursor_down()

    def action_cursor_up(self) -> None:
        self.session_tree.action_cursor_up()

    def action_focus_filter(self) -> None:
        self.query_one(Input).focus()
