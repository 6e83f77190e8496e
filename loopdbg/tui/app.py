"""The loopdbg terminal UI: a thin Textual face over a debugging Session.

Every command (next, step, continue, ...) runs the session in a worker thread, so the screen never
freezes and a running continue can be paused; the worker posts the resulting Stop back and every
panel (``PANELS``) is shown it (``loopdbg.tui.panel``). The UI decides nothing about loop
semantics: it shows what the session says.

Keys are listed in BINDINGS (and in the footer and on the help screen, ``?``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Header, RichLog, TabbedContent, TabPane

from loopdbg.debug.breakpoints import EventLookup
from loopdbg.debug.report import headline
from loopdbg.debug.session import Session, Stop
from loopdbg.errors import LoopdbgError
from loopdbg.tui.messages import (Busy, DeleteBreakpoint, DeleteWatch, EditBreakpoint, Stopped,
                                  ToggleBreakpoint)
from loopdbg.tui.panel import Panel, View
from loopdbg.tui.screens.help import HelpScreen
from loopdbg.tui.screens.prompt import Prompt
from loopdbg.tui.widgets.breakpoints import BreakpointTable, WatchTable
from loopdbg.tui.widgets.code import CodePanel
from loopdbg.tui.widgets.graph import GraphView
from loopdbg.tui.widgets.inspector import Inspector
from loopdbg.tui.widgets.state import LoopState
from loopdbg.tui.widgets.tables import BackEdgeTable, ScanPanel
from loopdbg.tui.worker import EngineThread

# Every panel, in the order it appears in its area (Panel.AREA); the Log tab comes last.
PANELS: tuple[type[Panel], ...] = (
    GraphView, LoopState, CodePanel,
    BackEdgeTable, ScanPanel, Inspector, BreakpointTable, WatchTable,
)



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
        self.view = View(session.stop, session)
        self.panels: list[Panel] = []
        self.engine = EngineThread(session, self._stopped_in_thread)

    # -- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        self.panels = [panel(id=panel.ID) for panel in PANELS]
        placed = {area: [p for p in self.panels if p.AREA == area]
                  for area in ("main", "side", "tabs")}
        unplaced = [type(p).__name__ for p in self.panels if p.AREA not in placed]
        if unplaced:
            raise ValueError(f"panels with an unknown AREA: {', '.join(unplaced)}")
        yield Header(show_clock=False)
        with Horizontal(id="top"):
            yield from placed["main"]
            with Vertical(id="side"):
                yield from placed["side"]
        with TabbedContent(id="tabs"):
            for panel in placed["tabs"]:
                with TabPane(panel.TAB, id=panel.TAB_ID or None):
                    yield panel
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
        self.engine.start(name)

    def _stopped_in_thread(self, stop: Stop, name: str) -> None:
        """Called in the engine thread: hand the stop to the UI (post_message is thread-safe)."""
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
        """Show every panel a new stop."""
        self.show_view(View(stop, self.session))

    def show_view(self, view: View) -> None:
        """Every panel shows ``view`` (the panel contract, loopdbg.tui.panel)."""
        self.view = view
        self.last_stop = view.stop
        for panel in self.panels:
            panel.show(view)

    def show_again(self, stop: Stop | None = None) -> None:
        """Show the current stop again: breakpoints or watches changed (or the stop's watches)."""
        self.show_view(self.view.again(stop))

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
                self.show_again()
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
                    stop = replace(stop, watches=tuple(
                        self.session.breakpoints.evaluate_watches(EventLookup(stop.event))))
                self.show_again(stop)
        self.push_screen(Prompt("Watch the expression …", "h.shape   ·   norm(h)   ·   changed(h)",
                                self._check_expr(add)), done)

    def action_inspect(self) -> None:
        def done(result):
            if result:
                self.query_one(TabbedContent).active = "tab-inspect"
                self.query_one(Inspector).inspect(result)
        self.push_screen(Prompt("Inspect …", "h   ·   h[0, :4]   ·   t[\"name with spaces\"]",
                                lambda text: None), done)

    @on(ToggleBreakpoint)
    def _toggle_breakpoint(self, message: ToggleBreakpoint) -> None:
        bp = self.session.breakpoints.get(message.number)
        bp.enabled = not bp.enabled
        self.show_again()

    @on(EditBreakpoint)
    def _edit_breakpoint(self, message: EditBreakpoint) -> None:
        number = message.number
        bp = self.session.breakpoints.get(number)

        def done(result):
            if result:
                self.show_again()
        self.push_screen(Prompt(f"Edit breakpoint {number}", bp.text,
                                self._check_expr(lambda t: self.session.breakpoints.edit(number, t)),
                                value=bp.text), done)

    @on(DeleteBreakpoint)
    def _delete_breakpoint(self, message: DeleteBreakpoint) -> None:
        self.session.breakpoints.delete(message.number)
        self.show_again()

    @on(DeleteWatch)
    def _delete_watch(self, message: DeleteWatch) -> None:
        self.session.breakpoints.delete_watch(message.number)
        self.show_again()

    def action_quit(self) -> None:
        """Quit at once: a running command is cancelled between two iterations (``run_app``
        waits for it, bounded)."""
        self.engine.session.request_cancel()
        self.exit()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())


def run_app(session: Session, title: str = "", *, stop_timeout: float = 0.6) -> bool:
    """Run the UI until the user quits; then stop the engine thread.

    True when the engine stopped within ``stop_timeout`` s (the session may be closed); False
    when it is still inside one long kernel call: the caller must then end the process without
    touching the session again (``end_process``), since that thread still uses it.
    """
    app = LoopdbgApp(session, title=title)
    try:
        app.run()
    finally:
        stopped = app.engine.stop(stop_timeout)
    return stopped


def end_process(code: int = 0) -> None:
    """End the process now, although a daemon thread is inside a kernel (nothing waits for it)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def model_title(path) -> str:
    """The model's path as the user would type it (relative to here when it is below here)."""
    if not path:
        return ""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)
