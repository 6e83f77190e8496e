"""The loop-state panel: path, type, trip count, current_iteration, condition, why it stopped.

One row per fact, its label in a column of its own: a value too long for the line wraps under
itself (a hanging indent), never under the label; a narrow panel uses shorter labels
(``iteration`` for ``current_iteration``). A loop that ran no iteration says so with the
notices about it (what its outputs hold), since there is no iteration to show.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text
from textual.widgets import Static

from loopdbg.debug.report import ends_because, headline, if_lines, no_loop_text, trip_text
from loopdbg.tui.panel import Panel, View
from loopdbg.text import safe
from loopdbg.tui.plain import cut_middle, plain, update_text
from loopdbg.view.code import names_of

LABEL = 18                 # the label column ("current_iteration" and a blank)
NARROW = 48                # below this width: short labels in a narrower column
SHORT_LABELS = {"current_iteration": "iteration", "outer iterations": "outer",
                "trip_count": "trips", "loop ended": "ended"}
SHORT_LABEL = 10           # "iteration" and a blank
_CONSOLE = Console(width=400, color_system=None, legacy_windows=False)


class LoopState(Panel, Static):
    """Shows where the session stands; updated from each Stop (and laid out again on resize)."""

    AREA = "side"
    ID = "state"
    DEFAULT_CSS = """
    LoopState { height: auto; padding: 0 1; }
    """

    def __init__(self, **kw):
        super().__init__(**kw)
        self._view: View | None = None
        self._rows = (None, 0)        # (loop path, the most lines its texts had)

    _busy_text: str | None = None      # while a command runs (after 0.3 s): what it does

    def show(self, view: View) -> None:
        self._view = view
        self._busy_text = None
        update_text(self, self._steady(view, self._text(view, self._width())))

    def running(self, text: str) -> None:
        """A command is running: the headline says so (not the stop it started from)."""
        if self._view is None or text == self._busy_text:
            return
        self._busy_text = text
        update_text(self, self._steady(self._view, self._text(self._view, self._width())))

    def _steady(self, view: View, text: Text) -> Text:
        """``text`` padded to the most lines this loop's texts had at this width: stepping
        does not move the pseudo-code below up and down (nor lay the screen out again)."""
        e = view.event
        path = (e.path if e is not None else None, self._width())
        lines = text.plain.count("\n")
        most = max(lines, self._rows[1]) if path == self._rows[0] else lines
        self._rows = (path, most)
        if most > lines:
            text = text.copy()
            text.append("\n" * (most - lines))
        return text

    def on_resize(self, event) -> None:
        # after this layout pass, and with a layout of its own: the text's height follows
        # the new width (a layout asked for while one runs may be lost)
        if self._view is not None:
            self.call_after_refresh(self._relayout)

    def _relayout(self) -> None:
        self._rows = (None, 0)
        update_text(self, self._text(self._view, self._width()))

    def _width(self) -> int:
        return max((self.size.width or 60) - 2, 24)

    def _text(self, view: View, width: int) -> Text:
        stop, session = view.stop, view.session
        kind_style = {"breakpoint": "bold red", "nan": "bold red", "error": "bold red",
                      "end": "bold green"}.get(stop.kind, "bold cyan")
        if self._busy_text:
            t = _wrapped(plain(self._busy_text, "bold yellow"), width, 2)
        else:
            t = _wrapped(plain(_headline(stop, width), kind_style), width, 2)
        rows: list[tuple[str, Text]] = []
        e = stop.node.event if stop.node is not None else view.event    # the one being run
        if e is None:
            ended = [end for end in session.loop_ends.values() if end.iterations == 0]
            for end in ended:
                t += _wrapped(Text.assemble(plain(f"loop {end.path} ran 0 iterations: ", "bold"),
                                            plain(end.reason_text, "magenta")), width, 2)
            for n in session.notices:
                if any(n.path == end.path for end in ended):
                    t += _wrapped(plain(f"notice: {n.message}", "yellow"), width, 2)
            if not session.engine.loops:                   # nothing to step: say so
                t += _wrapped(plain(no_loop_text(session.engine)), width, 0)
                for line in if_lines(session.engine):
                    t += _wrapped(plain(line), width, 2)
            elif not ended:
                t.append("no iteration has run yet\n", style="dim")
            return t
        spec, mode = e.spec, view.mode
        shown = f", {mode}" if mode and spec.kind == "Loop" and width >= NARROW else ""
        kind = f"  ({_kind(spec)}{shown})"
        room = _room(width)
        name = view.short_crumbs(e.path)     # in full in the graph's title
        if len(name) + len(kind) > room and width < NARROW:     # the name alone, cut in the middle
            kind, name = "", cut_middle(name, room)
        rows.append(("loop", Text.assemble(plain(name, "bold"), kind)))
        if e.outer:
            rows.append(("outer iterations", Text(str(list(e.outer)))))
        rows.append(("trip_count", Text(trip_text(e.trip_count))))
        it = Text(str(e.iteration), style="bold yellow")
        if stop.node is not None:
            k, total = stop.node.index + 1, stop.node.total
            it.append(f"  (running node by node: {k} of {total})" if width >= NARROW
                      else f" (node {k}/{total})", style="green")
            rows.append(("current_iteration", it))
            return t + _rows(rows, width)
        rows.append(("current_iteration", it))
        if stop.kind == "error":
            nxt = f"iteration {e.iteration + 1} failed (see the log)"
        elif e.continues:
            nxt = (f"iteration {e.iteration + 1} runs next" if width >= NARROW
                   else f"next {e.iteration + 1}")        # a narrow column: one line
        else:
            nxt = "the loop ends: " + ends_because(e)
        if spec.kind == "Loop":
            cond = Text("true" if e.cond else "false",
                        style="bold green" if e.cond else "bold red")
            rows.append(("condition", cond + plain(f"  → {nxt}")))
        else:
            rows.append(("next", plain(nxt)))
        if stop.loop_end is not None:
            rows.append(("loop ended", plain(f"{stop.loop_end.iterations} iterations: "
                                             f"{stop.loop_end.reason_text}", "magenta")))
        return t + _rows(rows, width)


def _kind(spec) -> str:
    """The loop's type as its model says it: an ONNX Scan is a Scan, not a TensorIterator."""
    return getattr(spec, "source_kind", None) or spec.kind


