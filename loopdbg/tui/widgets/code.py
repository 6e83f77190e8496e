"""The loop as pseudo-code, with the lines of the current phase highlighted."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from loopdbg.teach.pseudocode import pseudocode


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


class PseudoCode(Static):
    """C-like pseudo-code of the current loop (from loopdbg.teach), current phase in reverse video."""

    DEFAULT_CSS = "PseudoCode { padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }"

    def show(self, stop) -> None:
        e = stop.event or (stop.node.event if stop.node else None)
        if e is None:
            self.update(Text("(no loop has started)", style="dim"))
            return
        phase = phase_of(stop)
        text = Text(no_wrap=True, overflow="ellipsis")
        for line in pseudocode(e.spec):
            style = "reverse bold" if line.phase == phase else ""
            text.append(line.render() + "\n", style=style)
        self.update(text)
