"""The Plot tab (`p`): expressions of the breakpoint language (``mean(h)``, ``norm(c)``,
``h[0, 3]``) plotted over the iterations of the current loop execution up to the stop, drawn by
textual-plotext (the optional extra ``ui-plot``; without it the tab says how to install it).

The numbers come from ``loopdbg.debug.series`` (what ``loopdbg plot`` draws to a file), over the
iterations the history holds; the plot follows every stop.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from loopdbg.debug.series import collect
from loopdbg.errors import LoopdbgError
from loopdbg.tui.panel import Panel, View
from loopdbg.tui.plain import plain

INSTALL = ("plots in the UI need textual-plotext: pip install 'loopdbg[ui-plot]', then start "
           "loopdbg again (or `loopdbg plot ... -o plot.svg` draws one to a file)")
MAX_POINTS = 5000


def plot_widget():
    """textual-plotext's widget class, or None when it is not installed."""
    try:
        from textual_plotext import PlotextPlot
    except ImportError:
        return None
    return PlotextPlot


class PlotPanel(Panel, Vertical):
    """The plot of ``expressions`` (set by the app from the `p` prompt) over the iterations."""

    TAB, TAB_ID, ID = "Plot", "tab-plot", "plot"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.expressions: list[str] = []
        self._view: View | None = None
        self._canvas = None       # the plot widget made by compose (None without the extra)
        self._example = None      # the name the note's example uses

    def compose(self) -> ComposeResult:
        yield Static(plain("press p to plot an expression over the iterations, e.g. mean(h)",
                           "dim"), id="plot-note")
        cls = plot_widget()
        if cls is not None:
            self._canvas = cls(id="plot-canvas")
            yield self._canvas

    def show(self, view: View) -> None:
        self._view = view
        if self.expressions:
            self._draw()
        elif view.event is not None and view.event.spec.param_names:
            name = view.event.spec.param_names[0]
            if name != self._example:          # once per loop: an update lays the screen out
                self._example = name
                example = f"mean({name})" if name.isidentifier() else f'mean(t["{name}"])'
                self.query_one("#plot-note", Static).update(plain(
                    f"press p to plot an expression over the iterations, e.g. {example}", "dim"))

    def set_expressions(self, texts: list[str]) -> None:
        self.expressions = texts
        if self._view is not None:
            self._draw()

    def _draw(self) -> None:
        note = self.query_one("#plot-note", Static)
        canvas = self._canvas     # what compose found: the extra installed since needs a restart
        if canvas is None:
            note.update(plain(INSTALL, "yellow"))
            return
        view = self._view
        e = view.event
        plt = canvas.plt
        plt.clear_data()
        plt.clear_figure()
        if e is None:
            note.update(plain("no iteration yet", "dim"))
            canvas.refresh()
            return
        timeline = view.session.timeline
        pos = view.stop.position if view.stop.position >= 0 else view.session.newest
        ordinals = [n for n in timeline.iterations(e.path, e.outer) if n <= pos][-MAX_POINTS:]
        try:
            series = collect((timeline.at(n) for n in ordinals), self.expressions, e.path,
                             tuple(e.outer))
        except LoopdbgError as exc:
            note.update(plain(str(exc), "red"))
            canvas.refresh()
            return
        for text in self.expressions:
            plt.plot(series.x, series.values[text], label=text, marker="braille")
        plt.xlabel("iteration")
        where = f" (outer {list(e.outer)})" if e.outer else ""
        held = len(series.x)
        note.update(plain(f"loop {e.path}{where}: {held} iteration{'' if held == 1 else 's'} "
                          f"held", "dim"))
        canvas.refresh()
