"""The loop as pseudo-code, with the lines of the current phase highlighted and, after an
iteration, the value each body assignment gave in it (``// = ...``, the graph's short form)."""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from loopdbg.debug.report import if_lines
from loopdbg.teach.pseudocode import pseudocode
from loopdbg.text import safe
from loopdbg.tui.panel import Panel, View
from loopdbg.tui.plain import plain
from loopdbg.tui.widgets.valuetext import value_text


_NONE = object()


def segments(text: Text, console) -> list[Segment]:
    """A Text as segments, its own style kept: ``Text.render`` drops the Text's style when it
    has no spans (a whole line in reverse video would be drawn plain)."""
    if text.style and not text.spans:
        return [Segment(text.plain, console.get_style(text.style))] if text.plain else []
    return list(text.render(console))


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


class Lines(Widget):
    """Lines of text drawn one at a time, as the screen asks for them: only the lines in view
    are rendered, and a change repaints only the lines that changed (a converted body's
    pseudo-code has hundreds of lines, and a step changes the values at their ends). A line
    longer than the widget ends in an ellipsis."""

    DEFAULT_CSS = "Lines { width: 1fr; height: auto; padding: 0 1; }"

    def __init__(self, **kw):
        super().__init__(**kw)
        self._lines: list[Text] = []
        self._strips: dict[int, Strip] = {}

    @property
    def content(self) -> Text:
        """Every line as one Text (what the widget shows, for tests and the clipboard)."""
        return Text("\n").join(self._lines)

    def render(self) -> Text:
        return self.content

    def set_lines(self, lines: list[Text]) -> None:
        old = self._lines
        self._lines = lines
        if len(lines) != len(old):
            self._strips.clear()
            self.refresh(layout=True)
            return
        changed = [y for y, (a, b) in enumerate(zip(old, lines))
                   if a.plain != b.plain or a.spans != b.spans or a.style != b.style]
        for y in changed:
            self._strips.pop(y, None)
        if changed:
            width = self.size.width
            self.refresh(*(Region(0, y, width, 1) for y in changed))

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self._lines)

    def get_content_width(self, container, viewport) -> int:
        return max((line.cell_len for line in self._lines), default=0)

    def render_line(self, y: int) -> Strip:
        width, style = self.content_size.width, self.rich_style
        if not 0 <= y < len(self._lines):
            return Strip.blank(width, style)
        strip = self._strips.get(y)
        if strip is None or strip.cell_length != width:
            text = self._lines[y]
            if text.cell_len > width:
                text = text.copy()
                text.truncate(width, overflow="ellipsis")
            strip = Strip(segments(text, self.app.console)).apply_style(style)
            strip = self._strips[y] = strip.extend_cell_length(width, style)
        return strip


class PseudoCode(Lines):
    """C-like pseudo-code of the current loop (from loopdbg.teach), current phase in reverse video."""

    _shown = None             # what the text shows: (loop, mode, phase, node)

    def show(self, view: View) -> None:
        stop, e = view.stop, view.event
        if e is None:
            self._shown = None
            spec, phase = _loop_without_iteration(view)
            if spec is None:
                if not view.session.engine.loops:
                    self.set_lines([Text("(no loop in this model: no pseudo-code to step "
                                         "through)", style="dim")]
                                   + [plain(line) for line in if_lines(view.session.engine)])
                    return
                self.set_lines([Text("(no loop has started)", style="dim")])
                return
            text = Text()
            if phase == "init":
                text.append(f"(no loop has started; loop {safe(spec.path)} will run:)\n",
                            style="dim")
            else:
                text.append(f"(0 iterations of loop {safe(spec.path)}: only the lines after "
                            f"the loop ran)\n", style="dim")
            for line in pseudocode(spec, started=view.session.loop_started.get(spec.path),
                                   detail=True, by_mode=True):
                text.append(safe(line.render()) + "\n",
                            style="reverse bold" if line.phase == phase == "output" else "")
            self.set_lines(text.split("\n"))
            return
        phase = phase_of(stop)
        node = stop.node.index if stop.node is not None else None
        key = (id(e), id(e.spec), e.spec.path, view.mode, phase, node)
        if key == self._shown:        # the same iteration, the same lines lit: nothing to redraw
            return
        self._shown = key
        lines = self._code(e, view, phase, node)
        steps = e.spec.body.steps
        try:
            # node by node: the values computed so far in this iteration
            values = view.values(e) if stop.node is None else stop.node.values
        except Exception:  # noqa: BLE001 - values are a help here; the code shows without them
            values = {}
        out = []
        for rendered, current, step in lines:
            line = Text(rendered, style="reverse bold" if current else "")
            if step is not None and step < len(steps):
                value = values.get(steps[step].layer.name, _NONE)
                if value is not _NONE and value is not None:   # what it gave this iteration
                    line.append(f"  // {safe(value_text(value, 28))}", style="dim cyan")
            out.append(line)
        self.set_lines(out)
        lit = [y for y, (_, current, _) in enumerate(lines) if current]
        if lit:
            self.call_after_refresh(self._reveal, lit[0], lit[-1])

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

    _code_key = None
    _code_lines: list = []

    def _code(self, e, view: View, phase: str, node) -> list:
        """The pseudo-code's lines as (text, lit, body step or None), made once per loop,
        mode and phase (a step then only adds the values)."""
        key = (id(e.spec), e.spec.path, view.mode, phase, node)
        if key != self._code_key:
            out, body_line = [], -1
            for line in pseudocode(e.spec, started=view.started, detail=True, by_mode=True):
                step = None
                if line.phase == "body":
                    body_line += 1      # detail mode: one body line per plan step, in order
                    step = body_line
                current = (body_line == node) if node is not None and line.phase == "body" \
                    else (line.phase == phase and node is None)
                out.append((safe(line.render()), current, step))
            self._code_key, self._code_lines = key, out
        return self._code_lines


def _loop_without_iteration(view: View):
    """With no iteration to show: the loop that ran none (its outputs are the point), else the
    first loop of the model (before the run), else None."""
    session = view.session
    for end in session.loop_ends.values():
        if end.iterations == 0 and end.path in session.engine.loops:
            return session.engine.loops[end.path], "output"
    first = view.first_loop
    return (first[0], "init") if first else (None, "")


class CodePanel(Panel, VerticalScroll):
    """The pseudo-code in the side column, scrolling when the loop is long."""

    AREA = "side"
    ID = "code-scroll"

    def compose(self) -> ComposeResult:
        yield PseudoCode(id="code")

    def show(self, view: View) -> None:
        self.query_one(PseudoCode).show(view)
