"""The panel contract: a panel is a widget class with a place and show(view); the app composes
every entry of PANELS (a tab's when the tab is first shown) and shows each one every stop, and
panels ask for changes by messages."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

pytest.importorskip("textual")

from screen import open_tab, screen_text, settle  # noqa: E402
from textual.widgets import DataTable, Static, TabbedContent  # noqa: E402

import loopdbg.tui.app as app_module  # noqa: E402
from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.tui.app import PANELS, LoopdbgApp  # noqa: E402
from loopdbg.tui.messages import ToggleBreakpoint  # noqa: E402
from loopdbg.tui.panel import Panel, View  # noqa: E402
from loopdbg.tui.widgets.inspector import Inspector  # noqa: E402
from loopdbg.tui.widgets.breakpoints import BreakpointTable, WatchTable  # noqa: E402
from loopdbg.tui.widgets.timeline import TimelinePanel  # noqa: E402

CASE = Path(__file__).resolve().parents[1] / "corpus" / "loop_while_iter"
ENDLESS = Path(__file__).resolve().parents[1] / "data" / "endless_loop"
SIZE = (160, 48)


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


def text_of(widget: Static) -> str:
    return getattr(widget.content, "plain", str(widget.content))


class Seen(Panel, Static):
    """A panel added by a test: it shows where every view it was given stands."""

    TAB, TAB_ID, ID = "Seen", "tab-seen", "seen"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.views: list[View] = []

    def show(self, view: View) -> None:
        self.views.append(view)
        e = view.event
        self.update(f"{view.stop.kind} at {e.iteration if e is not None else '-'}, "
                    f"{len(view.history)} in history")


def test_every_panel_keeps_the_contract():
    for panel in PANELS:
        assert issubclass(panel, Panel), panel
        assert "show" in vars(panel), f"{panel.__name__} does not implement show(view)"
        assert panel.AREA in ("main", "side", "tabs"), panel
        assert panel.AREA != "tabs" or (panel.TAB and panel.TAB_ID), panel


async def test_a_new_panel_is_one_class_and_one_entry(monkeypatch):
    monkeypatch.setattr(app_module, "PANELS", PANELS + (Seen,))
    session = Session.open(CASE / "model.xml", CASE / "inputs.npz")
    app = LoopdbgApp(session, title="model.xml")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n", "n")
        app.query_one(TabbedContent).active = "tab-seen"
        await pilot.pause()
        seen = app.query_one(Seen)
        assert text_of(seen) == "step at 2, 3 in history"
        assert "step at 2, 3 in history" in "\n".join(screen_text(app))
        assert seen.views and all(v.stop.kind == "step" for v in seen.views)
        assert seen.views[-1].stop is session.stop is app.last_stop


async def test_a_panel_out_of_sight_is_shown_the_stop_in_sight_or_once_read(monkeypatch):
    """A key's frame waits only for the panels on the screen: one in a tab not selected is
    shown the last stop when its tab comes in front, or once the person pauses to read (a big
    body's hidden tabs cost ~10-20 ms a key: a run of keys pays for none of them)."""
    monkeypatch.setattr(app_module, "PANELS", PANELS + (Seen,))
    monkeypatch.setattr(LoopdbgApp, "CATCH_UP_DELAY", 600)   # keys far faster than reading
    session = Session.open(CASE / "model.xml", CASE / "inputs.npz")
    app = LoopdbgApp(session, title="model.xml")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen, state = app.panel_of(Seen), app.query_one("#state")
        assert app.query_one(TabbedContent).active != "tab-seen"
        assert not seen.views
        await press(pilot, "n", "n")
        assert not seen.views                             # not yet: the keys come first
        assert "current_iteration" in text_of(state)      # the panels in view were shown
        await open_tab(pilot, "tab-seen")                 # its tab comes in front (a click)
        assert len(seen.views) == 1 and seen.views[-1].stop is app.last_stop
        assert "step at 2, 3 in history" in "\n".join(screen_text(app))
        app.refresh_all(session.stop)                     # in view now: shown at once
        assert len(seen.views) == 2
        await press(pilot, "right_square_bracket")        # out of sight again
        app.CATCH_UP_DELAY = 0.05                         # the person reads the next stop
        await press(pilot, "n")
        for _ in range(100):
            if len(seen.views) == 3:
                break
            await pilot.pause(0.05)
        assert len(seen.views) == 3 and seen.views[-1].stop is app.last_stop
        assert text_of(seen) == "step at 3, 4 in history"


async def test_panes_zoomed_away_show_the_last_stop_in_the_frame_that_brings_them_back(monkeypatch):
    monkeypatch.setattr(LoopdbgApp, "CATCH_UP_DELAY", 600)   # keys far faster than reading
    session = Session.open(CASE / "model.xml", CASE / "inputs.npz")
    app = LoopdbgApp(session, title="model.xml")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "z")                            # the graph alone
        await press(pilot, "n", "n")
        assert "current_iteration 0" in text_of(app.query_one("#state"))   # not shown yet
        await press(pilot, "z")                            # back: the state shows the stop
        assert any("current_iteration 2" in row for row in screen_text(app))
        assert any("body_x ←" in row for row in screen_text(app))          # the back edges


