"""The Textual UI driven by Pilot: every key, every panel, errors and small terminals.

Each test opens a real Session on a corpus model, runs ``LoopdbgApp`` headless, presses keys and
waits for the engine worker (``settle``) before looking at the session and at the panels. The UI
only draws what the session says, so the assertions check both: the session moved, and the panel
shows it.

Models: tests/corpus/* and tests/data/{nested_loop,endless_loop,failing_loop}. ``endless_loop`` is a
Loop with trip count -1 and a constant-true body condition (only a pause stops it);
``failing_loop`` adds ``Range(0, iter + 1)`` to a 2-element constant, which broadcasts at
iterations 0 and 1 and fails at iteration 2.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.widgets import DataTable, Footer, Input, Static, TabbedContent  # noqa: E402

from screen import open_tab, press, settle  # noqa: E402,F401 - the tests of this file wait with them

from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.tui.app import LoopdbgApp  # noqa: E402
from loopdbg.tui.screens.prompt import PromptBar  # noqa: E402
from loopdbg.tui.widgets.breakpoints import BreakpointTable, WatchTable  # noqa: E402
from loopdbg.tui.widgets.code import PseudoCode  # noqa: E402
from loopdbg.tui.widgets.graph import GraphView  # noqa: E402
from loopdbg.tui.widgets.state import LoopState  # noqa: E402
from loopdbg.tui.widgets.tables import BackEdgeTable, ScanTable  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]
CORPUS = TESTS / "corpus"
DATA = TESTS / "data"
SIZE = (160, 48)


def model(case: str) -> tuple[Path, Path]:
    base = CORPUS / case if (CORPUS / case).is_dir() else DATA / case
    if not (base / "model.xml").exists():
        pytest.skip(f"{case}: no model")
    return base / "model.xml", base / "inputs.npz"


def session(case: str = "loop_while_iter", **options) -> Session:
    xml, npz = model(case)
    return Session.open(xml, npz, **options)


async def type_text(pilot, text: str) -> None:
    await pilot.press(*text)


def text_of(widget) -> str:
    content = widget.content if isinstance(widget, Static) else widget.render()
    return getattr(content, "plain", str(content))


def state_text(app) -> str:
    return text_of(app.query_one(LoopState))


def state_words(app) -> str:
    """The state panel's text with its wrapping undone (lines wrap at the panel's width)."""
    return " ".join(state_text(app).split())


def field(app, name: str) -> str:
    """A line of the LoopState panel, e.g. field(app, 'current_iteration') -> '3'."""
    for line in state_text(app).splitlines():
        if line.startswith(name + " "):
            return line[len(name):].strip()
    raise AssertionError(f"no {name!r} line in the state panel:\n{state_text(app)}")


def rows(table: DataTable) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(k)] for k in range(table.row_count)]


def app_for(sess: Session, **kw) -> LoopdbgApp:
    return LoopdbgApp(sess, title="model.xml", **kw)


# -- opening --------------------------------------------------------------------------------------

async def test_opens_at_the_first_iteration_and_fills_every_panel():
    sess = session()
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert sess.current.iteration == 0 and sess.stop.position == 0
        assert field(app, "current_iteration") == "0"
        assert field(app, "trip_count") == "no limit"
        assert field(app, "condition").startswith("true")
        assert "stopped: step" in state_text(app)
        assert "body_x" in text_of(app.query_one(PseudoCode))
        graph = app.query_one(GraphView)
        assert graph.virtual_size.height > 0
        assert any("body_x" in line for line in graph._lines)
        back = rows(app.query_one(BackEdgeTable))
        assert [r[0] for r in back] == ["body_x ← Add_5526", "body_count ← Add_5530"]
        await open_tab(pilot, "tab-scan")
        scans = rows(app.query_one(ScanTable))
        assert scans and scans[0][0] == "x_trace" and scans[0][2] == "(1,)"


async def test_without_autostart_nothing_has_run():
    sess = session()
    app = app_for(sess, autostart=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert sess.current is None
        assert "no iteration has run yet" in state_text(app)
        assert "no loop has started" in text_of(app.query_one(PseudoCode))
        await press(pilot, "n")
        assert field(app, "current_iteration") == "0"


# -- moving ---------------------------------------------------------------------------------------

async def test_n_N_g_G_move_forward_back_first_last():
    sess = session()
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for want in (1, 2, 3):                       # n: the next iteration
            await press(pilot, "n")
            assert sess.current.iteration == want and sess.stop.position == want
            assert field(app, "current_iteration") == str(want)
            assert f"iteration {want + 1} runs next" in field(app, "condition")
        assert app.last_stop.kind == "step" and "stopped: next" in state_text(app)
        # the sparkline of the back-edge table grows with the history
        assert len(rows(app.query_one(BackEdgeTable))[0][6]) == 4

        await press(pilot, "N")                      # N: one back
        assert sess.current.iteration == 2 and sess.stop.position == 2
        assert field(app, "current_iteration") == "2"
        assert "stopped: back" in state_text(app)
        await press(pilot, "N", "N")
        assert sess.current.iteration == 0
        await press(pilot, "N")                      # nothing before the first iteration
        assert sess.current.iteration == 0 and app.last_stop.kind == "history"
        assert "nothing to step back to" in state_text(app)
        await press(pilot, "n")                      # forward again replays the history
        assert sess.current.iteration == 1

        await press(pilot, "G")                      # G: the newest iteration run so far
        assert app.last_stop.kind == "history" and sess.current.iteration == 3
        assert field(app, "current_iteration") == "3"
        await press(pilot, "g")                      # g: the oldest one kept
        assert sess.current.iteration == 0
        assert field(app, "current_iteration") == "0"


async def test_s_steps_node_by_node_through_the_next_iteration():
    sess = session()
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        stop = app.last_stop
        assert stop.kind == "node" and stop.node is not None
        assert (stop.node.index, stop.node.total) == (0, 5)
        assert stop.node.event.iteration == 1
        assert "node 1 of 5" in state_text(app)
        assert field(app, "current_iteration").startswith("1  (running node by node")
        graph = "\n".join(app.query_one(GraphView)._lines)
        assert stop.node.layer.name in graph
        await press(pilot, "s", "s", "s", "s")
        assert app.last_stop.node.index == 4
        await press(pilot, "s")                      # past the last node: the iteration is done
        assert app.last_stop.kind == "step" and app.last_stop.node is None
        assert sess.current.iteration == 1
        assert field(app, "current_iteration") == "1"


async def test_f_finishes_the_loop():
    sess = session()
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "f")
        e = app.last_stop.event
        assert e.continues is False and e.iteration == 6
        assert field(app, "condition").startswith("false")
        assert "the loop ends" in field(app, "condition")
        assert field(app, "loop ended").startswith("7 iterations")


async def test_c_runs_to_a_breakpoint_and_R_reverse_continues_back_to_it():
    sess = session()
    sess.breakpoints.add("i == 3")
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_tab(pilot, "tab-bp")
        assert rows(app.query_one(BreakpointTable))[0][:2] == ["1", "i == 3"]
        await press(pilot, "c")
        assert app.last_stop.kind == "breakpoint"
        assert sess.current.iteration == 3
        assert field(app, "current_iteration") == "3"
        assert "breakpoint" in state_text(app)
        assert rows(app.query_one(BreakpointTable))[0][4] == "1"    # hits
        await press(pilot, "n", "n")
        assert sess.current.iteration == 5
        await press(pilot, "R")
        assert app.last_stop.kind == "breakpoint" and sess.current.iteration == 3
        assert "(reverse)" in state_text(app)
        await press(pilot, "c")                      # no further hit: the end of the run
        assert app.last_stop.kind == "end" and sess.done


async def test_c_runs_to_the_end_and_r_restarts():
    sess = session()
    sess.breakpoints.watch("body_count")
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "c")
        assert app.last_stop.kind == "end"
        assert sess.done and sess.finished is not None
        assert "finished" in state_text(app)
        assert field(app, "current_iteration") == "6"
        await press(pilot, "n")                      # nothing more to run: still at the end
        assert app.last_stop.kind == "end"
        await press(pilot, "r")
        assert sess.current is None and app.last_stop.kind == "start"
        assert "no iteration has run yet" in state_text(app)
        assert len(sess.breakpoints.watches) == 1   # kept across the restart
        await press(pilot, "n")
        assert sess.current.iteration == 0 and sess.stop.position == 0


async def test_space_pauses_a_running_continue():
    sess = session("endless_loop", max_iterations=None)
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        for _ in range(300):               # the header says so once it has run 0.3 s
            if "running continue" in app.sub_title:
                break
            await asyncio.sleep(0.02)
        assert app.busy, "continue on an endless loop should still be running"
        assert "running continue" in app.sub_title
        await pilot.press("n")                       # refused while busy: no second worker
        assert app.busy
        await pilot.press("space")
        await settle(pilot)
        assert app.last_stop.kind == "paused"
        assert sess.current.iteration > 0
        assert field(app, "current_iteration") == str(sess.current.iteration)
        assert "running" not in app.sub_title
        await press(pilot, "n")                      # usable again after the pause
        assert app.last_stop.kind == "step"


# -- prompts, tables, inspector -------------------------------------------------------------------

@pytest.mark.long
async def test_b_shows_an_invalid_expression_in_the_prompt_then_adds_a_valid_one():
    sess = session()
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")                       # escape cancels
        assert app.query_one(PromptBar).open
        app.query_one("#prompt-input", Input).value = "i == 1"
        await pilot.press("escape")
        await pilot.pause()
        assert not app.query_one(PromptBar).open and not sess.breakpoints.items

        await pilot.press("b")
        await type_text(pilot, "i ==")
        await pilot.press("enter")
        assert app.query_one(PromptBar).open, "an invalid expression must keep the prompt open"
        error = text_of(app.query_one("#prompt-error", Static))
        assert "not a valid expression" in error
        assert not sess.breakpoints.items
        app.query_one("#prompt-input", Input).value = ""
        await type_text(pilot, "i == 2")
        await pilot.press("enter")
        await pilot.pause()
        assert not app.query_one(PromptBar).open
        assert [bp.text for bp in sess.breakpoints.items.values()] == ["i == 2"]
        await open_tab(pilot, "tab-bp")
        table = rows(app.query_one(BreakpointTable))
        assert table == [["1", "i == 2", "any", "yes", "0", "0"]]
        await press(pilot, "c")
        assert app.last_stop.kind == "breakpoint" and sess.current.iteration == 2


async def test_breakpoint_table_toggles_and_deletes():
    sess = session()
    sess.breakpoints.add("i == 2")
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_tab(pilot, "tab-bp")
        table = app.query_one(BreakpointTable)
        table.focus()
        await pilot.pause()
        await pilot.press("t")
        await pilot.pause()
        assert sess.breakpoints.get(1).enabled is False
        assert rows(table)[0][3] == "no"
        await press(pilot, "c")                      # disabled: runs to the end
        assert app.last_stop.kind == "end"
        table.focus()
        await pilot.press("d")
        await pilot.pause()
        assert not sess.breakpoints.items and table.row_count == 0


async def test_w_adds_a_watch_shown_in_the_watches_table():
    sess = session()
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        assert app.query_one(PromptBar).open
        await type_text(pilot, "(")                  # a syntax error stays in the prompt
        await pilot.press("enter")
        assert app.query_one(PromptBar).open
        assert text_of(app.query_one("#prompt-error", Static))
        assert not sess.breakpoints.watches
        app.query_one("#prompt-input", Input).value = ""
        await type_text(pilot, "body_count")
        await pilot.press("enter")
        await pilot.pause()
        assert not app.query_one(PromptBar).open
        await open_tab(pilot, "tab-watch")
        table = app.query_one(WatchTable)
        assert rows(table)[0][:2] == ["1", "body_count"]
        assert "not evaluated" not in rows(table)[0][2]
        await press(pilot, "n", "n")
        assert rows(table)[0][2].endswith("2"), rows(table)
        assert app.last_stop.watches and app.last_stop.watches[0][1] == 2


@pytest.mark.long
async def test_i_inspects_a_value_in_the_inspector_tab():
    sess = session("ti_lstm_forward")
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("i")
        assert app.query_one(PromptBar).open
        await type_text(pilot, "body_H[0, :4]")
        await pilot.press("enter")
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "tab-inspect"
        view = text_of(app.query_one("#inspect-view", Static))
        assert "dtype float32  shape (4,)" in view
        assert "NaN 0  Inf 0" in view
        await press(pilot, "n")                      # the inspector follows the iteration
        assert text_of(app.query_one("#inspect-view", Static)) != view
        await pilot.press("i")                       # an unknown name: the error in the tab
        app.query_one("#prompt-input", Input).value = "no_such_value"
        await pilot.press("enter")
        await pilot.pause()
        assert text_of(app.query_one("#inspect-view", Static)).startswith("no_such_value:")


async def test_help_screen_opens_and_closes_and_q_quits():
    sess = session()
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("?")
        await pilot.pause()
        assert app.screen.has_class("show-help")
        await pilot.press("escape")
        await pilot.pause()
        assert not app.screen.has_class("show-help")
        await press(pilot, "n")                      # keys reach the main screen again
        assert sess.current.iteration == 1
        await pilot.press("q")
        await pilot.pause()
        assert app._exit or not app.is_running
    assert app.return_code == 0


# -- errors and other models ----------------------------------------------------------------------

async def test_a_failing_body_kernel_is_an_error_stop_not_a_crash():
    sess = session("failing_loop")
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "c")
        stop = app.last_stop
        assert stop.kind == "error"
        assert "iteration 2" in stop.reason and "widen" in stop.reason
        state = state_text(app)
        assert "widen" in state and "broadcast" in state
        assert field(app, "current_iteration") == "1"     # the last iteration that completed
        assert any(n.severity == "error" for n in app._notifications)
        app.query_one(TabbedContent).active = "tab-log"
        await pilot.pause()
        log = app.query_one("#log")
        assert any("widen" in line.text for line in log.lines)
        await press(pilot, "n")                      # still an error stop; the UI keeps working
        assert app.last_stop.kind == "error"
        await press(pilot, "N")
        assert sess.current.iteration == 0
        await press(pilot, "r", "n")
        assert sess.current.iteration == 0 and app.last_stop.kind == "step"


async def test_ti_lstm_fills_the_tensor_iterator_panels():
    sess = session("ti_lstm_forward")
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "TensorIterator" in field(app, "loop")
        assert field(app, "trip_count") == "5"
        await press(pilot, "f")
        assert field(app, "current_iteration") == "4"
        assert "every slice" in field(app, "next")
        await open_tab(pilot, "tab-scan")
        scan = rows(app.query_one(ScanTable))
        assert scan[0][:3] == ["Y", "1", "(2, 5, 16)"]
        heat = text_of(app.query_one("#heat", Static))
        assert heat.startswith("Y so far (2, 5, 16)[0, :, :]")
        assert [r[1] for r in rows(app.query_one(BackEdgeTable))] == ["(2, 16)", "(2, 16)"]


async def test_nested_loop_steps_into_the_inner_loop_and_next_skips_it():
    sess = session("nested_loop")
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert sess.current.path == "outer" and sess.current.iteration == 0   # the outermost
        assert app.query_one(GraphView).border_title == "outer"
        await press(pilot, "s")                      # into the inner loop of outer iteration 1
        assert sess.current.path == "outer/inner" and sess.current.outer == (1,)
        assert "outer iterations" in state_text(app)
        assert app.query_one(GraphView).border_title == "outer › inner"
        await press(pilot, "f")                      # the inner loop's last iteration
        assert sess.current.path == "outer/inner" and not sess.current.continues
        await press(pilot, "n")                      # back in the outer loop
        assert sess.current.path == "outer" and sess.current.iteration == 1
        await press(pilot, "n")                      # next at the outer level runs the inner loop
        assert sess.current.path == "outer" and sess.current.iteration == 2


async def test_a_loop_that_never_runs_says_so():
    sess = session("loop_zero_iter_cond_false")
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.last_stop.kind == "end" and sess.current is None
        assert "loop loop ran 0 iterations: the execution condition was false" in state_words(app)
        for key in ("n", "N", "s", "G"):
            await press(pilot, key)
            assert app.last_stop.kind not in ("error", "step", "node"), key
            assert sess.current is None
            assert "loop loop ran 0 iterations: the execution condition was false" in \
                state_words(app)


async def test_small_terminal_80x24_keeps_the_state_panel_and_footer():
    sess = session()
    app = app_for(sess)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        assert app.screen.has_class("narrow")
        screen = app.screen.region
        state = app.query_one(LoopState)
        assert state.region.height >= 5 and screen.contains_region(state.region)
        assert field(app, "iteration") == "1"            # short labels in a narrow panel
        footer = app.query_one(Footer)
        assert footer.region.height == 1 and footer.region.y == 23
        tabs = app.query_one(TabbedContent)
        assert tabs.region.height >= 5
        graph = app.query_one(GraphView)
        assert graph.region.width >= 30 and graph.region.height >= 5


async def test_clicking_a_nested_loop_box_opens_its_body_and_escape_returns():
    sess = session("nested_loop")
    app = app_for(sess)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n", "n", "n")           # stand in the outer loop
        assert sess.current.path == "outer"
        graph = app.query_one(GraphView)
        layers = sess.current.spec.body.graph.layers
        box = next(b for b in graph._layout.boxes if layers[b.id].type == "Loop")
        graph.scroll_to(box.x, box.y, animate=False)
        await pilot.pause()
        x = box.x + 1 - int(graph.scroll_offset.x)
        y = box.y + 1 - int(graph.scroll_offset.y)
        await pilot.click(GraphView, offset=(x, y))
        await pilot.pause()
        assert graph.opened == "outer/inner"
        assert "outer › inner" in str(graph.border_title)
        assert any("inner" in line or "Add" in line for line in graph._lines)
        graph.focus()
        await pilot.press("escape")
        await pilot.pause()
        assert graph.opened is None and str(graph.border_title).startswith("outer")
