"""The loopdbg terminal UI: a thin Textual face over a debugging Session.

Every command (next, step, continue, ...) runs the session in a worker thread, so the screen never
freezes and a running continue can be paused; the worker posts the resulting Stop back and every
panel redraws from it. The UI decides nothing about loop semantics: it shows what the session says.

Keys are listed in BINDINGS (and in the footer and on the help screen, ``?``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Footer, Header, RichLog, Static, TabbedContent, TabPane

from loopdbg.debug.report import headline
from loopdbg.debug.session import ERROR, Session, Stop
from loopdbg.errors import LoopdbgError
from loopdbg.tui.messages import Busy, Stopped
from loopdbg.tui.screens.help import HelpScreen
from loopdbg.tui.screens.prompt import Prompt
from loopdbg.tui.widgets.breakpoints import BreakpointTable, WatchTable
from loopdbg.tui.widgets.code import PseudoCode
from loopdbg.tui.widgets.graph import GraphView
from loopdbg.tui.widgets.heatmap import heatmap
from loopdbg.tui.widgets.inspector import Inspector
from loopdbg.tui.widgets.state import LoopState
from loopdbg.tui.widgets.tables import BackEdgeTable, ScanTable

COMMANDS = {
    "next": "next", "back": "back", "step": "step", "finish": "finish", "continue": "continue_",
    "restart": "restart", "first": "first", "last": "last", "reverse": "reverse_continue",
}


class LoopdbgApp(App):
    """loopdbg's UI.

    n next · N back · s step (into / node by node) · f finish · c continue · space pause ·
    b breakpoint · w watch · i inspect · R reverse-continue · g/G first/last · r restart · q quit
    """

    CSS_PATH = Path(__file__).with_name("app.tcss")   # absolute: subclasses elsewhere find it too
    TITLE = "loopdbg"
    # In the order the footer shows them: the most needed first, so 80 columns keep help and quit.
    BINDINGS = [
        Binding("n", "command('next')", "next"),
        Binding("N", "command('back')", "back"),
        Binding("s", "command('step_node')", "step"),
        Binding("c", "command('continue')", "continue"),
        Binding("b", "add_breakpoint", "break"),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
        Binding("f", "command('finish')", "finish"),
        Binding("space", "pause", "pause"),
        Binding("w", "add_watch", "watch"),
        Binding("i", "inspect", "inspect"),
        Binding("r", "command('restart')", "restart"),
        Binding("R", "command('reverse')", "reverse-continue", show=False),
        Binding("g", "command('first')", "first", show=False),
        Binding("G", "command('last')", "last", show=False),
    ]

    def __init__(self, session: Session, *, title: str = "", autostart: bool = True):
        super().__init__()
        self.session = session
        self.model_title = title
        self.sub_title = title
        self.autostart = autostart
        self.busy = False
        self.last_stop: Stop = session.stop
        self._previous_values: dict = {}

    # -- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Horizontal(id="top"):
            yield GraphView(id="graph")
            with Vertical(id="side"):
                yield LoopState(id="state")
                with VerticalScroll(id="code-scroll"):
                    yield PseudoCode(id="code")
        with TabbedContent(id="tabs"):
            with TabPane("Back edges", id="tab-back"):
                yield BackEdgeTable(id="back")
            with TabPane("Scan outputs", id="tab-scan"):
                with Horizontal():
                    yield ScanTable(id="scan")
                    yield Static(id="heat")
            with TabPane("Inspector", id="tab-inspect"):
                yield Inspector(id="inspector")
            with TabPane("Breakpoints", id="tab-bp"):
                yield BreakpointTable(id="bps")
            with TabPane("Watches", id="tab-watch"):
                yield WatchTable(id="watches")
            with TabPane("Log", id="tab-log"):
                yield RichLog(id="log", wrap=True, markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#graph").border_title = "body"
        self.query_one("#side").border_title = "loop"
        self.log_line("loopdbg: press n for the next iteration, s to step, c to continue, "
                      "b to add a breakpoint, ? for help")
        self.refresh_all(self.session.stop)
        if self.autostart:
            self.action_command("step")

    def on_resize(self, event) -> None:
        narrow = event.size.width < 110 or event.size.height < 32
        self.screen.set_class(narrow, "narrow")

    # -- running commands ---------------------------------------------------------------------
    def action_command(self, name: str) -> None:
        if self.busy:
            self.notify("busy: press space to pause the running command", severity="warning")
            return
        self.busy = True
        self.post_message(Busy(True, name))
        self._work(name)

    @work(thread=True, exclusive=True, group="engine")
    def _work(self, name: str) -> None:
        method = getattr(self.session, COMMANDS.get(name, name))
        try:
            stop = method()
        except LoopdbgError as exc:
            stop = Stop(kind=ERROR, reason=str(exc), event=self.session.current, error=exc)
        except Exception as exc:  # noqa: BLE001 - a bug must show, not crash the UI
            stop = Stop(kind=ERROR, reason=f"internal error: {type(exc).__name__}: {exc}",
                        event=self.session.current)
        self.post_message(Stopped(stop, name))

    def action_step_node(self) -> None:
        self.action_command("step_node")

    def action_pause(self) -> None:
        if self.busy:
            self.session.request_pause()

    @on(Busy)
    def _on_busy(self, message: Busy) -> None:
        self._running = message.command
        self._show_progress()
        self._progress_timer = self.set_interval(0.3, self._show_progress)

    def _show_progress(self) -> None:
        """While a command runs: where the engine is (read from the session, never blocking)."""
        if not self.busy:
            return
        e = self.session.current
        where = f" · loop {e.path} iteration {e.iteration}" if e is not None else ""
        self.sub_title = f"{self.model_title} · running {self._running}…{where} (space pauses)"

    @on(Stopped)
    def _on_stopped(self, message: Stopped) -> None:
        self.busy = False
        if self._progress_timer is not None:
            self._progress_timer.stop()
            self._progress_timer = None
        self.sub_title = self.model_title
        stop = message.stop
        self.refresh_all(stop)
        self.log_line(f"[{message.command}] {headline(stop)}")
        if stop.kind in ("breakpoint", "nan", "error"):
            self.notify(headline(stop), severity="error" if stop.kind == "error" else "warning")
        for n in self.session.notices[self._notices_shown:]:
            self.log_line(f"notice: {n.message}")
        self._notices_shown = len(self.session.notices)

    _notices_shown = 0
    _progress_timer = None
    _running = ""

    # -- drawing ------------------------------------------------------------------------------
    def refresh_all(self, stop: Stop) -> None:
        self.last_stop = stop
        session = self.session
        event = stop.event or (stop.node.event if stop.node else None)
        mode = ""
        if event is not None:
            from loopdbg.teach.modes import loop_mode
            mode = loop_mode(event.spec, session.loop_started.get(event.path)).mode
        self.query_one(LoopState).show(stop, session, mode)
        self.query_one(PseudoCode).show(
            stop, session.loop_started.get(event.path) if event is not None else None)
        self.query_one(GraphView).show(stop, session)
        history = self._loop_history(event)
        self.query_one(BackEdgeTable).show(stop, history)
        self.query_one(ScanTable).show(stop)
        self.query_one("#heat", Static).update(heatmap(stop))
        self.query_one(Inspector).show(stop)
        self.query_one(BreakpointTable).show(session.breakpoints)
        self.query_one(WatchTable).show(session.breakpoints, stop)
        graph = self.query_one(GraphView)
        graph.border_title = graph.border_title_text or "body"

    def _loop_history(self, event, limit: int = 48) -> list:
        """Recent iterations of the current loop execution, oldest first, for sparklines."""
        if event is None:
            return []
        session = self.session
        timeline = session.timeline
        pos = session.stop.position if session.stop.position >= 0 else session.newest
        recent = [n for n in timeline.iterations(event.path, event.outer) if n <= pos][-limit:]
        return [timeline.at(n) for n in recent]

    def log_line(self, text: str) -> None:
        self.query_one("#log", RichLog).write(text)

    # -- breakpoints, watches, inspector ----------------------------------------------------------
    def _check_expr(self, add) -> callable:
        def check(text: str) -> str | None:
            try:
                add(text)
            except LoopdbgError as exc:
                return str(exc)
            return None
        return check

    def action_add_breakpoint(self) -> None:
        scope = self.last_stop.event.path if self.last_stop.event else None

        def add(text):
            self.session.breakpoints.add(text)

        def done(result):
            if result:
                self.refresh_all(self.last_stop)
                self.log_line(f"breakpoint added: {result}")
        hint = "i == 7   ·   not cond   ·   isnan(h).any()"
        title = "Break after an iteration where … " + (f"(loops: any; current: {scope})" if scope else "")
        self.push_screen(Prompt(title, hint, self._check_expr(add)), done)

    def action_add_watch(self) -> None:
        def add(text):
            self.session.breakpoints.watch(text)

        def done(result):
            if result:
                stop = self.last_stop
                if stop.event is not None:
                    from loopdbg.debug.breakpoints import EventLookup
                    stop = replace(stop, watches=tuple(
                        self.session.breakpoints.evaluate_watches(EventLookup(stop.event))))
                self.refresh_all(stop)
        self.push_screen(Prompt("Watch the expression …", "h.shape   ·   norm(h)   ·   changed(h)",
                                self._check_expr(add)), done)

    def action_inspect(self) -> None:
        def done(result):
            if result:
                self.query_one(TabbedContent).active = "tab-inspect"
                self.query_one(Inspector).inspect(result)
        self.push_screen(Prompt("Inspect …", "h   ·   h[0, :4]   ·   t[\"name with spaces\"]",
                                lambda text: None), done)

    def toggle_breakpoint(self, number: int) -> None:
        bp = self.session.breakpoints.get(number)
        bp.enabled = not bp.enabled
        self.refresh_all(self.last_stop)

    def edit_breakpoint(self, number: int) -> None:
        bp = self.session.breakpoints.get(number)

        def done(result):
            if result:
                self.refresh_all(self.last_stop)
        self.push_screen(Prompt(f"Edit breakpoint {number}", bp.text,
                                self._check_expr(lambda t: self.session.breakpoints.edit(number, t)),
                                value=bp.text), done)

    def delete_breakpoint(self, number: int) -> None:
        self.session.breakpoints.delete(number)
        self.refresh_all(self.last_stop)

    def delete_watch(self, number: int) -> None:
        self.session.breakpoints.delete_watch(number)
        self.refresh_all(self.last_stop)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())


def run_app(session: Session, title: str = "") -> int:
    LoopdbgApp(session, title=title).run()
    return 0


def model_title(path) -> str:
    """The model's path as the user would type it (relative to here when it is below here)."""
    if not path:
        return ""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)
