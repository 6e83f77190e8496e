"""The tensor inspector: any value of the current iteration, sliced numpy-style, with statistics.

What to show is typed as an expression of the breakpoint language (``h``, ``h[0, :4]``,
``t["name with spaces"][..., -1]``), so it is evaluated safely by the debugging core. Besides
the iteration's values, the loop's outputs (``x_final``) are known once the loop has ended, and
the model's outputs once the run has.

A large tensor is summarised (statistics and numpy's edge items) at once; ``full`` asks for every
element, laid out a screenful at a time by the scroll view. ``escape`` leaves the input line.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Input, Static

from loopdbg.debug.breakpoints import EventLookup
from loopdbg.debug.expr import Expression
from loopdbg.debug.values import is_sequence, numbers, type_text
from loopdbg.teach.node_info import node_lines
from loopdbg.text import safe_lines
from loopdbg.tui.panel import Panel, View
from loopdbg.tui.plain import plain, update_text

FULL_LIMIT = 20000         # elements printed in full on request (beyond: numpy's summary)


def describe(value, full: bool = False) -> Text:
    """A tensor's dtype, shape, statistics and values; a sequence's length, then each tensor;
    an empty optional as such."""
    if value is None:
        return Text("empty optional (no value)\n", style="bold")
    if is_sequence(value):
        t = Text(f"sequence of {len(value)} tensor{'s' if len(value) != 1 else ''}\n",
                 style="bold")
        for k, item in enumerate(value[:SHOWN]):
            t.append(f"[{k}] ", style="bold")
            t.append_text(describe(item, full))
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
    threshold = FULL_LIMIT if full else 400
    with np.printoptions(precision=5, suppress=True, linewidth=110, threshold=threshold,
                         edgeitems=4):
        body = np.array2string(a)
    t.append(safe_lines(body) + "\n")
    if a.size > threshold:
        t.append(f"(summarised: {a.size} elements; add ' full' to the expression to print "
                 f"{'all of them' if a.size <= FULL_LIMIT else f'the first {FULL_LIMIT}'})\n"
                 if not full else
                 f"(the first {FULL_LIMIT} of {a.size} elements at most are printed)\n",
                 style="dim")
    return t


SHOWN = 16          # the tensors of a sequence the inspector shows


class ExprInput(Input):
    """The Inspector's input line: escape gives the keys back to the app."""

    BINDINGS = [Binding("escape", "leave", "leave the input", show=True)]

    def action_leave(self) -> None:
        self.screen.set_focus(None)


class Inspector(Panel, Vertical):
    """An input line for the expression and a scrollable view of the value."""

    TAB, TAB_ID, ID = "Inspector", "tab-inspect", "inspector"
    # `i` (inspect the value under the cursor) is the question a person asks most, often as the
    # first key: built as the app opens, its first answer costs no building (~25-40 ms of it on
    # a 1 MiB value, past the 100 ms a key should take); the other hidden tabs are built lazily
    BUILT_AT_OPEN = True

    DEFAULT_CSS = """
    Inspector ExprInput { height: 3; }
    Inspector VerticalScroll { height: 1fr; }
    """

    def __init__(self, **kw):
        super().__init__(**kw)
        self._view: View | None = None
        self._text = ""
        self._full = False

    def compose(self) -> ComposeResult:
        yield ExprInput(placeholder="value to inspect: a name, or a slice like h[0, :4] "
                                    "(append ' full' for every element)", id="inspect-input")
        with VerticalScroll():
            yield Static(id="inspect-view")

    def show(self, view: View) -> None:
        self._view = view
        if self._text:
            self._update_view()

    def inspect(self, text: str) -> None:
        self.query_one("#inspect-input", Input).value = text
        self._set(text)

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        self._set(message.value)

    def _set(self, text: str) -> None:
        text = text.strip()
        self._full = text.endswith(" full")
        self._text = text[:-5].strip() if self._full else text
        self._update_view()

    def _update_view(self) -> None:
        view = self.query_one("#inspect-view", Static)
        if not self._text:
            update_text(view, "")
            return
        v = self._view
        event = v.event if v is not None else None
        if event is None:
            outputs = v.outputs if v is not None else {}
            if self._text in outputs:
                update_text(view, describe(outputs[self._text], self._full))
            else:
                update_text(view, Text("no iteration has run yet", style="dim"))
            return
        try:
            value = Expression(self._text).evaluate(EventLookup(event, extra=v.outputs))
        except Exception as exc:  # noqa: BLE001 - shown where it was typed
            update_text(view, plain(f"{self._text}: {exc}", "red"))
            return
        text = describe(value, self._full)
        about = None
        if v is not None and any(lay.name == self._text
                                 for lay in event.spec.body.graph.layers.values()):
            about = node_lines(event.spec, self._text, v.values(event))
        if about:                     # a node's name: what it is, as Netron shows a node
            head = Text()
            for k, line in enumerate(about):
                head.append_text(plain(line, "bold" if k == 0 else ""))
                head.append("\n")
            head.append("\n")
            head.append_text(text)
            text = head
        update_text(view, text)
