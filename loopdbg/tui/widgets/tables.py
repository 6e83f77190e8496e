"""Back edges and scan outputs as tables, with a sparkline of a statistic over past iterations."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import DataTable, Static

from loopdbg.debug.expr import name_expression
from loopdbg.debug.report import fmt_value
from loopdbg.debug.values import is_sequence, mean_of, numbers, shape_text, type_text
from loopdbg.teach.pseudocode import result_source
from loopdbg.text import safe
from loopdbg.tui.messages import InspectValue
from loopdbg.tui.panel import Panel, View
from loopdbg.tui.plain import cut_middle, plain, update_text
from loopdbg.tui.widgets.heatmap import heatmap
from loopdbg.tui.widgets.scroll import QuietTable
from loopdbg.view.code import names_of

BARS = "▁▂▃▄▅▆▇█"
NAME = 28               # a name longer than this is cut in its middle


def sparkline(values: list[float], width: int = 24) -> str:
    vals = [v for v in values[-width:] if np.isfinite(v)]
    if not vals:
        return ""
    lo, hi = min(vals), max(vals)
    span = hi - lo or 1.0
    return "".join(BARS[min(int((v - lo) / span * (len(BARS) - 1) + 0.5), len(BARS) - 1)]
                   for v in values[-width:] if np.isfinite(v))


def stats(value) -> tuple[str, str, str]:
    """min, max and mean of a numeric tensor; blanks for sequences, optionals and strings."""
    if value is None or is_sequence(value):
        return "", "", ""
    a = numbers(np.asarray(value))
    if a is None or a.size == 0:
        return "", "", ""
    f = a[np.isfinite(a)] if a.dtype.kind == "f" else a
    if f.size == 0:
        return "nan", "nan", "nan"
    return (f"{float(f.min()):.4g}", f"{float(f.max()):.4g}", f"{float(np.mean(f)):.4g}")


class BackEdgeTable(Panel, QuietTable):
    """Result → Parameter with shape, dtype, min/max/mean and a sparkline of the mean. Names are
    shortened (loopdbg.view.code.Names); Enter on a row shows its state, full name and all, in
    the Inspector."""

    TAB, TAB_ID, ID = "Back edges", "tab-back", "back"

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns("back edge", "shape", "dtype", "min", "max", "mean", "mean over iterations")

    def show(self, view: View) -> None:
        self.clear()
        e = view.stop.event
        if e is None:
            return
        history = view.history
        spec = e.spec
        names = names_of(spec)
        for p, r in spec.back_edge_view:
            value = e.body_out[r]
            past = [mean_of(h.body_out[r]) for h in history]
            lo, hi, mean = stats(value)
            arrow = f"{names.short(p, NAME)} ← {names.short(result_source(spec, r), NAME)}"
            self.add_row(*(Text(cell) for cell in (safe(arrow), shape_text(value),
                           type_text(value), lo, hi, mean, sparkline(past))), key=p)


    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.post_message(InspectValue(name_expression(event.row_key.value)))


class ScanTable(QuietTable):
    """Each concatenated output with its shape so far, its last slice and its axis."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.add_columns("output", "axis", "shape so far", "last slice")

    def show(self, view: View) -> None:
        self.clear()
        e = view.stop.event
        if e is None:
            return
        for o in e.spec.concats:
            so_far = e.partial(o.name)
            direction = " (reversed)" if o.stride < 0 else ""
            how = f"new axis {o.axis} (stacked)" if e.spec.onnx else f"{o.axis}"
            self.add_row(plain(cut_middle(o.name, NAME)), Text(f"{how}{direction}"), Text(shape_text(so_far)),
                         plain(fmt_value(e.scan_slices[o.name], width=50)), key=o.name)


class ScanPanel(Panel, Horizontal):
    """The scan outputs tab: the table, and a heat map of the first concatenated output (or,
    without one, of the largest state carried by a back edge)."""

    TAB, TAB_ID = "Scan & heat map", "tab-scan"

    def __init__(self, **kw):
        super().__init__(**kw)
        self._view: View | None = None

    def compose(self) -> ComposeResult:
        yield ScanTable(id="scan")
        yield Static(id="heat")

    def show(self, view: View) -> None:
        self._view = view
        self.query_one(ScanTable).show(view)
        self._draw_heat()

    def on_resize(self, event) -> None:
        if self._view is not None:
            self._draw_heat()

    def _draw_heat(self) -> None:
        heat = self.query_one("#heat", Static)
        width = heat.size.width - 2 if heat.size.width > 4 else 60
        height = self.size.height if self.size.height > 3 else 10
        update_text(heat, heatmap(self._view, width, height))
