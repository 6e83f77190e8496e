"""loopdbg in a Jupyter notebook: a debugging session that shows itself.

    from loopdbg.notebook import Session, replay

    s = Session.open("model.xml", "inputs.npz")     # or replay("run.ltrace")
    s.breakpoints.add("i == 3")
    s.continue_()
    s                                   # the loop's state at this stop and its body, as SVG
    s.plot("mean(h)", "norm(c)")        # a matplotlib figure over the iterations held

``Session`` is ``loopdbg.debug.Session`` with ``_repr_html_`` (the stop report and the body drawn
as ``loopdbg graph --iteration`` draws it: a big body by its closed groups, each box's value at
this iteration, the values that changed since the iteration before in red) and ``plot``. Every
name that came from a file is HTML-escaped.
"""

from __future__ import annotations

import html

from loopdbg import debug
from loopdbg.debug.report import format_stop
from loopdbg.errors import LoopdbgError
from loopdbg.view.stop import outermost_first

__all__ = ["Session", "replay"]


class Session(debug.Session):
    """A debugging session that a notebook draws (see the module docstring)."""

    def _repr_html_(self) -> str:
        stop = getattr(self, "stop", None)
        event = stop.event if stop is not None else None
        spec = event.spec if event is not None else _first_loop(self)
        parts = ['<div class="loopdbg-session">']
        title = f"loopdbg — {self.engine.file}"
        parts.append(f"<h4>{html.escape(str(title))}</h4>")
        if stop is not None:
            parts.append(f"<pre>{html.escape(format_stop(stop, self))}</pre>")
        if spec is None:
            parts.append("<p>This model has no Loop, Scan or TensorIterator.</p>")
        else:
            parts.append(self._body_html(spec, event))
        parts.append("</div>")
        return "\n".join(parts)

    def _body_html(self, spec, event) -> str:
        from loopdbg.view.picture import body_svg

        when = f" at iteration {event.iteration}" if event is not None else ""
        try:
            svg = body_svg(self, event, spec, title=when)
        except LoopdbgError as exc:          # no Graphviz, a body dot cannot draw ...
            return f"<p>The body of {html.escape(spec.path)} is not drawn: " \
                   f"{html.escape(str(exc))}</p>"
        return f'<div class="loopdbg-body" title="{html.escape(spec.path)}">{svg}</div>'

    def plot(self, *expressions: str, loop: str | None = None):
        """A matplotlib figure of ``expressions`` (the breakpoint language) over the iterations
        of ``loop`` (default: the loop of this stop) that the history holds up to this stop."""
        from loopdbg.debug.series import collect

        if not expressions:
            raise LoopdbgError("say what to plot, e.g. s.plot(\"mean(h)\").")
        try:
            import matplotlib.pyplot as pyplot
        except ImportError:
            raise LoopdbgError("Session.plot draws with matplotlib, which is not installed; "
                               "install it with: pip install 'loopdbg[plot]'.") from None
        stop = getattr(self, "stop", None)
        event = stop.event if stop is not None else None
        if event is None:
            raise LoopdbgError("no iteration has run yet: step (s.next()) before plotting.")
        path = loop or event.path
        timeline = self.timeline
        upto = stop.position if stop.position >= 0 else self.newest
        ordinals = [n for n in timeline.iterations(path, event.outer) if n <= upto]
        series = collect((timeline.at(n) for n in ordinals), list(expressions), path,
                         tuple(event.outer))
        fig, axes = pyplot.subplots(len(expressions), 1, sharex=True, squeeze=False,
                                    figsize=(7, 1.2 + 2.0 * len(expressions)))
        for ax, text in zip(axes[:, 0], expressions):
            ax.plot(series.x, series.values[text], marker="." if len(series.x) <= 200 else None)
            ax.set_ylabel(text.replace("$", r"\$"))
            ax.grid(True, alpha=0.3)
        axes[-1, 0].set_xlabel("iteration")
        fig.suptitle(f"loop {path}".replace("$", r"\$"))
        fig.tight_layout()
        pyplot.close(fig)            # a notebook shows the returned figure once, not twice
        return fig


def replay(trace_path) -> Session:
    """A ``Session`` on a recorded run (``FILE.ltrace``): any iteration, forward and back."""
    from loopdbg.trace.replay import open_trace

    timeline = open_trace(trace_path)
    return Session(timeline.engine, timeline.inputs, timeline=timeline, source=timeline.source)


def _first_loop(session):
    """The outermost loop, shown before any iteration has run."""
    loops = outermost_first(session.engine.loops)    # the engine finds inner loops first
    return loops[0] if loops else None