def _room(width: int) -> int:
    """Columns a value has beside its label."""
    return max(width - (SHORT_LABEL if width < NARROW else LABEL), 12)


def _headline(stop, width: int) -> str:
    """The stop's headline; a narrow panel leaves out where (the rows below say it) and cuts a
    name too long for a line in its middle instead of breaking it."""
    text = headline(stop)
    if stop.node is not None:          # the node's name as the pseudo-code writes it
        name = stop.node.layer.name
        short = names_of(stop.node.event.spec).short(name)
        if short != name:
            text = text.replace(f"'{name}'", f"'{short}'", 1)
    if width >= NARROW:
        return text
    e = stop.node.event if stop.node is not None else stop.event
    if e is not None:
        for where in (f" in loop {safe(e.path)}, iteration {e.iteration}",
                      f" in loop {safe(e.path)} at iteration {e.iteration}"):
            if text.endswith(where):
                text = text[:-len(where)]
    return " ".join(cut_middle(word, width - 2) for word in text.split(" "))


def _rows(rows: list[tuple[str, Text]], width: int) -> Text:
    """``label  value`` lines, each value wrapped under itself."""
    out = Text()
    short = width < NARROW
    column = SHORT_LABEL if short else LABEL
    room = _room(width)
    for label, value in rows:
        if short:
            label = SHORT_LABELS.get(label, label)
        lines = value.wrap(_CONSOLE, room) if value.cell_len > room else [value]
        for k, line in enumerate(lines):
            out.append(f"{label:<{column}}" if k == 0 else " " * column, style="dim")
            line.rstrip()
            out.append_text(line)
            out.append("\n")
    return out


def _wrapped(text: Text, width: int, indent: int) -> Text:
    """``text`` wrapped at ``width``, its later lines indented by ``indent``."""
    out = Text()
    first = True
    while text.cell_len > (width if first else width - indent):
        room = width if first else width - indent
        line = text.wrap(_CONSOLE, room)[0]
        cut = len(line.plain.rstrip())
        line = text[:cut]
        text = text[cut:]
        text = text[len(text.plain) - len(text.plain.lstrip()):]
        out.append(" " * (0 if first else indent))
        out.append_text(line)
        out.append("\n")
        first = False
    out.append(" " * (0 if first else indent))
    out.append_text(text)
    out.append("\n")
    return out
