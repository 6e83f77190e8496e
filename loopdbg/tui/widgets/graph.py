"""The body graph: laid out by graphviz (loopdbg.layout), drawn with box-drawing characters.

A ScrollView that renders one line at a time from a character canvas, so large bodies scroll and
pan. Each box shows the node's current value in the room it has; values that changed since the
previous stop stand out, and in node-stepping mode the node just executed is highlighted.

Keys (with the graph focused): the arrows move the cursor from box to box, ``enter`` shows the
selected node's full value in the Inspector (or opens a nested loop's body, or the branch of an
If taken at this stop, as a click does; ``o`` there shows the If's other branch on the same
inputs), ``escape`` comes back from a nested body or branch, ``v`` switches the boxes between
fitting the pane, wide and compact. Without graphviz the panel says how to install it and lists
the nodes.

A big body (converter output: a decoder's blocks) is drawn by its groups (loopdbg.layout.grouped):
a group is one box; ``enter`` or ``+`` opens it in place, ``-`` or ``escape`` closes the group the
cursor is in; finding a node opens the groups on the way to it. The top level and each open group
are laid out alone (loopdbg.layout.compound), an open group in a frame in place of its box, in
the background, while the picture before it stays on screen; ``enter`` on a frame's ``from
outside`` (``to outside``) box goes to what it reads from (what reads what leaves).
"""

from __future__ import annotations

import threading

import numpy as np
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from loopdbg.debug.expr import name_expression
from loopdbg.text import safe
from loopdbg.tui.messages import InspectValue
from loopdbg.tui.panel import Panel, View
from loopdbg.view.body import BodyView
from loopdbg.view.branch import BranchBody
from loopdbg.tui.widgets.graph_branches import IfBranches
from loopdbg.tui.widgets.graph_groups import GroupFolds
from loopdbg.tui.widgets.scroll import QuietResize, scroll_into_view
from loopdbg.view.diff import Changes
from loopdbg.view.search import Search
from loopdbg.view.fit import DETAIL_MODES, choose_layout, nearest_box, nested_values, value_keys
from loopdbg.tui.widgets.valuetext import side_by_side, value_text

STYLES = {
    None: Style(),
    "box": Style(color="bright_white"),
    "label": Style(color="bright_white", bold=True),
    "title": Style(color="bright_white", bold=True),
    "value": Style(color="cyan"),
    "box:changed": Style(color="yellow", bold=True),
    "box:current": Style(color="black", bgcolor="green", bold=True),
    "box:selected": Style(color="bright_cyan", bold=True, reverse=True),
    "value:changed": Style(color="yellow", bold=True),
    "edge": Style(color="grey62"),
    "back": Style(color="magenta"),
    "frame": Style(color="blue", bold=True),
    "role": Style(color="green", italic=True),
    "note": Style(color="yellow"),
}
NESTED = ("Loop", "TensorIterator")


