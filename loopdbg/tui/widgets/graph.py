"""The body graph: laid out by graphviz (loopdbg.layout), drawn with box-drawing characters.

A ScrollView that renders one line at a time from a character canvas, so large bodies scroll and
pan. Each box shows the node's current value briefly; values that changed since the previous stop
stand out, and in node-stepping mode the node just executed is highlighted. Without graphviz the
panel says how to install it and lists the nodes instead.
"""

from __future__ import annotations

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from loopdbg.debug.values import is_sequence, numbers, same_value, type_text
from loopdbg.tui.panel import Panel, View

STYLES = {
    None: Style(),
    "box": Style(color="bright_white"),
    "label": Style(color="bright_white", bold=True),
    "value": Style(color="cyan"),
    "box:changed": Style(color="yellow", bold=True),
    "box:current": Style(color="black", bgcolor="green", bold=True),
    "value:changed": Style(color="yellow", bold=True),
    "edge": Style(color="grey62"),
    "back": Style(color="magenta"),
    "role": Style(color="green", italic=True),
    "note": Style(color="yellow"),
}


def short_value(value) -> str:
    """A box's value line: the value itself when tiny, else shape and range (a sequence: its
    length; an empty optional: ``empty``)."""
    if value is None:
        return "empty"
    if is_sequence(value):
        return f"seq[{len(value)}]"
    a = np.asarray(value)
    f = numbers(a)
    if f is not None and f is not a:                    # bfloat16, float8, int4: widened
        return f"{short_value(f)} {type_text(a)}"
    if a.dtype.kind == "U":
        return f"({','.join(map(str, a.shape))}) string"
    if a.size <= 3 and a.dtype.kind in "biuf":
        text = np.array2string(a.reshape(-1), precision=3, separator=",").strip("[]")
        return ",".join(v.strip() for v in text.split(",")) or "[]"
    shape = "(" + ",".join(map(str, a.shape)) + ")"
    if a.size == 0 or a.dtype.kind not in "biuf":
        return f"{shape} {a.dtype}"
    finite = a[np.isfinite(a)] if a.dtype.kind == "f" else a
    if finite.size == 0:
        return f"{shape} no finite"
    bad = " NaN!" if finite.size < a.size else ""
    return f"{shape} {float(finite.min()):.2g}…{float(finite.max()):.2g}{bad}"


class GraphView(Panel, ScrollView, can_focus=True):
    """Scrollable drawing of the current loop's body (arrow keys pan when focused)."""

    AREA = "main"
    ID = "graph"
    DEFAULT_CSS = "GraphView { scrollbar-size: 1 1; }"

    BINDINGS = [Binding("escape", "close_nested", "back to the running loop", show=False)]
    opened: str | None = None            # a nested loop's body opened by clicking its box
    border_title_text = ""

    def __init__(self, **kw):
        super().__init__(**kw)
        self._layout = None
        self._spec = None
        self._view: View | None = None
        self._lines: list[str] = []
        self._styles: list[list[str | None]] = []
        self._previous: dict[str, np.ndarray] = {}
        self._previous_key = None
        self._focus_box = None

    def show(self, view: View) -> None:
        self._draw_view(view)
        self.border_title = self.border_title_text or "body"

    def _draw_view(self, view: View) -> None:
        self._view = view
        stop, session, event = view.stop, view.session, view.event
        opened = session.engine.loops.get(self.opened) if self.opened else None
        if opened is not None and (event is None or event.spec is not opened):
            self.border_title_text = " › ".join(opened.path.split("/")) + "  (opened; Esc returns)"
            self._draw_spec(opened, {}, set(), None)
            return
        self.opened = None
        if event is None:
            specs = list(session.engine.loops.values())
            if not specs:
                self._set_text(["this model has no Loop or TensorIterator"])
                return
            spec, values = specs[0], {}
        else:
            spec = event.spec
            values = self._values(event, view)
        key = (spec.path, event.outer if event is not None else ())
        self.border_title_text = " › ".join(spec.path.split("/"))
        changed = set()
        if key == self._previous_key:
            for name, v in values.items():
                old = self._previous.get(name)
                if old is not None and not _same(old, v):
                    changed.add(name)
        self._previous, self._previous_key = values, key
        current = stop.node.layer.name if stop.node is not None else None
        self._draw_spec(spec, values, changed, current)

    def _draw_spec(self, spec, values, changed, current) -> None:
        texts = {name: short_value(v) for name, v in values.items()}
        self._spec = spec
        self._focus_box = None
        lines, styles = self._draw(spec, texts, changed, current)
        self._lines, self._styles = lines, styles
        self.virtual_size = Size(max((len(s) for s in lines), default=0), len(lines))
        self.refresh()
        box = self._focus_box
        if box is not None:               # node stepping: keep the node just executed in view
            self.call_after_refresh(self.scroll_to_region, Region(box.x, box.y, box.w, box.h),
                                    animate=False)

    def _values(self, event, view: View) -> dict:
        if view.stop.node is not None:
            return dict(view.stop.node.values)
        try:
            return view.values(event)
        except Exception:  # noqa: BLE001 - values are decoration; the graph still draws
            return dict(event.inputs) | dict(event.outputs)

    def _draw(self, spec, texts, changed, current):
        from loopdbg.layout import LayoutUnavailable, layout_body, render

        ids = {layer.name: lid for lid, layer in spec.body.graph.layers.items()}
        try:
            layout = layout_body(spec)
        except LayoutUnavailable as exc:
            lines = [str(exc), ""] + _listing(spec, texts)
            return lines, [["note"] * len(lines[0])] + [[None] * len(s) for s in lines[1:]]
        values = {ids[n]: f"= {t}" for n, t in texts.items() if n in ids}
        self._layout = layout
        current_id = ids.get(current)
        canvas = render(layout, values, changed={ids[n] for n in changed if n in ids},
                        current=current_id)
        self._focus_box = next((b for b in layout.boxes if b.id == current_id), None)
        return canvas.lines, canvas.styles

    def on_click(self, event) -> None:
        """Clicking a nested Loop/TensorIterator's box opens its body (Esc comes back)."""
        if self._layout is None or self._spec is None or self._view is None:
            return
        x, y = event.x + int(self.scroll_offset.x), event.y + int(self.scroll_offset.y)
        box = self._layout.box_at(x, y)
        if box is None:
            return
        layer = self._spec.body.graph.layers.get(box.id)
        if layer is not None and layer.type in ("Loop", "TensorIterator"):
            path = f"{self._spec.path}/{layer.name}"
            if path in self._view.session.engine.loops:
                self.opened = path
                self._draw_view(self._view)
                self._announce()

    def action_close_nested(self) -> None:
        if self.opened is not None:
            self.opened = None
            self._draw_view(self._view)
            self._announce()

    def _announce(self) -> None:
        self.border_title = self.border_title_text

    def _set_text(self, lines: list[str]) -> None:
        self._lines, self._styles = lines, [[None] * len(s) for s in lines]
        self.virtual_size = Size(max(len(s) for s in lines), len(lines))
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = y + scroll_y
        width = self.size.width
        if row >= len(self._lines):
            return Strip.blank(width)
        text, tags = self._lines[row], self._styles[row]
        segments = []
        start = 0
        for k in range(1, len(text) + 1):
            if k == len(text) or tags[k] != tags[start]:
                segments.append(Segment(text[start:k], STYLES.get(tags[start], Style())))
                start = k
        return Strip(segments).crop(scroll_x, scroll_x + width).extend_cell_length(width)


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


def _same(a, b) -> bool:
    try:
        return same_value(a, b)
    except Exception:  # noqa: BLE001
        return False
