"""The loop-state panel: path, type, trip count, current_iteration, condition, why it stopped."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from loopdbg.debug.report import ends_because, headline
from loopdbg.tui.panel import Panel, View


class LoopState(Panel, Static):
    """Shows where the session stands; updated from each Stop."""

    AREA = "side"
    ID = "state"
    DEFAULT_CSS = """
    LoopState { height: auto; padding: 0 1; }
    """

    def show(self, view: View) -> None:
        stop, session, mode = view.stop, view.session, view.mode
        t = Text()
        kind_style = {"breakpoint": "bold red", "nan": "bold red", "error": "bold red",
                      "end": "bold green"}.get(stop.kind, "bold cyan")
        t.append(headline(stop) + "\n", style=kind_style)
        e = stop.event if stop.node is None else stop.node.event
        if e is None:
            ended = [end for end in session.loop_ends.values() if end.iterations == 0]
            if ended:
                for end in ended:
                    t.append(f"loop {end.path} ran 0 iterations: ", style="bold")
                    t.append(f"{end.reason_text}\n", style="magenta")
            else:
                t.append("no iteration has run yet\n", style="dim")
            self.update(t)
            return
        spec = e.spec
        crumbs = " › ".join(e.path.split("/"))
        t.append("loop              ", style="dim")
        t.append(f"{crumbs}", style="bold")
        shown = f", {mode}" if mode and spec.kind == "Loop" else ""
        t.append(f"  ({spec.kind}{shown})\n")
        if e.outer:
            t.append("outer iterations  ", style="dim")
            t.append(f"{list(e.outer)}\n")
        trip = "no limit" if e.trip_count is None else str(e.trip_count)
        t.append("trip_count        ", style="dim")
        t.append(f"{trip}\n")
        t.append("current_iteration ", style="dim")
        t.append(f"{e.iteration}", style="bold yellow")
        if stop.node is not None:
            t.append(f"  (running node by node: {stop.node.index + 1} of {stop.node.total})\n",
                     style="green")
            self.update(t)
            return
        t.append("\n")
        if stop.kind == "error":
            nxt = f"iteration {e.iteration + 1} failed (see the log)"
        elif e.continues:
            nxt = f"iteration {e.iteration + 1} runs next"
        else:
            nxt = "the loop ends: " + ends_because(e)
        if spec.kind == "Loop":
            t.append("condition         ", style="dim")
            t.append("true" if e.cond else "false", style="bold green" if e.cond else "bold red")
            t.append(f"  → {nxt}\n")
        else:
            t.append("next              ", style="dim")
            t.append(f"{nxt}\n")
        if stop.loop_end is not None:
            t.append("loop ended        ", style="dim")
            t.append(f"{stop.loop_end.iterations} iterations: {stop.loop_end.reason_text}\n",
                     style="magenta")
        self.update(t)
