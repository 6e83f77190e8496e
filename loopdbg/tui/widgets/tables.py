"""Back edges and scan outputs as tables, with a sparkline of a statistic over past iterations."""

from __future__ import annotations

import numpy as np
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import DataTable, Static

from loopdbg.debug.report import fmt_value
from loopdbg.teach.pseudocode import result_source
from loopdbg.tui.panel import Panel, View
from loopdbg.tui.plain import plain, update_text
from loopdbg.tui.widgets.heatmap import heatmap

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], width: int = 24) -> str:
    vals = [v for v in values[-width:] if np.isfinite(v)]
    if not vals:
        return ""
    lo, hi = min(vals), max(vals)
    span = hi - lo or 1.0
    return "".join(BARS[min(int((v - lo) / span * (len(BARS) - 1) + 0.5), len(BARS) - 1)]
                   for v in values[-width:] if np.isfinite(v))


def stats(a) -> tuple[str, str, str]:
    a = np.asarray(a)
    if a.size == 0 or a.dtype.kind not in "biuf":
        return "", "", ""
    f = a[np.isfinite(a)] if a.dtype.kind == "f" else a
    if f.size == 0:
        return "nan", "nan", "nan"
    return (f"{float(f.min()):.4g}", f"{float(f.max()):.4g}", f"{float(np.mean(f)):.4g}")


def shape_text(a) -> str:
    s = np.shape(a)
    return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"


class BackEdgeTable(Panel, DataTable):
    """Result → Parameter with shape, dtype, min/max/mean and a sparkline of the mean."""

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
        for p, r in spec.back_edge_view:
            value = e.body_out[r]
            past = [float(np.mean(h.body_out[r])) if np.size(h.body_out[r]) and
                    np.asarray(h.body_out[r]).dtype.kind in "biuf" else float("nan")
                    for h in history]
            lo, hi, mean = stats(value)
            arrow = f"{p} ← {result_source(spec, r)}"
            self.add_row(plain(arrow), shape_text(value), str(np.asarray(value).dtype), lo, hi,
                         mean, sparkline(past), key=p)


class ScanTable(DataTable):
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
            self.add_row(plain(o.name), f"{how}{direction}", shape_text(so_far),
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
