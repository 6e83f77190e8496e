"""The loop as pseudo-code, with the lines of the current phase highlighted and, after an
iteration, the value each body assignment gave in it (``// = ...``, the graph's short form)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widget import Widget

from loopdbg.debug.expr import name_expression
from loopdbg.debug.report import if_lines
from loopdbg.layout import dot_available
from loopdbg.teach.modes import loop_mode
from loopdbg.text import safe
from loopdbg.tui.messages import GroupsShown, InspectValue
from loopdbg.tui.panel import Panel, View
from loopdbg.tui.plain import plain
from loopdbg.tui.widgets.lines import Lines
from loopdbg.tui.widgets.scroll import OneLayout
from loopdbg.tui.widgets.valuetext import value_text
from loopdbg.view.body import BodyView
from loopdbg.view.code import CodeView, Row


_NONE = object()


def phase_of(stop) -> str:
    """Which phase a stop stands at: after an iteration its condition was just computed."""
    e = stop.event
    if stop.node is not None:
        return "body"
    if e is None:
        return "init"
    if not e.continues:
        return "output"
    return "cond" if e.spec.kind == "Loop" else "carry"


class PseudoCode(OneLayout, Lines):
    """C-like pseudo-code of the current loop (from loopdbg.teach), current phase in reverse video.

    A big body's statements fold by the groups of its picture (loopdbg.view.code): a block is one
    line (``▸ blocks.4 { 32 lines }`` and the value leaving it) that opens in place. Each line's
    value is written only when the line is drawn: a stop costs the lines in view."""

    _shown = None             # what the text shows: (loop, mode, phase, node)
    cursor: int | None = None  # the row under the cursor (the panel focused)
    _found = False            # the cursor is on what the graph's find found: shown unfocused too

    def __init__(self, **kw):
        super().__init__(**kw)
        self._code: CodeView | None = None
        self._code_key = None
        self._rows: list[Row] | None = None     # None: plain lines (no iteration shown)
        self._lit: set[int] = set()
        self._texts: dict[int, Text] = {}       # row → the Text its strip was made from
        self._fresh: dict[int, Text] = {}       # rows made at a stop, to draw
        self._values: dict = {}
        self._waiting = False                   # for a big body's groups to be found
        self._waits = 0

    # -- lines made on demand ------------------------------------------------------------------
    def line_count(self) -> int:
        return len(self._rows) if self._rows is not None else len(self._lines)

    def line(self, y: int) -> Text:
        if self._rows is None:
            return self._lines[y]
        fresh = self._fresh.pop(y, None)      # made by the stop that asked for its repaint
        if fresh is not None:
            return fresh
        row = self._rows[y]
        lit = y in self._lit
        marked = y == self.cursor and (self._found or self.parent is not None and
                                       self.parent.has_focus)
        style = "dim" if row.phase == "note" else "reverse bold" if lit else \
            "on grey27" if marked else ""
        line = Text(safe(row.text), style=style)
        if row.step is not None:
            value = self._values.get(self._step_names[row.step], _NONE)
            if value is not _NONE and value is not None:   # what it gave this iteration
                leaves = "out " if row.fold is not None else ""   # what leaves the group
                line.append(f"  // {leaves}{safe(value_text(value, 28))}", style="dim cyan")
        self._texts[y] = line           # what row y's strip was made from
        return line

    def get_content_width(self, container, viewport) -> int:
        if self._rows is None:
            return super().get_content_width(container, viewport)
        return max((len(r.text) for r in self._rows), default=0) + 34

    @property
    def row(self) -> Row | None:
        """The row under the cursor."""
        if self._rows is None or self.cursor is None or not 0 <= self.cursor < len(self._rows):
            return None
        return self._rows[self.cursor]

    # -- a stop --------------------------------------------------------------------------------
    def show(self, view: View) -> None:
        stop, e = view.stop, view.event
        if e is None:
            self._shown = None
            self._show_without_iteration(view)
            return
        phase = phase_of(stop)
        node = stop.node.index if stop.node is not None else None
        key = (id(e), id(e.spec), e.spec.path, view.mode, phase, node)
        if key == self._shown and not self._waiting:
            return                # the same iteration, the same lines lit: nothing to redraw
        self._shown = key
        self._found = False        # what the graph found stays marked until the next stop
        code = self._code_for(e.spec, view.started, view.mode)
        code.note = None
        try:
            # node by node: the values computed so far in this iteration
            self._values = view.values(e) if stop.node is None else stop.node.values
        except Exception:  # noqa: BLE001 - values are a help here; the code shows without them
            self._values = {}
        self._phase, self._node = phase, node
        self._set_rows(code.rows())
        lit = sorted(self._lit)
        if lit:
            self.call_after_refresh(self._reveal, lit[0], lit[-1])

    def _set_rows(self, rows: list[Row]) -> None:
        """Show ``rows``: the same rows at a new stop repaint only the lines in view that
        changed (their values, the lit line); other rows are drawn when next in view."""
        count = self.line_count()
        same = rows is self._rows
        self._rows, self._lines = rows, []
        node, phase = self._node, self._phase
        if node is not None:
            k = self._code.row_of_step(node)
            self._lit = {k} if k is not None else set()
        else:
            self._lit = {y for y, row in enumerate(rows) if row.phase == phase != "body"}
        if self.cursor is not None:
            self.cursor = min(self.cursor, len(rows) - 1)
        pane = self.parent
        if not same or pane is None or not pane.size.height:
            self._strips.clear()
            self._texts, self._fresh = {}, {}
            self.refresh(layout=len(rows) != count)
            return
        top = int(pane.scroll_offset.y)
        shown = range(max(top, 0), min(top + pane.size.height, len(rows)))
        old, strips = self._texts, self._strips
        self._texts, self._strips, self._fresh = {}, {}, {}
        changed = []
        for y in shown:
            text, before = self.line(y), old.get(y)
            if before is not None and y in strips and text.plain == before.plain and \
                    text.spans == before.spans and text.style == before.style:
                self._strips[y] = strips[y]
            else:
                changed.append(y)
                self._fresh[y] = text
        # the rows out of view are drawn anew when scrolled to (Textual keeps what it drew)
        width, dirty = self.size.width, [Region(0, y, self.size.width, 1) for y in changed]
        if shown.start > 0:
            dirty.append(Region(0, 0, width, shown.start))
        if shown.stop < len(rows):
            dirty.append(Region(0, shown.stop, width, len(rows) - shown.stop))
        if dirty:
            self.refresh(*dirty)

    def _code_for(self, spec, started, mode: str) -> CodeView:
        """The pseudo-code of ``spec`` (made once per loop and mode; its open groups kept)."""
        key = (id(spec), spec.path, mode)
        body = BodyView(spec)
        ready = body.ready
        if not ready and self._waits >= (20 if dot_available() else 1):
            # the graph's layout thread finds them; without dot (or after 5 s) they are found here
            body.groups  # noqa: B018 - the property finds them
            ready = True
        if key != self._code_key:
            self._code = CodeView(spec, started, body.groups if ready else None)
            self._code_key = key
            self._step_names = [step.layer.name for step in spec.body.steps]
            self.cursor = None
        elif ready and self._waiting:           # the groups are found: the body folds
            self._code.set_groups(body.groups)
        self._waiting = not ready
        self._waits = self._waits + 1 if self._waiting else 0
        if self._waiting and not self._polling:   # the graph finds them off this thread
            self._polling = True
            self.set_timer(0.25, self._again)
        return self._code

    _polling = False

    def _again(self) -> None:
        self._polling = False
        view = getattr(self.app, "view", None)
        if self._waiting and view is not None:
            self.show(view)

    def _show_without_iteration(self, view: View) -> None:
        spec, phase = _loop_without_iteration(view)
        if spec is None:
            self._rows = None
            if not view.session.engine.loops:
                self.set_lines([Text("(no loop in this model: no pseudo-code to step "
                                     "through)", style="dim")]
                               + [plain(line) for line in if_lines(view.session.engine)])
                return
            self.set_lines([Text("(no loop has started)", style="dim")])
            return
        started = view.session.loop_started.get(spec.path)
        code = self._code_for(spec, started, loop_mode(spec, started).mode)
        code.note = (f"(no loop has started; loop {spec.path} will run:)" if phase == "init" else
                     f"(0 iterations of loop {spec.path}: only the lines after the loop ran)")
        self._values, self._phase, self._node = {}, phase if phase == "output" else "", None
        self._set_rows(code.rows())

    def _reveal(self, first: int, last: int) -> None:
        """Scroll the pane to the lit lines when they are out of view (a short terminal gives
        the pseudo-code a few rows: the current line must be one of them)."""
        pane = self.parent
        if pane is None or not pane.size.height:
            return
        top, rows = pane.scroll_offset.y, pane.size.height
        if first < top or last >= top + rows:
            pane.scroll_to(y=max(0, min(first - 1, last - rows + 1) if last - first < rows
                                 else first), animate=False)

    # -- the cursor, and the groups it opens ---------------------------------------------------
    def move(self, delta: int | None = None, to: int | None = None) -> None:
        """The cursor ``delta`` rows on (or on row ``to``), kept in view."""
        count = self.line_count()
        if not count:
            return
        if to is None:
            start = self.cursor if self.cursor is not None else self._start_row()
            to = start + (delta or 0) if self.cursor is not None else start
        self._set_cursor(max(0, min(count - 1, to)))

    def _start_row(self) -> int:
        """Where the cursor first appears: the lit row in view, else the top row in view."""
        top = int(self.parent.scroll_offset.y) if self.parent is not None else 0
        return min(self._lit) if self._lit else top

    def _set_cursor(self, y: int | None, found: bool = False) -> None:
        old, self.cursor, self._found = self.cursor, y, found
        for k in (old, y):
            if k is not None:
                self._strips.pop(k, None)
                self._fresh.pop(k, None)
        self.refresh()
        if y is not None:
            self.call_after_refresh(self._reveal, y, y)

    def focus_changed(self) -> None:
        """The panel gained or lost the focus: the cursor's row shows only with it."""
        if self.cursor is not None:
            self._strips.pop(self.cursor, None)
            self.refresh()

    def open_row(self) -> bool:
        """Open the closed group under the cursor; whether there was one."""
        if self._code is None or self.row is None or self.row.fold is None:
            return False
        self._undrawn = self._code.open(self.cursor)
        self._groups_shown()
        return True

    def close_row(self) -> bool:
        """Close the innermost open group the cursor is in; whether there was one."""
        if self._code is None or self.cursor is None:
            return False
        to = self._code.close_at(self.cursor)
        if to is None:
            return False
        self._undrawn = to
        self._groups_shown()
        return True

    _undrawn: int | None = None   # the cursor's row after a group opened or closed here

    def _show_group(self, path) -> None:
        """Scroll to the group the graph just opened: its first row, and as many of its
        rows as fit (the cursor stays where it is)."""
        rows = self._rows or []
        head = next((k for k, r in enumerate(rows) if r.head == path), None)
        if head is None:
            return
        end = head
        while end + 1 < len(rows) and rows[end + 1].scope[:len(path)] == path:
            end += 1
        self._scroll_before_layout(head, end)
        self.call_after_refresh(self._reveal, head, end)

    def _scroll_before_layout(self, first: int, last: int) -> None:
        """Scroll to rows ``first``-``last`` now, so that the frame to come shows them (not a
        frame of the rows before, then a scroll): past the end of the rows before, the pane's
        new height is known already (one line a row) and the layout to come keeps the scroll."""
        pane = self.parent
        if pane is None or not pane.size.height:
            return
        rows = pane.scrollable_content_region.height
        top = int(pane.scroll_offset.y)
        if first >= top and last < top + rows:
            return
        y = max(0, min(first - 1, last - rows + 1) if last - first < rows else first)
        y = min(y, max(self.line_count() - rows, 0))
        if y <= pane.max_scroll_y:
            pane.scroll_to(y=y, animate=False, immediate=True)
            return
        pane.set_reactive(Widget.scroll_y, float(y))
        pane.set_reactive(Widget.scroll_target_y, float(y))
        if pane.show_vertical_scrollbar:
            pane.vertical_scrollbar.position = y

    def _groups_shown(self) -> None:
        """Tell the other panels (the graph) which groups are open now: the rows are drawn
        when the app hands the change round (``follow_groups``), the graph's picture in the
        same screen update."""
        self.post_message(GroupsShown(self.parent, self._code.spec.path, self._code.opened))

    def follow_groups(self, path: str, opened: frozenset, found: int | None) -> None:
        """The graph opened or closed groups of this loop's body (or found ``found``, a layer or
        group box, in it): the code opens the same, its cursor on what was found."""
        code = self._code
        if code is None or self._rows is None or code.spec.path != path or code.groups is None:
            return
        if opened != code.opened:
            newly = sorted(set(opened) - code.opened, key=len)
            code.follow(opened)
            self._set_rows(code.rows())
            if newly and found is None:
                self._show_group(newly[-1])
        elif self._undrawn is not None:          # this panel's own change, handed round
            to, self._undrawn = self._undrawn, None
            self._set_rows(code.rows())
            self._set_cursor(to)
        if found is not None:
            row = code.row_of(found)
            if row is not None:
                self._set_cursor(row, found=True)

    def on_click(self, event) -> None:
        """A click puts the cursor on a line, and opens (or closes) the group of a ▸ (▾) line."""
        offset = event.get_content_offset(self)
        if offset is None or self._rows is None or not 0 <= offset.y < len(self._rows):
            return
        self._set_cursor(offset.y)
        row = self._rows[offset.y]
        if row.fold is not None:
            self.open_row()
        elif row.head is not None:
            self.close_row()

    def row_name(self) -> str | None:
        """The body value the row under the cursor shows (a statement's, a group's leaving)."""
        row = self.row
        if row is None or row.step is None:
            return None
        return self._step_names[row.step]


