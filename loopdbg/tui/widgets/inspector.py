"""The tensor inspector: any value of the current iteration, sliced numpy-style, with statistics.

What to show is typed as an expression of the breakpoint language (``h``, ``h[0, :4]``,
``t["name with spaces"][..., -1]``), so it is evaluated safely by the debugging core.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Input, Static

from loopdbg.debug.breakpoints import EventLookup
from loopdbg.debug.expr import Expression
from loopdbg.debug.values import is_sequence, numbers, type_text
from loopdbg.tui.panel import Panel, View


def describe(value) -> Text:
    """A tensor's dtype, shape, statistics and values; a sequence's length, then each tensor;
    an empty optional as such."""
    if value is None:
        return Text("empty optional (no value)\n", style="bold")
    if is_sequence(value):
        t = Text(f"sequence of {len(value)} tensor{'s' if len(value) != 1 else ''}\n",
                 style="bold")
        for k, item in enumerate(value[:SHOWN]):
            t.append(f"[{k}] ", style="bold")
            t.append_text(describe(item))
        if len(value) > SHOWN:
            t.append(f"... and {len(value) - SHOWN} more: index them, e.g. seq[{SHOWN}]\n",
                     style="dim")
        return t
    a = np.asarray(value)
    t = Text()
    t.append(f"dtype {type_text(a)}  shape {tuple(a.shape)}  size {a.size}\n", style="bold")
    f = numbers(a)
    if a.size and f is not None:
        f = f.astype(np.float64)
        nan, inf = int(np.isnan(f).sum()), int(np.isinf(f).sum())
        fin = f[np.isfinite(f)]
        if fin.size:
            t.append(f"min {fin.min():.6g}  max {fin.max():.6g}  mean {fin.mean():.6g}  "
                     f"std {fin.std():.6g}\n")
        t.append(f"NaN {nan}  Inf {inf}\n", style="red" if nan or inf else "dim")
    with np.printoptions(precision=5, suppress=True, linewidth=110, threshold=4000, edgeitems=8):
        t.append(np.array2string(a) + "\n")
    return t


SHOWN = 16          # the tensors of a sequence the inspector shows


class Inspector(Panel, Vertical):
    """An input line for the expression and a scrollable view of the value."""

    TAB, TAB_ID, ID = "Inspector", "tab-inspect", "inspector"

    DEFAULT_CSS = """
    Inspector Input { height: 3; }
    Inspector VerticalScroll { height: 1fr; }
    """

    def __init__(self, **kw):
        super().__init__(**kw)
        self._event = None
        self._text = ""

    def compose(self) -> ComposeResult:
        yield Input(placeholder='value to inspect: a name, or a slice like h[0, :4]', id="inspect-input")
        with VerticalScroll():
            yield Static(id="inspect-view")

    def show(self, view: View) -> None:
        self._event = view.stop.event
        if self._text:
            self._update_view()

    def inspect(self, text: str) -> None:
        self.query_one("#inspect-input", Input).value = text
        self._text = text
        self._update_view()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        self._text = message.value.strip()
        self._update_view()

    def _update_view(self) -> None:
        view = self.query_one("#inspect-view", Static)
        if not self._text:
            view.update("")
            return
        if self._event is None:
            view.update(Text("no iteration has run yet", style="dim"))
            return
        try:
            value = Expression(self._text).evaluate(EventLookup(self._event))
        except Exception as exc:  # noqa: BLE001 - shown where it was typed
            view.update(Text(f"{self._text}: {exc}", style="red"))
            return
        view.update(describe(value))
