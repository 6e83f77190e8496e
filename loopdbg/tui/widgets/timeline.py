"""The Timeline tab (`t`): the current loop execution and each loop around it as a strip of its
iterations with markers (``loopdbg.debug.strips``), the current one highlighted.

Keys while it has the focus: ←/→ the previous/next iteration (forward past the newest runs the
engine), Home/End the first/last iteration of the execution, PgUp/PgDn a tenth of it back or on.
Each posts ``GoTo`` (or runs back/next); the app moves the session.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

from loopdbg.debug import strips
from loopdbg.debug.jump import Target
from loopdbg.tui.messages import GoTo
from loopdbg.tui.panel import Panel, View
from loopdbg.tui.plain import update_text

# What each marker looks like: (character, style), weakest first (see debug.strips).
LOOK = {
    strips.UNKNOWN: (" ", ""), strips.GONE: ("·", "grey42"), strips.HELD: ("━", "grey62"),
    strips.END: ("■", "bold yellow"), strips.NAN: ("!", "bold red"), strips.HIT: ("●", "bold magenta"),
    strips.CURRENT: ("▲", "bold reverse cyan"),
}
LEGEND = ((strips.CURRENT, "current"), (strips.HIT, "breakpoint hit"), (strips.NAN, "first NaN/Inf"),
          (strips.END, "condition false / last"), (strips.HELD, "in history"), (strips.GONE, "not held"))


class TimelinePanel(Panel, Static, can_focus=True):
    """Strips of the current loop execution and the loops around it (see the module docs)."""

    TAB, TAB_ID, ID = "Timeline", "tab-timeline", "timeline"
    BINDINGS = [
        Binding("left", "go('back')", "back", show=False),
        Binding("right", "go('next')", "next", show=False),
        Binding("home", "go('first')", "first", show=False),
        Binding("end", "go('last')", "last", show=False),
        Binding("pageup", "go('-tenth')", "-10%", show=False),
        Binding("pagedown", "go('+tenth')", "+10%", show=False),
    ]

    def __init__(self, *args, **kwargs):
        super().__init__("", *args, **kwargs)
        self._view: View | None = None
        self._strips: list[strips.Strip] = []
        self._cache: dict = {}
        self._width = 0
        self._cells_width = 60

    def show(self, view: View) -> None:
        self._view = view
        if view.session.stop is not view.stop and getattr(self.app, "busy", False):
            return                  # a re-show while a command runs: the timeline is its thread's
        self._draw()

    def on_resize(self, event) -> None:
        if self._view is not None and event.size.width != self._width:
            self._draw()

    def _draw(self) -> None:
        view = self._view
        width = max(self.size.width - 2, 10) if self.size.width else 60
        self._width, self._cells_width = self.size.width, width
        self._strips = strips.strips(view.session, view.event, width, self._cache)
        update_text(self, self._text(view))

    def _text(self, view: View) -> Text:
        if not self._strips:
            return Text("No iteration yet: press n to run the first one.", style="dim")
        out = Text()
        for s in self._strips:
            where = f" in outer iterations {list(s.outer)}" if s.outer else ""
            cur = "" if s.current is None else f" · at {s.current}"
            span = f"{s.count} iteration{'s' * (s.count != 1)}" + ("" if s.ended else " so far")
            per = f" · {s.per_cell} per cell" if s.per_cell > 1 else ""
            out.append(view.crumbs(s.path), style="bold")
            out.append(f"{where}: {span}{cur}{per}")
            if s.first_nan is not None:
                out.append(f" · first NaN/Inf at {s.first_nan}", style="red")
            out.append("\n")
            cw = max(1, min(6, self._cells_width // max(len(s.cells), 1)))   # a short loop: wide
            for kind in s.cells:
                ch, style = LOOK[kind]
                out.append(ch * (cw - 1 if cw > 2 else cw), style=style)
                if cw > 2:
                    out.append(" ")
            out.append("\n")
            if s.count > 1:
                last = f"{s.count - 1}"
                gap = max(len(s.cells) * cw - len(last) - 1 - (1 if cw > 2 else 0), 1)
                out.append("0" + " " * gap + last + "\n", style="dim")
        out.append("\n")
        for kind, label in LEGEND:
            ch, style = LOOK[kind]
            out.append(ch, style=style)
            out.append(f" {label}  ", style="dim")
        out.append("\n←/→ iteration · Home/End first/last · PgUp/PgDn a tenth", style="dim")
        return out

    def action_go(self, where: str) -> None:
        """Ask the app to move along the innermost strip (the current loop's execution)."""
        if not self._strips or where in ("back", "next"):
            self.post_message(GoTo("next" if not self._strips else where))
            return
        s = self._strips[-1]
        cur, tenth = s.current or 0, max(s.count // 10, 1)
        k = {"first": 0, "last": -1, "-tenth": max(cur - tenth, 0), "+tenth": cur + tenth}[where]
        if s.ended and k >= s.count:
            k = s.count - 1
        self.post_message(GoTo("jump", Target(s.path, k, s.outer)))
