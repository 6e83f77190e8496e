"""Issue 18 items 3 and 5: small terminals and a UI that the keyboard alone can drive.

Footer that keeps what fits, z to maximise a pane, [ ] for the tabs, enter to open a nested
loop's body, Tab into the Inspector and escape out of it, / to find a node, loopdbg's commands in
the command palette, and a help screen that opens at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from screen import open_tab, settle  # noqa: E402
from textual.widgets import Input, TabbedContent  # noqa: E402
from textual.widgets._footer import FooterKey  # noqa: E402

from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.tui.app import LoopdbgApp  # noqa: E402
from loopdbg.tui.widgets.footer import KeyFooter  # noqa: E402
from loopdbg.tui.widgets.graph import GraphView  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def session(demo: str) -> Session:
    base = ROOT / "loopdbg" / "demos" / demo
    return Session.open(base / "model.xml", base / "inputs.npz")


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


def footer_keys(app) -> list[tuple[str, str]]:
    return [(k.key_display, k.description) for k in app.query_one(KeyFooter).query(FooterKey)]


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (200, 60)])
async def test_the_footer_shows_whole_keys_that_fit_and_always_quit_and_help(size):
    app = LoopdbgApp(session("for_loop"), title="m")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        keys = footer_keys(app)
        shown = {d for _, d in keys}
        assert {"next", "step", "continue", "quit", "help"} <= shown, keys
        footer = app.query_one(KeyFooter)
        right = max(k.region.right for k in footer.query(FooterKey))
        assert right <= size[0], "a key is cut at the right edge"
        if size[0] >= 200:
            assert {"finish", "inspect", "watch", "max", "find", "pause"} <= shown


async def test_z_maximises_the_focused_pane_and_restores():
    app = LoopdbgApp(session("for_loop"), title="m")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        graph = app.query_one(GraphView)
        small = graph.region
        graph.focus()
        await press(pilot, "z")
        assert app.screen.has_class("zoom-graph")
        assert not app.query_one("#side").display and not app.query_one("#tabs").display
        assert graph.region.width > small.width and graph.region.height > small.height
        await press(pilot, "z")
        assert not app.screen.has_class("zoom-graph") and app.query_one("#side").display
        app.query_one("#code-scroll").focus()
        await press(pilot, "z")
        assert app.screen.has_class("zoom-side") and not graph.display
        await press(pilot, "z")


async def test_brackets_switch_the_bottom_tabs():
    app = LoopdbgApp(session("for_loop"), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        tabs = app.query_one(TabbedContent)
        assert tabs.active == "tab-back"
        await press(pilot, "right_square_bracket")
        assert tabs.active == "tab-scan"
        await press(pilot, "left_square_bracket", "left_square_bracket")
        assert tabs.active == "tab-log"


async def test_enter_opens_a_nested_loop_s_body_and_escape_returns():
    sess = session("nested_loop")
    app = LoopdbgApp(sess, title="m")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, "f", "n")                 # the outer loop's first iteration
        assert sess.current.path == "rows_loop"
        graph = app.query_one(GraphView)
        graph.focus()
        assert graph.find("cols_loop") == "cols_loop"  # the cursor on the Loop box
        await press(pilot, "enter")
        assert graph.opened == "rows_loop/cols_loop"
        assert "rows_loop › cols_loop" in str(graph.border_title)
        # the nested body shows the values of its last iteration within this outer iteration
        assert any("= [3]" in line for line in graph._lines), "\n".join(graph._lines)
        await press(pilot, "escape")
        assert graph.opened is None and str(graph.border_title) == "rows_loop"


async def test_arrows_move_the_cursor_and_enter_shows_the_full_value():
    app = LoopdbgApp(session("prefix_sum"), title="m")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        graph = app.query_one(GraphView)
        graph.focus()
        await press(pilot, "down")
        first = graph.selected
        assert first is not None
        await press(pilot, "down")
        assert graph.selected != first
        below = graph._layout.box(graph.selected)
        assert below.y > graph._layout.box(first).y
        name = graph.selected_name
        await press(pilot, "enter")
        assert app.query_one(TabbedContent).active == "tab-inspect"
        assert app.query_one("#inspect-input", Input).value == graph.selected_expression
        view = app.query_one("#inspect-view").content
        assert "dtype" in getattr(view, "plain", str(view)), name


async def test_tab_into_the_inspector_and_escape_gives_the_keys_back():
    sess = session("for_loop")
    app = LoopdbgApp(sess, title="m")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        app.query_one(TabbedContent).active = "tab-inspect"
        await pilot.pause()
        entry = app.query_one("#inspect-input", Input)
        for _ in range(8):                           # Tab walks the focus to the input
            if app.focused is entry:
                break
            await pilot.press("tab")
            await pilot.pause()
        assert app.focused is entry
        await pilot.pause()
        assert ("esc", "leave the input") in footer_keys(app)
        await pilot.press("n")                       # typed, not a command
        assert entry.value == "n" and sess.current.iteration == 0
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is not entry
        await press(pilot, "n")                      # a command again
        assert sess.current.iteration == 1


async def test_slash_finds_a_node_by_name():
    app = LoopdbgApp(session("vandermonde"), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*"next_col", "enter")
        await pilot.pause()
        graph = app.query_one(GraphView)
        assert graph.selected_name == "next_column" and app.focused is graph


async def test_the_palette_holds_loopdbg_s_commands_and_runs_them():
    sess = session("for_loop")
    app = LoopdbgApp(sess, title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"next iteration")
        for _ in range(100):
            await pilot.pause(0.02)
            options = app.screen.query("CommandList")
            if options and options.first().option_count:
                break
        texts = [str(options.first().get_option_at_index(k).prompt)
                 for k in range(options.first().option_count)]
        assert any("next iteration" in t for t in texts), texts
        await pilot.press("enter")
        await settle(pilot)
        assert sess.current.iteration == 1


async def test_help_opens_in_place_and_lists_the_new_keys():
    """The help is a panel of the main screen, not a pushed screen (whose restyle and repaint
    of everything behind took 0.1-0.4 s; tests/benchmark_ui.py times it), and lists the keys."""
    app = LoopdbgApp(session("for_loop"), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen.has_class("show-help") and len(app.screen_stack) == 1
        assert app.query_one("#help").display and not app.query_one("#top").display
        await pilot.press("n")                       # keys do not act unseen behind the help
        await pilot.pause()
        assert not app.busy and app.session.current.iteration == 0
        from loopdbg.tui.screens.help import help_text
        text = help_text().plain
        for key in ("z", "[ / ]", "/", "enter", "ctrl+p", "t[\"i\"]"):
            assert key in text, key
        await pilot.press("escape")
        await pilot.pause()
        assert not app.screen.has_class("show-help") and app.query_one("#top").display


async def test_colon_goes_to_an_iteration_and_says_what_is_wrong():
    sess = session("nested_loop")
    app = LoopdbgApp(sess, title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("colon")
        await pilot.pause()
        await pilot.press(*"cols_loop 2 1", "enter")
        await settle(pilot)
        e = sess.current
        assert (e.path, e.outer, e.iteration) == ("rows_loop/cols_loop", (2,), 1)
        await pilot.press("colon")
        await pilot.pause()
        await pilot.press(*"nowhere 3", "enter")     # refused where it was typed
        await pilot.pause()
        assert "no loop is named" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("colon")
        await pilot.pause()
        await pilot.press("minus", "1", "enter")      # the last of this execution
        await settle(pilot)
        assert (sess.current.iteration, sess.current.continues) == (3, False)


async def test_t_opens_the_timeline_and_its_keys_move_the_session():
    from loopdbg.tui.widgets.timeline import TimelinePanel

    sess = session("nested_loop")
    app = LoopdbgApp(sess, title="m")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "s", "n", "t")          # into the inner loop (it opens on the outer)
        panel = app.query_one(TimelinePanel)
        assert app.focused is panel
        assert app.query_one(TabbedContent).active == TimelinePanel.TAB_ID
        text = str(panel.render())
        assert "rows_loop › cols_loop" in text and "▲" in text
        await press(pilot, "end")
        assert (sess.current.iteration, sess.current.continues) == (3, False)
        await press(pilot, "home")
        assert sess.current.iteration == 0
        await press(pilot, "right")
        assert sess.current.iteration == 1
        await press(pilot, "left")
        assert sess.current.iteration == 0
        await press(pilot, "t")                      # again: back to the graph
        assert app.focused is app.query_one(GraphView)


async def test_the_outputs_tab_shows_the_loop_s_outputs_so_far_then_the_model_s():
    from loopdbg.tui.widgets.outputs import OutputsPanel, OutputTable

    app = LoopdbgApp(session("while_loop"), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await press(pilot, "n", "n")
        app.query_one(TabbedContent).active = OutputsPanel.TAB_ID
        await pilot.pause()
        table = app.query_one(OutputTable)
        rows = [table.get_row_at(k) for k in range(table.row_count)]
        assert [str(r[0]) for r in rows] == ["x_final", "x_trace", "x_final", "x_trace"]
        assert "concatenated so far (3 pieces)" in rows[1][4] and str(rows[1][2]) == "(3,)"
        assert rows[2][4].startswith("not yet")
        await press(pilot, "c")
        rows = [table.get_row_at(k) for k in range(table.row_count)]
        assert [r[4] for r in rows] == ["final"] * 4
        shown = str(app.query_one("#outputs-value-text").render())
        assert "x_final" in shown and "dtype float32" in shown


async def test_p_plots_expressions_over_the_iterations():
    from loopdbg.tui.widgets.plot import PlotPanel

    sess = session("ti_lstm")
    app = LoopdbgApp(sess, title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await press(pilot, "c")
        await pilot.press("p")
        await pilot.pause()
        await pilot.press(*"nosuch(h)", "enter")              # refused where it was typed
        await pilot.pause()
        assert str(app.screen.query_one("#prompt-error").render())
        await pilot.press(*["backspace"] * 9, *"mean(h); norm(c)", "enter")
        await settle(pilot)
        panel = app.query_one(PlotPanel)
        assert panel.expressions == ["mean(h)", "norm(c)"]
        assert app.query_one(TabbedContent).active == PlotPanel.TAB_ID
        assert "iterations held" in str(app.query_one("#plot-note").render())
        await press(pilot, "N")                                # the plot follows the stop
        assert "iterations held" in str(app.query_one("#plot-note").render())


async def test_without_textual_plotext_the_plot_tab_says_how_to_get_it(monkeypatch):
    from loopdbg.tui.widgets import plot

    monkeypatch.setattr(plot, "plot_widget", lambda: None)
    app = LoopdbgApp(session("while_loop"), title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await press(pilot, "n")
        await open_tab(pilot, plot.PlotPanel.TAB_ID)
        app.query_one(plot.PlotPanel).set_expressions(["x_next[0]"])
        await pilot.pause()
        assert "loopdbg[ui-plot]" in str(app.query_one("#plot-note").render())


async def test_the_breakpoint_table_sets_an_ignore_count():
    from loopdbg.tui.widgets.breakpoints import BreakpointTable

    sess = session("while_loop")
    bp = sess.breakpoints.add("i >= 1")
    app = LoopdbgApp(sess, title="m")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await open_tab(pilot, BreakpointTable.TAB_ID)
        app.query_one(BreakpointTable).focus()
        await pilot.pause()
        await pilot.press("I")
        await pilot.pause()
        await pilot.press("backspace", *"x", "enter")            # refused where typed
        await pilot.pause()
        assert "how many" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("backspace", "2", "enter")
        await pilot.pause()
        assert bp.ignore == 2
        await press(pilot, "c")                                    # hits 1 and 2 ignored
        assert sess.current.iteration == 3 and bp.hits == 3


async def test_a_prompt_on_a_short_screen_takes_the_tabs_rows_and_gives_them_back():
    """Below 32 rows an open prompt hides the tabs (their bar and rows go to the prompt); closed,
    or on a screen grown tall again, the tabs are drawn again."""
    from screen import screen_text
    from textual.widgets._tabbed_content import ContentTab
    from loopdbg.tui.screens.prompt import PromptBar

    app = LoopdbgApp(session("for_loop"), title="m")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        label = str(app.query(ContentTab).first().label)

        def tabs_drawn() -> bool:
            return any(label in row for row in screen_text(app))

        assert tabs_drawn()
        await press(pilot, "b")
        assert app.query_one(PromptBar).open and not tabs_drawn()
        await pilot.resize_terminal(160, 48)         # tall again: room for both
        await settle(pilot)
        assert app.query_one(PromptBar).open and tabs_drawn()
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert not tabs_drawn()
        await press(pilot, "escape")
        assert not app.query_one(PromptBar).open and tabs_drawn()