async def test_a_panel_asks_the_app_by_message():
    session = Session.open(CASE / "model.xml", CASE / "inputs.npz")
    session.breakpoints.add("i == 2")
    app = LoopdbgApp(session, title="model.xml")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_tab(pilot, "tab-bp")
        shown = app.view
        app.query_one("#bps").post_message(ToggleBreakpoint(1))
        await pilot.pause()
        assert session.breakpoints.get(1).enabled is False
        assert app.view is not shown and app.view.stop is shown.stop      # shown again


async def caught_up(pilot, timeout: float = 20.0) -> None:
    """Wait until the catch-up timer of the last stop (``CATCH_UP_DELAY`` after it) has fired
    and the app has done what it asked (Textual's Timer: its task ends after a one-shot)."""
    timer = pilot.app._catch_up_timer
    deadline = time.monotonic() + timeout
    while timer is not None and timer._task is not None and not timer._task.done():
        assert time.monotonic() < deadline, "the catch-up timer never fired"
        await asyncio.sleep(0.01)
    await pilot.pause()

async def test_a_panel_out_of_sight_is_not_shown_while_a_command_runs(monkeypatch):
    """The session is the engine thread's while a command runs: a stop's panels out of sight,
    not shown yet when the next command starts, show the stop that command ends in."""
    monkeypatch.setattr(app_module, "PANELS", PANELS + (Seen,))
    session = Session.open(ENDLESS / "model.xml", ENDLESS / "inputs.npz")
    app = LoopdbgApp(session, title="endless")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_tab(pilot, "tab-seen")             # built, then out of sight again
        await open_tab(pilot, "tab-back")
        seen = app.query_one(Seen)
        shown = len(seen.views)
        app.refresh_all(session.stop)                 # its frame to come, then Seen ...
        app.action_command("continue")                # ... but a continue runs first
        for _ in range(20):
            await pilot.pause(0.01)
        assert app.busy and len(seen.views) == shown
        await pilot.press("space")                    # paused: a stop, shown to Seen once
        await settle(pilot)                           # the person reads it
        await caught_up(pilot)
        assert len(seen.views) == shown + 1 and seen.views[-1].stop is app.last_stop


async def test_a_tab_is_built_when_first_shown_and_its_first_frame_shows_the_stop():
    """Opening the app builds the panel of the tab in front (and the Inspector, which `i`
    answers in at once) only; each other tab's panel is built the first time its tab comes in
    front (a key, a click), and the first frame that shows the tab shows the last stop in it
    (not an empty table, then the stop)."""
    session = Session.open(CASE / "model.xml", CASE / "inputs.npz")
    session.breakpoints.add("i == 7")
    session.breakpoints.watch("i * 10")
    app = LoopdbgApp(session, title="model.xml")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tabs = app.query_one(TabbedContent)
        unbuilt = [p for p in app.panels if p.AREA == "tabs" and p.TAB_ID != tabs.active
                   and not p.BUILT_AT_OPEN]
        assert {type(p) for p in unbuilt} >= {TimelinePanel, BreakpointTable, WatchTable}
        assert app.panel_of(Inspector).is_attached
        assert not any(p.is_attached for p in unbuilt)
        assert not app.query(TimelinePanel) and not app.query(DataTable).filter("#bps")
        await press(pilot, "n", "n")
        assert not any(p.is_attached for p in unbuilt)       # stops do not build them either
        firsts: dict[str, str] = {}                          # tab -> its first frame's text
        original = app._display

        def display(screen, renderable):
            original(screen, renderable)
            if renderable is not None and tabs.active not in firsts:
                firsts[tabs.active] = "\n".join(screen_text(app))
        app._display = display
        await press(pilot, "t")                              # a key: the Timeline, focused
        await open_tab(pilot, "tab-bp")                      # a click on a tab's title
        await press(pilot, "right_square_bracket")          # the next tab: the Watches
        assert app.focused is not None
        timeline = firsts["tab-timeline"]
        assert "iterations so far · at 2" in timeline and "first/last" in timeline, timeline
        assert "i == 7" in firsts["tab-bp"], firsts["tab-bp"]
        watches = firsts["tab-watch"]
        assert next(row for row in watches.splitlines() if "i * 10" in row).split()[-1] == "20"
        built = [p for p in unbuilt if p.is_attached]
        assert {type(p) for p in built} == {TimelinePanel, BreakpointTable, WatchTable}


async def test_keys_that_come_before_a_tab_is_built_each_move_one_tab_on():
    """] ] typed faster than a tab is built: the second goes on from the tab the first chose,
    not from the one still in front."""
    session = Session.open(CASE / "model.xml", CASE / "inputs.npz")
    app = LoopdbgApp(session, title="model.xml")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "tab-back"
        app.simulate_key("right_square_bracket")      # both in the queue before either runs
        app.simulate_key("right_square_bracket")
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "tab-timeline"
        assert "1 iteration so far · at 0" in "\n".join(screen_text(app))