class GraphView(IfBranches, GroupFolds, QuietResize, Panel, ScrollView, can_focus=True):
    """Scrollable drawing of the current loop's body, with a cursor on one box."""

    AREA = "main"
    ID = "graph"
    DEFAULT_CSS = "GraphView { scrollbar-size: 1 1; }"

    BINDINGS = [
        Binding("up", "move('up')", "box ↑", show=False),
        Binding("down", "move('down')", "box ↓", show=False),
        Binding("left", "move('left')", "box ←", show=False),
        Binding("right", "move('right')", "box →", show=False),
        Binding("enter", "select", "value"),
        Binding("v", "detail", "box size"),
        Binding("plus", "open_group", "open group", show=False),
        Binding("minus", "close_group", "close group", show=False),
        Binding("escape", "close_nested", "back to the running loop", show=False),
        Binding("o", "other_branch", "the If's other branch", show=False),
    ]

    def __init__(self, **kw):
        super().__init__(**kw)
        self.opened: str | None = None          # a nested loop's body opened from its box
        self.branches: list[BranchBody] = []    # If branches opened from their boxes (IfBranches)
        self._branch_base: dict = {}
        self.detail = DETAIL_MODES[0]
        self.selected: int | None = None        # the layer id of the box under the cursor
        self._layout = None
        self._spec = None
        self._view: View | None = None
        self._values: dict[str, np.ndarray] = {}
        self._changed: Changes | set[str] = set()
        self._current: str | None = None
        self._lines: list[str] = []
        self._styles: list[list[str | None]] = []
        self._changes = Changes()               # values changed since the previous stop
        self._title = "body"
        self._dx = 0                            # columns the picture is moved right to centre it
        self._layout_lock = threading.Lock()
        self._layout_busy = False
        self._wanted = None
        self._unavailable: str | None = None    # why dot cannot lay bodies out (not installed)
        self._show_first = False
        self._bodies: dict[str, BodyView] = {}  # per loop path: its body as shown (open groups)
        self._pending: int | None = None        # a box to select once its layout is drawn
        self._center_pending = False            # ... scrolled to the pane's middle (a find)
        self._search: Search | None = None      # the last find's matches, and where it was
        self._search_spec = None
        self._search_at: int | None = None

    # -- what to show ---------------------------------------------------------------------------
    def show(self, view: View) -> None:
        self._view = view
        stop, session, event = view.stop, view.session, view.event
        opened = session.engine.loops.get(self.opened) if self.opened else None
        if opened is not None and (event is None or event.spec is not opened):
            self._title = view.crumbs(opened.path) + "  (opened; Esc returns)"
            self._show_body(opened, nested_values(view, opened), set(), None)
            return
        self.opened = None
        if event is None:
            if view.first_loop is None:
                self._show_model_graph(view)
                return
            spec, ran_none = view.first_loop
            values = {}
        else:
            spec = event.spec
            values = self._event_values(event, view)
        key = (spec.path, event.outer if event is not None else ())
        self._title = view.crumbs(spec.path)
        if event is None:
            self._title += "  (ran no iteration: no values)" if ran_none else "  (not started)"
        changed = self._changes.update(key, values)
        current = stop.node.layer.name if stop.node is not None else None
        self._show_body(spec, values, changed, current)

    def _event_values(self, event, view: View) -> dict:
        if view.stop.node is not None:
            return dict(view.stop.node.values)
        try:
            return view.values(event)
        except Exception:  # noqa: BLE001 - values are decoration; the graph still draws
            return dict(event.inputs) | dict(event.outputs)

    def _set_spec(self, spec, values, changed, current) -> None:
        if spec is not self._spec:
            self.selected = None
            self._show_first = True               # a wide body: its first box in view
            self.border_subtitle = ""             # a find's "match k of n" was in the other
        self._spec, self._values, self._changed, self._current = spec, values, changed, current
        self._redraw(follow=current)

    # -- drawing ------------------------------------------------------------------------------
    def _redraw(self, follow: str | None = None) -> None:
        from loopdbg.layout import LayoutUnavailable, render

        spec = self._spec
        if spec is None:
            return
        keys = value_keys(spec)
        try:
            if self._unavailable is not None:
                raise LayoutUnavailable(self._unavailable)
            body = self._body(spec)
            # a big body's groups are found in the layout thread, the first time
            target = body.target() if body.ready else None
            layout = None if target is None else \
                choose_layout(target, self.detail, self.size.width or 120, cached_only=True)
        except LayoutUnavailable as exc:
            self._layout = None
            texts = {name: value_text(v, 40) for name, v in self._values.items()}
            self._set_text([str(exc), ""] + _listing(spec, texts), note=True)
            return
        stale = False
        if layout is None:                  # dot has not run for this body and width yet
            self._lay_out(body, self.detail, self.size.width or 120)
            layout = self._layout if self._layout is not None and self._layout.name == \
                spec.path else None
            if layout is None:
                boxes = len(target.nodes) if hasattr(target, "nodes") else len(spec.body.steps)
                self._set_text([f"laying out the body of {spec.path} ({boxes} boxes)…"])
                return
            stale = True                    # the picture before this one, until it is ready
        if not stale and self._handed_round():
            return                  # drawn as the change is handed round (GroupFolds)
        self._layout = layout
        # a Text: names are never read as markup
        self.border_title = Text(self._title + ("  (laying out…)" if stale else ""))
        ids = {b.id for b in layout.boxes}
        pending = None                  # the box waited for, scrolled to once drawn
        if self._pending is not None and self._pending in ids:
            self.selected, self._pending = self._pending, None
            pending = (layout.box(self.selected), self._center_pending)
            self._center_pending = False
        if self.selected not in ids and not stale:
            self.selected = None
        current_id = body.layer_id(self._current) if self._current is not None else None
        if current_id is not None:
            current_id = body.box_of(current_id)
        shown, changed, current = {}, set(), None
        for box in layout.boxes:
            names = keys.get(box.id, ()) if box.id >= 0 else body.value_names(box.id)
            name = next((n for n in names if n in self._values), None)
            if name is not None:
                shown[box.id] = (self._values[name], box.inner_width - 2)
                if name in self._changed:
                    changed.add(box.id)
            if box.id == current_id:
                current = box.id
        # the boxes side by side: their floats at one precision
        texts = {box_id: "= " + text for box_id, text in side_by_side(shown).items()}
        first = None
        if self._show_first and layout.boxes:
            # a grouped body: the cursor on the group that runs first (Enter opens it), else
            # the top-left box in view
            group = body.first_group(layout.boxes)
            first = layout.box(group) if group is not None else \
                min(layout.boxes, key=lambda b: (b.y, b.x))
            if group is not None and self.selected is None:
                self.selected = group
        canvas = render(layout, texts, changed=changed, current=current, selected=self.selected)
        # a picture narrower than the pane stands in its middle
        self._dx = dx = max((self.size.width - 1 - canvas.width) // 2, 0)
        self._lines = [" " * dx + line for line in canvas.lines] if dx else canvas.lines
        self._styles = [[None] * dx + tags for tags in canvas.styles] if dx else canvas.styles
        self.set_virtual_size(Size(canvas.width + dx, canvas.height))
        self.refresh()
        if pending is not None:
            self._scroll_to_box(*pending)
        target = current if follow is not None else None
        if target is not None:                 # node stepping: keep the node just run in view
            self._scroll_to_box(layout.box(target))
        elif first is not None:
            self._scroll_to_box(first)
        self._show_first = False
        if not stale:
            self._lay_out_ahead_later(body)

    @property
    def laying_out(self) -> bool:
        """Whether ``dot`` is running for this panel, or is about to lay out ahead (the picture
        follows when it is done)."""
        return self._layout_busy or self._ahead_timer is not None

    def _body(self, spec) -> BodyView:
        """The body of ``spec`` as shown, kept per loop (its open groups stay open)."""
        body = self._bodies.get(spec.path)
        if body is None or body.spec is not spec:
            body = self._bodies[spec.path] = BodyView(spec)
        return body

    def _lay_out(self, body: BodyView, detail: str, width: int, ahead=None) -> None:
        """Group the body (the first time) and run ``dot`` in a thread (it takes up to a second
        on a body of 100 nodes), then draw again; asked again meanwhile, the thread lays out
        the latest request too. ``ahead``: a picture to lay out before it is asked for (what
        opening the group under the cursor shows), not drawn, never before a picture asked
        for."""
        with self._layout_lock:
            if ahead is not None and self._wanted is not None and self._wanted[3] is None:
                return
            self._wanted = (body, detail, width, ahead)
            if self._layout_busy:
                return
            self._layout_busy = True
        threading.Thread(target=self._layout_work, daemon=True, name="loopdbg-layout").start()

    def _layout_work(self) -> None:
        from loopdbg.layout import LayoutUnavailable, render

        while True:
            with self._layout_lock:
                wanted = self._wanted
                if wanted is None:
                    self._layout_busy = False
                    return
                self._wanted = None
            try:
                body, detail, width, ahead = wanted
                layout = choose_layout(body.target() if ahead is None else ahead, detail, width)
                if ahead is not None and layout is not None:
                    render(layout)      # its boxes and edges drawn now (kept): Enter adds values
            except LayoutUnavailable as exc:
                self._unavailable = str(exc)
            except Exception as exc:  # noqa: BLE001 - shown, never a crash
                self._unavailable = f"the body could not be laid out: {exc}"
            if ahead is not None and self._unavailable is None:
                continue                # laid out ahead: nothing new to draw
            try:                       # the redraw may ask for another width: the loop goes on
                self.app.call_from_thread(self._redraw)
            except Exception:  # noqa: BLE001 - the app is closing
                with self._layout_lock:
                    self._layout_busy = False
                return

    def _scroll_to_box(self, box, center: bool = False) -> None:
        scroll_into_view(self, Region(box.x + self._dx, box.y, box.w, box.h), center)

    def on_resize(self, event) -> None:
        if self._spec is not None and self.detail == "fit":
            self._redraw()

    def _set_text(self, lines: list[str], note: bool = False) -> None:
        self._dx = 0
        self._lines = [safe(line) for line in lines]
        self._styles = [[("note" if note and k == 0 else None)] * len(s)
                        for k, s in enumerate(lines)]
        self.set_virtual_size(Size(max((len(s) for s in lines), default=0), len(lines)))
        self.border_title = Text(self._title)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = y + scroll_y
        width = self.size.width
        if row >= len(self._lines):
            return Strip.blank(width)
        # only the columns in view: a large body's rows are hundreds of cells wide
        text = self._lines[row][scroll_x:scroll_x + width]
        tags = self._styles[row][scroll_x:scroll_x + width]
        segments = []
        start = 0
        for k in range(1, len(text) + 1):
            if k == len(text) or tags[k] != tags[start]:
                segments.append(Segment(text[start:k], STYLES.get(tags[start], Style())))
                start = k
        return Strip(segments).extend_cell_length(width)

    # -- the cursor, and what it opens --------------------------------------------------------
    @property
    def selected_name(self) -> str | None:
        """The value name of the box under the cursor (what the Inspector can show)."""
        if self.selected is None or self._spec is None:
            return None
        names = value_keys(self._spec).get(self.selected, ())
        return names[0] if names else None

    @property
    def selected_expression(self) -> str | None:
        """The expression reading the selected box's value (``t["l0/x_W"]`` for odd names)."""
        name = self.selected_name
        return name_expression(name) if name is not None else None

    def action_move(self, direction: str) -> None:
        layout = self._layout
        if layout is None or not layout.boxes:
            return
        here = layout.box(self.selected) if self.selected is not None else None
        box = nearest_box(layout, here, direction, self._visible_region())
        if box is not None:
            self.select(box.id)

    def _visible_region(self) -> Region:
        return Region(int(self.scroll_offset.x) - self._dx, int(self.scroll_offset.y),
                      self.size.width, self.size.height)

    def select(self, node_id: int, center: bool = False) -> None:
        self.selected = node_id
        self._redraw()
        if self._layout is not None:
            self._scroll_to_box(self._layout.box(node_id), center=center)

    def find(self, text: str, step: int = 1) -> str | None:
        """Move the cursor to the next box whose name (or type) contains ``text`` (``step`` -1:
        the previous), centred in the pane; its name. The same text again goes on through one
        list of matches, counted in the bottom border ("match 2 of 5").

        In a grouped body every node is searched, closed groups or not: the groups on the way
        to the one found are opened."""
        layout = self._layout
        needle = text.strip().lower()
        if layout is None or not needle or self._spec is None:
            return None
        search = self._search
        if search is None or search.needle != needle or self._search_spec is not self._spec:
            boxes = sorted(layout.boxes, key=lambda b: (b.y, b.x))      # in reading order
            search = Search.of(self._body(self._spec).findable(boxes), needle)
        at = search.id if search.id is not None and self.selected == self._search_at \
            else self.selected
        search = search.move(at, step)
        self._search, self._search_spec = search, self._spec
        if search.id is None:
            return None
        self.reveal(search.id, center=True)
        self._search_at = self.selected
        self.border_subtitle = Text(f"find {needle!r}: {search.status()} · F3 next, "
                                    f"shift+F3 back")
        return search.name

    def findable(self) -> list[tuple[str, str]]:
        """``(name, type)`` of every node ``find`` can reach: in a grouped body, all of them."""
        if self._spec is None:
            return []
        boxes = self._layout.boxes if self._layout is not None else ()
        return [(name, type_) for _, name, type_ in self._body(self._spec).findable(boxes)]

    def reveal(self, box_id: int, center: bool = False) -> None:
        """Open the groups on the way to ``box_id`` (a node or a group) and select it
        (``center``: scrolled to the middle of the pane, not just into view)."""
        if self._spec is None:
            return
        body = self._body(self._spec)
        opened = body.reveal(box_id)
        self._groups_shown(box_id)           # the pseudo-code shows the same
        if box_id >= 0:
            box_id = body.box_of(box_id)     # a folded weight Convert: the box reading it
        if not opened:
            self.select(box_id, center=center)
            return
        self.selected = self._pending = box_id
        self._center_pending = center
        self._redraw()

    def action_select(self) -> None:
        """Enter: open a group or a nested loop's body, else show the node's full value in the
        Inspector."""
        if self.selected is None:
            self.action_move("down")
            return
        if self.selected < 0:
            outside = self._body(self._spec).outside_of(self.selected)
            if outside is not None:                 # an open group's stub: where it leads
                self.select(outside)
                return
            self.action_open_group()
            return
        if not self._open_nested(self.selected):
            if self.branches:                # a branch's values are not the loop's: said here
                name = self.selected_name
                if name is not None and name in self._values:
                    self.notify(f"{name} = {value_text(self._values[name], 100)}",
                                markup=False, timeout=6)
                return
            expression = self.selected_expression
            if expression is not None:
                self.post_message(InspectValue(expression))

    def action_detail(self) -> None:
        k = DETAIL_MODES.index(self.detail)
        self.detail = DETAIL_MODES[(k + 1) % len(DETAIL_MODES)]
        self._redraw()
        self.notify(f"boxes: {self.detail}", timeout=1.5)

    def on_click(self, event) -> None:
        """Clicking a box selects it; a nested Loop/TensorIterator's box opens its body."""
        if self._layout is None or self._spec is None:
            return
        x, y = event.x + int(self.scroll_offset.x), event.y + int(self.scroll_offset.y)
        box = self._layout.box_at(x - self._dx, y)
        if box is None:
            return
        self.selected = box.id
        if not self._open_nested(box.id):
            self._redraw()

    def _open_nested(self, node_id: int) -> bool:
        layer = self._spec.body.graph.layers.get(node_id)
        if layer is not None and layer.type == "If" and self._view is not None:
            return self._open_branch(layer)
        if layer is None or layer.type not in NESTED or self._view is None or self.branches:
            return False
        path = f"{self._spec.path}/{layer.name}"
        if path not in self._view.session.engine.loops:
            return False
        self.opened = path
        self.show(self._view)
        return True

    def action_close_nested(self) -> None:
        if self.action_close_group():
            return
        if self.close_branch():
            return
        if self.opened is not None and self._view is not None:
            self.opened = None
            self.show(self._view)


def _listing(spec, texts) -> list[str]:
    """Without graphviz: the body as a list, one node per line, in execution order."""
    out = []
    for name in spec.param_names:
        out.append(f"  [Parameter] {name} = {texts.get(name, '')}")
    for step in spec.body.steps:
        out.append(f"  {step.layer.type:<12} {step.layer.name} = {texts.get(step.layer.name, '')}")
    for p, r in spec.back_edges:
        out.append(f"  back edge   {spec.result_names[r]} -> {spec.param_names[p]}")
    return out