def _loop_without_iteration(view: View):
    """With no iteration to show: the loop that ran none (its outputs are the point), else the
    first loop of the model (before the run), else None."""
    session = view.session
    for end in session.loop_ends.values():
        if end.iterations == 0 and end.path in session.engine.loops:
            return session.engine.loops[end.path], "output"
    first = view.first_loop
    return (first[0], "init") if first else (None, "")


class CodePanel(OneLayout, Panel, VerticalScroll):
    """The pseudo-code in the side column, scrolling when the loop is long. Focused (Tab), the
    arrows move a cursor over its lines: Enter or ``+`` opens a folded group, ``-`` or Escape
    closes the group the cursor is in, Enter on a statement shows its value, full name and all,
    in the Inspector."""

    AREA = "side"
    ID = "code-scroll"

    BINDINGS = [
        Binding("up", "cursor(-1)", "line ↑", show=False),
        Binding("down", "cursor(1)", "line ↓", show=False),
        Binding("pageup", "page(-1)", "page ↑", show=False),
        Binding("pagedown", "page(1)", "page ↓", show=False),
        Binding("home", "ends(0)", "first line", show=False),
        Binding("end", "ends(1)", "last line", show=False),
        Binding("enter", "enter", "open / value"),
        Binding("plus", "open_group", "open group", show=False),
        Binding("minus", "close_group", "close group", show=False),
        Binding("escape", "close_group", "close group", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield PseudoCode(id="code")

    @property
    def code(self) -> PseudoCode:
        return self.query_one(PseudoCode)

    def show(self, view: View) -> None:
        self.code.show(view)

    def follow_groups(self, path: str, opened: frozenset, found: int | None) -> None:
        self.code.follow_groups(path, opened, found)

    def action_cursor(self, delta: int) -> None:
        self.code.move(delta)

    def action_page(self, sign: int) -> None:
        self.code.move(sign * max(self.size.height - 1, 1))

    def action_ends(self, last: int) -> None:
        self.code.move(to=self.code.line_count() - 1 if last else 0)

    def action_open_group(self) -> None:
        self.code.open_row()

    def action_close_group(self) -> None:
        self.code.close_row()

    def action_enter(self) -> None:
        """Open the group under the cursor, else show the line's value in the Inspector."""
        code = self.code
        if code.cursor is None:
            code.move(0)
            return
        if code.open_row():
            return
        name = code.row_name()
        if name is not None:
            self.post_message(InspectValue(name_expression(name)))

    def on_focus(self, event) -> None:
        self.code.focus_changed()    # the cursor's row shows while the panel has the focus

    def on_blur(self, event) -> None:
        self.code.focus_changed()
