"""The loopdbg terminal UI: a thin Textual face over a debugging Session.

Every command (next, step, continue, ...) runs the session in a thread of its own
(``loopdbg.tui.worker``), so the screen never freezes, a running continue can be paused and
quitting never waits for the engine; the thread posts the resulting Stop back and every panel
(``PANELS``) is shown it (``loopdbg.tui.panel``). The UI decides nothing about loop semantics: it
shows what the session says.

Keys are listed in BINDINGS (and in the footer, on the help screen ``?`` and in the command
palette ``ctrl+p``, ``loopdbg.tui.commands``). The layout follows the terminal's size: below 110
columns or 32 rows the panes shrink (``narrow``, ``short``), and ``z`` maximises the focused one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Header, RichLog, TabbedContent, TabPane

from loopdbg.debug.report import (RANDOM_SOURCE, headline, random_failure_hint,
                                  random_inputs_note)
from loopdbg.debug.session import Session, Stop
from loopdbg.tui.commands import LoopdbgCommands
from loopdbg.tui.guard import Guarded, describe
from loopdbg.tui.messages import Busy, GoTo, GroupsShown, InspectValue, PromptShown, Stopped
from loopdbg.tui.panel import Panel, View
from loopdbg.tui.prompts import PromptActions
from loopdbg.tui.screens.help import HelpPanel
from loopdbg.tui.screens.prompt import PromptBar
from loopdbg.tui.showing import PanelPane, PanelTabs, ShowsPanels
from loopdbg.tui.stylesheet import SharedStylesheet
from loopdbg.tui.widgets.breakpoints import BreakpointTable, WatchTable
from loopdbg.tui.widgets.code import CodePanel
from loopdbg.tui.widgets.footer import KeyFooter
from loopdbg.tui.widgets.graph import GraphView
from loopdbg.tui.widgets.inspector import Inspector
from loopdbg.tui.widgets.outputs import OutputsPanel
from loopdbg.tui.widgets.plot import PlotPanel
from loopdbg.tui.widgets.state import LoopState
from loopdbg.tui.widgets.tables import BackEdgeTable, ScanPanel
from loopdbg.tui.widgets.timeline import TimelinePanel
from loopdbg.tui.worker import EngineThread

# Every panel, in the order it appears in its area (Panel.AREA); the Log tab comes last.
PANELS: tuple[type[Panel], ...] = (
    GraphView, LoopState, CodePanel,
    BackEdgeTable, ScanPanel, TimelinePanel, PlotPanel, OutputsPanel, Inspector,
    BreakpointTable, WatchTable,
)

NARROW_WIDTH = 110          # below: the side column and the tabs give way to the graph
SHORT_HEIGHT = 32           # below: the tabs shrink to a few rows
TALL_HEIGHT = 56            # from here: the tabs grow with the terminal
ZOOMS = ("zoom-graph", "zoom-side", "zoom-tabs")


class LoopdbgApp(Guarded, PromptActions, ShowsPanels, App):
    """loopdbg's UI.

    n next · N back · s step (into / node by node) · f finish · c continue · space pause ·
    b breakpoint · w watch · i inspect · / find (F3 next match) · z maximise · [ ] tabs · R reverse-continue ·
    g/G first/last · : go to iteration · t timeline · p plot · r restart · q quit
    """

    CSS_PATH = Path(__file__).with_name("app.tcss")   # absolute: subclasses elsewhere find it too
    TITLE = "loopdbg"
    COMMANDS = {LoopdbgCommands}
    # In the order the footer shows them (it drops from the end what does not fit; ? stays).
    BINDINGS = [
        Binding("n", "command('next')", "next"),
        Binding("s", "command('step_node')", "step"),
        Binding("c", "command('continue')", "continue"),
        Binding("b", "add_breakpoint", "break"),
        Binding("q", "quit", "quit"),
        Binding("question_mark", "help", "help"),
        Binding("f", "command('finish')", "finish"),
        Binding("i", "inspect", "inspect"),
        Binding("z", "zoom", "max"),
        Binding("N", "command('back')", "back"),
        Binding("w", "add_watch", "watch"),
        Binding("right_square_bracket", "tab(1)", "tab"),
        Binding("slash", "find", "find"),
        Binding("space", "pause", "pause"),
        Binding("r", "command('restart')", "restart"),
        Binding("left_square_bracket", "tab(-1)", "tab", show=False),
        Binding("R", "command('reverse')", "reverse-continue", show=False),
        Binding("g", "command('first')", "first", show=False),
        Binding("G", "command('last')", "last", show=False),
        Binding("colon", "jump", "go to", show=False),
        Binding("f3", "find_again(1)", "next match", show=False),
        Binding("shift+f3", "find_again(-1)", "previous match", show=False),
        Binding("t", "timeline", "timeline", show=False),
        Binding("p", "plot", "plot", show=False),
        Binding("ctrl+c", "interrupt", "pause / quit", show=False, priority=True),
    ]

    def __init__(self, session: Session, *, title: str = "", autostart: bool = True,
                 notes: tuple[str, ...] = (), on_leave=None):
        """``notes``: lines for the Log (and a notification) at start; ``on_leave``: called
        when the app ends, before anything may end the process (saving breakpoints)."""
        super().__init__()
        self.stylesheet = SharedStylesheet(variables=self.get_css_variables())
        self.session = session
        self.notes = notes
        self.on_leave = on_leave
        self.model_title = title
        self.sub_title = title
        self.autostart = autostart
        self.busy = False
        self.last_stop: Stop = session.stop
        self.view = View(session.stop, session)
        self.panels: list[Panel] = []
        self._unshown: set[Panel] = set()   # panels out of sight, to show the last stop
        self._catch_up_timer = None         # shows them once the person pauses (ShowsPanels)
        self.engine = EngineThread(session, self._stopped_in_thread)
        self.internal_errors: list[BaseException] = []
        self._up = False                 # the screen is built: errors are reported, not fatal

    def get_driver_class(self):
        """Textual's driver, with a lone Escape delivered at once (``loopdbg.tui.driver``)."""
        driver = super().get_driver_class()
        try:
            from loopdbg.tui.driver import quick_escape
        except ImportError:             # no termios (Windows): Textual's driver as it is
            return driver
        return quick_escape(driver)

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
        with PanelTabs(id="tabs"):
            for k, panel in enumerate(placed["tabs"]):     # the first tab is shown: built now
                yield PanelPane(panel, built=k == 0 or panel.BUILT_AT_OPEN)
            with TabPane("Log", id="tab-log"):
                yield RichLog(id="log", wrap=True, markup=False)
        yield HelpPanel(id="help")
        yield PromptBar(id="prompt")
        yield KeyFooter()

    @property
    def graph(self) -> GraphView:
        return self.query_one(GraphView)

    def on_mount(self) -> None:
        self.query_one("#side").border_title = "loop"
        self.log_line("loopdbg: press n for the next iteration, s to step, c to continue, "
                      "b to add a breakpoint, ? for help")
        notes = list(self.notes)
        if self.random_inputs:
            notes.append(random_inputs_note(self.session.inputs, self._model_path()))
            self.sub_title = self.model_title = f"{self.model_title} · random inputs"
        for note in notes:
            self.log_line(f"loopdbg: {note}")
            self.notify(note, markup=False, timeout=6)
        self.refresh_all(self.session.stop)
        self.graph.focus()
        self._up = True
        if self.autostart:              # to the first iteration of the outermost loop
            self.action_command("next")

    def on_resize(self, event) -> None:
        self.screen.set_class(event.size.width < NARROW_WIDTH, "narrow")
        self.screen.set_class(event.size.height < SHORT_HEIGHT, "short")
        self.screen.set_class(event.size.height >= TALL_HEIGHT, "tall")
        self._make_room_for_the_prompt()

    @on(PromptShown)
    def _prompt_shown(self, message: PromptShown) -> None:
        self._make_room_for_the_prompt()

    def _make_room_for_the_prompt(self) -> None:
        """A prompt open on a short screen takes the tabs' rows. Said by an inline style of the
        tabs, not by a class of the screen: each class change of the screen restyles every
        widget (~0.1 s of CPU, twice per prompt)."""
        tabs = self.query_one("#tabs")
        if self.screen.has_class("short") and self.query_one(PromptBar).open:
            tabs.styles.display = "none"
        elif tabs.styles.clear_rule("display"):      # the stylesheet says again (zoom, help)
            tabs.styles.refresh(layout=True, parent=True)
            self.show_unshown(only_in_sight=True)

    def action_zoom(self) -> None:
        """Maximise the pane that has the focus (the graph when none has); again to restore."""
        screen = self.screen
        if any(screen.has_class(z) for z in ZOOMS):
            screen.remove_class(*ZOOMS)
            self.show_unshown(only_in_sight=True)
            return
        focused = self.focused
        area = "graph"
        if focused is not None:
            if focused is self.query_one("#side") or self.query_one("#side") in focused.ancestors:
                area = "side"
            elif self.query_one("#tabs") in focused.ancestors:
                area = "tabs"
        screen.add_class(f"zoom-{area}")

    def action_tab(self, step: int) -> None:
        tabs = self.query_one(TabbedContent)
        ids = [pane.id for pane in tabs.query(TabPane)]
        current = self.tab_chosen or tabs.active      # a key before the last one's tab is in front
        k = ids.index(current) if current in ids else 0
        self.select_tab(ids[(k + step) % len(ids)])

    def action_graph_detail(self) -> None:
        self.graph.action_detail()

    # -- running commands ---------------------------------------------------------------------
    def action_command(self, name: str, *args) -> None:
        if self.busy:
            self.notify("busy: press space to pause the running command", severity="warning")
            return
        self.busy = True
        self.post_message(Busy(True, name))
        self.engine.start(name, *args)

    def on_go_to(self, message: GoTo) -> None:
        """A panel asks to move (the timeline's keys)."""
        if message.target is not None:
            self.action_command(message.command, message.target)
        else:
            self.action_command(message.command)

    def action_timeline(self) -> None:
        """`t`: the Timeline tab, focused (again: back to the graph)."""
        panel = self.panel_of(TimelinePanel)
        if self.focused is panel:
            self.graph.focus()
            return
        self.select_tab(TimelinePanel.TAB_ID, then=panel.focus)

    def _stopped_in_thread(self, stop: Stop, name: str) -> None:
        """Called in the engine thread: hand the stop to the UI (post_message is thread-safe)."""
        self.post_message(Stopped(stop, name))

    def action_step_node(self) -> None:
        self.action_command("step_node")

    def action_pause(self) -> None:
        if self.busy:
            self.session.request_pause()

    def action_interrupt(self) -> None:
        """ctrl+c: pause a running command; with nothing running, say how to quit."""
        if self.busy:
            self.session.request_pause()
        else:
            self.notify("nothing is running; press q to quit", timeout=3)

    @on(Busy)
    def _on_busy(self, message: Busy) -> None:
        # Only a command still running after 0.3 s says so in the header: changing the title
        # lays the screen out again, which a quick step must not pay for.
        self._running = message.command
        self._progress_timer = self.set_interval(0.3, self._show_progress)

    def _show_progress(self) -> None:
        """While a command runs: where the engine is (read from the session, never blocking)."""
        if not self.busy:
            return
        e = self.session.current
        where = f" · loop {e.path} iteration {e.iteration}" if e is not None else ""
        self.sub_title = f"{self.model_title} · running {self._running}…{where} (space pauses)"
        self.query_one(LoopState).running(f"running {self._running}…{where} (space pauses)")

    @on(Stopped)
    def _on_stopped(self, message: Stopped) -> None:
        self.busy = False
        if self._progress_timer is not None:
            self._progress_timer.stop()
            self._progress_timer = None
        if self.sub_title != self.model_title:
            self.sub_title = self.model_title
        stop = message.stop
        self.refresh_all(stop)
        if stop.kind == "end" and not self.session.engine.loops:     # nothing else to show
            self.select_tab(OutputsPanel.TAB_ID)
        self.log_line(f"[{message.command}] {headline(stop)}")
        if stop.kind in ("breakpoint", "nan", "error"):
            self.notify(headline(stop), severity="error" if stop.kind == "error" else "warning",
                        markup=False)
        if stop.kind == "error" and self.random_inputs:
            hint = random_failure_hint(self.session.inputs, self._model_path())
            self.log_line(f"hint: {hint}")
            self.notify(hint, markup=False, timeout=12)
        for n in self.session.notices[self._notices_shown:]:
            self.log_line(f"notice: {n.message}")
        self._notices_shown = len(self.session.notices)

    _notices_shown = 0
    _progress_timer = None

    @property
    def random_inputs(self) -> bool:
        """loopdbg made the inputs up (none were given): the UI says so."""
        return self.session.source == RANDOM_SOURCE

    def _model_path(self) -> str:
        return self.model_title.split(" · ")[0] or "MODEL"
    _running = ""

    @on(InspectValue)
    def _inspect_value(self, message: InspectValue) -> None:
        self.show_value(message.name)

    @on(GroupsShown)
    def _groups_shown(self, message: GroupsShown) -> None:
        """A group opened or closed (or a node found) in one panel: the others follow, and the
        panel it came from draws it, all in one screen update."""
        with self.batch_update():
            for panel in self.panels:
                panel.follow_groups(message.path, message.opened, message.layer_id)

    # -- drawing ------------------------------------------------------------------------------
    def refresh_all(self, stop: Stop) -> None:
        """Show every panel a new stop."""
        self.show_view(View(stop, self.session))

    def show_again(self, stop: Stop | None = None) -> None:
        """Show the current stop again: breakpoints or watches changed (or the stop's watches)."""
        self.show_view(self.view.again(stop))

    def log_line(self, text: str) -> None:
        self.query_one("#log", RichLog).write(Text(text))

    # -- internal errors (loopdbg.tui.guard) ----------------------------------------------------
    RAISE_INTERNAL_ERRORS = False    # tests: a bug fails the test instead of being logged

    def _handle_exception(self, error: Exception) -> None:
        if not self._up or self.RAISE_INTERNAL_ERRORS:
            super()._handle_exception(error)
            return
        self.report_internal_error(error, "the screen")

    def report_internal_error(self, exc: BaseException, where: str) -> None:
        """Show an unexpected exception in the Log and a notification; the UI stays up. The same
        error again (a panel failing at every stop) is counted, not shown again."""
        self.internal_errors.append(exc)
        key = (where, type(exc).__name__, str(exc))
        seen = self.__dict__.setdefault("_errors_seen", set())
        if key in seen:
            return
        seen.add(key)
        lines = describe(exc, where)
        try:
            for line in lines:
                self.log_line(line)
            self.notify(lines[0] + " — see the Log tab", severity="error", markup=False,
                        timeout=10)
        except Exception:  # noqa: BLE001 - the Log itself failing must not end the UI either
            pass

    # -- leaving ------------------------------------------------------------------------------
    STOP_TIMEOUT = 0.6       # seconds quitting waits for the engine thread to see the cancel

    def run(self, *args, **kwargs):
        """Run until the user quits, then stop the engine thread. A thread still inside one
        long kernel call after ``STOP_TIMEOUT`` is not waited for: the process ends here
        (``end_process``), since that thread still uses the session (and its trace)."""
        try:
            return super().run(*args, **kwargs)
        finally:
            if self.on_leave is not None:
                self.on_leave()
            if not self.engine.stop(self.STOP_TIMEOUT):
                if self.session.record is not None:
                    print("loopdbg: quit in the middle of an iteration: the trace ends before it "
                          "(`loopdbg trace info` reads what it holds)", file=sys.stderr)
                end_process(0)

    def action_quit(self) -> None:
        """Quit at once: a running command is cancelled between two iterations (``run_app``
        waits for it, bounded)."""
        self.session.request_cancel()
        self.exit()

    def action_help(self) -> None:
        """Show the help in place of the panes, or close it."""
        panel = self.query_one(HelpPanel)
        showing = not self.screen.has_class("show-help")
        self.screen.set_class(showing, "show-help")
        if showing:
            self._before_help = self.focused
            panel.focus()
        else:
            self.show_unshown(only_in_sight=True)
            back = getattr(self, "_before_help", None)
            if back is not None and back.is_attached and back.display:
                back.focus()
            else:
                self.graph.focus()
        self.refresh_bindings()

    def check_action(self, action: str, parameters) -> bool | None:
        """With the help shown, only closing it and quitting work (keys do not act unseen)."""
        if self.screen.has_class("show-help") and action not in ("help", "quit", "interrupt"):
            return False
        if action == "command" and not self.session.engine.loops and parameters and \
                parameters[0] not in ("restart", "continue"):
            return None                 # no loop: stepping keys are shown dimmed, do nothing
        return True


def run_app(session: Session, title: str = "") -> int:
    LoopdbgApp(session, title=title).run()
    return 0


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
