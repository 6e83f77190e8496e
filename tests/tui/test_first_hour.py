"""Issue 30: what a student and an engineer hit in their first hour, checked on what reaches the
terminal (the compositor's rows and their styles, ``screen.py``), not on the widgets' Text."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.widgets import Static  # noqa: E402
from screen import model_files, open_tab, press, rows_of, screen_text, settle, style_at  # noqa: E402

from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.tui.app import LoopdbgApp  # noqa: E402
from loopdbg.tui.panel import Panel, View  # noqa: E402
from loopdbg.tui.screens.prompt import PromptBar, PromptInput  # noqa: E402
from loopdbg.tui.widgets.code import PseudoCode  # noqa: E402

SIZE = (160, 48)


def app_for(case: str, size=SIZE, **options) -> LoopdbgApp:
    xml, npz = model_files(case)
    return LoopdbgApp(Session.open(xml, npz, **options), title=f"{case}/model.xml")


def lit_rows(app, widget) -> list[str]:
    """The rows of ``widget`` drawn in reverse video (at their first non-blank cell)."""
    out = []
    for _, strip in rows_of(app, widget):
        text = strip.text
        x = len(text) - len(text.lstrip())
        if text.strip() and style_at(strip, x).reverse:
            out.append(text.strip())
    return out


# -- 1. the current pseudo-code line is lit on screen ----------------------------------------------

async def test_the_current_pseudocode_line_is_drawn_in_reverse_video():
    app = app_for("while_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s", "s")
        stop = app.session.stop
        assert stop.node is not None
        lit = lit_rows(app, app.query_one(PseudoCode))
        assert len(lit) == 1, lit
        assert stop.node.layer.name in lit[0]


async def test_every_panel_keeps_its_message_loop_after_a_stop():
    """A panel that set Textual's own ``_running`` (a state panel's 'running…' text was kept
    under that name) stopped its widget's message loop: in a terminal the state then never
    repainted after the first stop, while the widget's text was right."""
    from textual.widget import Widget

    app = app_for("while_loop")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "n", "n")
        stopped = [type(w).__name__ for w in app.query(Widget) if not w.is_running]
        assert not stopped, stopped


# -- 2. no path ends the UI with a traceback -------------------------------------------------------

async def test_the_plot_extra_installed_while_the_ui_is_open_does_not_crash_it(monkeypatch):
    from loopdbg.tui.widgets import plot

    monkeypatch.setattr(plot, "plot_widget", lambda: None)          # not installed at compose
    app = app_for("while_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_tab(pilot, "tab-plot")                           # the tab is built now
        monkeypatch.setattr(plot, "plot_widget", lambda: Static)    # "installed" since
        app.query_one(plot.PlotPanel).set_expressions(["x_next[0]"])
        await press(pilot, "n")
        assert "start loopdbg again" in str(app.query_one("#plot-note").render())
        assert app.is_running


class Exploding(Panel, Static):
    """A panel whose show fails after the first stop, and whose key handler fails."""

    TAB, TAB_ID, ID = "Boom", "tab-boom", "boom"
    can_focus = True

    def show(self, view: View) -> None:
        if view.event is not None and view.event.iteration >= 1:
            raise RuntimeError("the panel broke")

    def on_key(self, event) -> None:
        if event.key == "x":
            raise KeyError("x key broke")


async def test_a_panel_that_raises_is_shown_in_the_log_and_the_ui_stays_up(monkeypatch):
    import loopdbg.tui.app as app_module

    monkeypatch.setattr(app_module.LoopdbgApp, "RAISE_INTERNAL_ERRORS", False)
    monkeypatch.setattr(app_module, "PANELS", (*app_module.PANELS, Exploding))
    app = app_for("while_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_tab(pilot, "tab-boom")
        await press(pilot, "n", "n")                     # show raises at iterations 1 and 2
        assert app.is_running and app.session.current.iteration == 2
        app.query_one(Exploding).focus()
        await press(pilot, "x", "n")                     # its key handler raises
        assert app.is_running and app.session.current.iteration == 3
        app.query_one("#tabs").active = "tab-log"
        await pilot.pause()
        assert "x key broke" in "\n".join(screen_text(app))     # the Log's newest lines
        log = "\n".join(strip.text for strip in app.query_one("#log").lines)
        assert "internal error in Exploding: RuntimeError: the panel broke" in log
        assert "KeyError" in log and "x key broke" in log
        assert log.count("the panel broke") >= 1 and len(app.internal_errors) >= 3
        # the other panels still follow the stops
        assert "3" in app.query_one("#state").render().plain
    assert app.return_code in (0, None)


# -- 3. dotted PyTorch names, Tab completion in every prompt ---------------------------------------

@pytest.mark.long
async def test_a_torchscript_name_with_a_dot_is_a_breakpoint_and_a_value_to_inspect():
    app = app_for("tacotron_decoder")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "b", *"norm(h1.13) > 0", "enter")
        assert not app.query_one(PromptBar).open
        assert [bp.text for bp in app.session.breakpoints.items.values()] == ["norm(h1.13) > 0"]
        await press(pilot, "i", *"h1.13.shape", "enter")
        inspected = app.query_one("#inspect-view").render().plain
        assert "[ 1 24]" in inspected           # its shape, (1, 24)


def clear(app) -> None:
    app.query_one(PromptInput).value = ""


async def prompt_after_tab(pilot, key: str, typed: str, tabs: int = 1):
    """Open the prompt of ``key``, clear it, type ``typed`` and press Tab."""
    app = pilot.app
    await press(pilot, key)
    clear(app)
    await pilot.press(*typed)
    for _ in range(tabs):
        await press(pilot, "tab")
    bar = app.query_one(PromptBar)
    assert bar.open and app.focused is app.query_one(PromptInput)   # Tab stayed in the prompt
    rows = "\n".join(strip.text for _, strip in rows_of(app, bar))
    return app.query_one(PromptInput).value, rows


@pytest.mark.long
async def test_tab_completes_names_and_functions_in_every_expression_prompt():
    app = app_for("while_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key in ("b", "w", "i", "p"):
            value, _ = await prompt_after_tab(pilot, key, "kee")
            assert value.endswith("keep_going"), key
            await press(pilot, "escape")
            value, rows = await prompt_after_tab(pilot, key, "x")  # several: listed
            assert value.endswith("x")
            assert "x_next" in rows and "x_next/result" in rows
            await press(pilot, *"_n", "tab")
            assert app.query_one(PromptInput).value.endswith("x_next")
            clear(app)
            await press(pilot, *"nor", "tab")
            assert app.query_one(PromptInput).value == "norm("
            await press(pilot, "escape")


async def test_tab_completes_loop_paths_at_the_go_to_prompt_and_names_at_find():
    app = app_for("nested_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        loops = list(app.session.engine.loops)
        inner = [p for p in loops if "/" in p][0]
        value, _ = await prompt_after_tab(pilot, "colon", inner[:len(inner) - 2])
        assert value == inner + " "
        await press(pilot, "escape")
        value, rows = await prompt_after_tab(pilot, "slash", "zzz")
        assert "nothing to complete" in rows


async def test_a_click_outside_the_prompt_gives_it_up():
    app = app_for("while_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "b", *"i ==")
        await pilot.click("#graph")
        await settle(pilot)
        assert not app.query_one(PromptBar).open
        assert "i ==" not in "\n".join(screen_text(app))
        await press(pilot, "n")                       # keys go to the debugger again
        assert app.session.current.iteration == 1


# -- 4. 80x24: the state, the current pseudo-code line, the keys a first hour needs ----------------

def footer_text(app) -> str:
    return screen_text(app)[-1]


async def test_at_80x24_the_current_code_line_and_the_first_hour_keys_are_on_screen():
    app = app_for("while_loop")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "s", "s")
        code = app.query_one(PseudoCode)
        assert code.parent.region.height >= 3
        lit = lit_rows(app, code)
        assert lit and app.session.stop.node.layer.name in lit[0]
        footer = footer_text(app)
        for key in ("n next", "s step", "c continue", "b break", "f finish", "i inspect",
                    "z max", "q quit", "? help"):
            assert key in footer, footer
        await press(pilot, "n", "n")                  # the lit line follows, still in view
        assert lit_rows(app, code)


async def test_at_80x24_long_names_are_cut_in_the_middle_and_the_trip_count_is_one_line():
    app = app_for("tacotron_decoder")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        state = [strip.text.strip(" │") for _, strip in rows_of(app, app.query_one("#state"))]
        assert any(row.startswith("trips") and row.endswith("no limit (while)") for row in state)
    app = app_for("crnn_text")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        state = [strip.text.strip(" │") for _, strip in rows_of(app, app.query_one("#state"))]
        loop = [row for row in state if row.startswith("loop ")]
        assert len(loop) == 1 and "…" in loop[0] and loop[0].endswith("/while"), state


# -- 6. made-up inputs are announced; a failure on them points at `loopdbg inputs --shape` ---------

async def test_random_inputs_are_announced_and_a_failure_on_them_suggests_inputs_shape():
    xml, _ = model_files("failing_loop")
    app = LoopdbgApp(Session.open(xml), title="failing_loop/model.xml")   # no inputs: random
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "random inputs" in screen_text(app)[0]                   # the header says so
        await press(pilot, "c")
        assert app.session.stop.kind == "error"
        app.query_one("#tabs").active = "tab-log"
        await pilot.pause()
        log = " ".join(" ".join(strip.text for strip in app.query_one("#log").lines).split())
        assert "loopdbg made up random ones" in log
        assert "loopdbg inputs failing_loop/model.xml --shape" in log


def test_loopdbg_run_on_random_inputs_that_fail_suggests_inputs_shape(tmp_path, capsys):
    import shutil

    from loopdbg.cli import main

    xml, _ = model_files("failing_loop")
    for f in ("model.xml", "model.bin"):
        shutil.copy(xml.with_name(f), tmp_path / f)
    assert main(["run", str(tmp_path / "model.xml")]) != 0
    err = capsys.readouterr().err
    assert "Hint: the inputs are random data" in err and "--shape" in err


async def test_a_model_whose_control_flow_is_an_if_says_so_shows_the_branch_and_its_outputs():
    xml, npz = model_files("if_only")
    app = LoopdbgApp(Session.open(xml, npz), title="if_only/model.onnx")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        state = rows_of(app, app.query_one("#state"))
        text = " ".join(" ".join(strip.text for _, strip in state).split())
        assert "this model has no loop" in text and "its control flow is 1 If node" in text
        assert "If sign_gate: condition true, ran the then branch" in text
        assert app.query_one("#tabs").active == "tab-outputs"
        stop = app.session.stop
        await press(pilot, "n")                     # nothing to step: the key does nothing
        assert app.session.stop is stop and not app.busy


# -- 9. smaller items -------------------------------------------------------------------------------

async def test_while_continue_runs_the_state_says_running_not_the_old_stop():
    import asyncio

    app = app_for("endless_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        for _ in range(300):
            await asyncio.sleep(0.02)
            await pilot.pause()
            first = rows_of(app, app.query_one("#state"))[0][1].text.strip()
            if first.startswith("running continue"):
                break
        assert first.startswith("running continue"), first
        await pilot.press("space")
        await settle(pilot)
        assert rows_of(app, app.query_one("#state"))[0][1].text.strip().startswith("stopped: paused")


async def test_go_to_an_iteration_past_the_end_of_the_loop_says_there_is_none():
    app = app_for("while_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "colon", *"99", "enter")
        state = " ".join(strip.text for _, strip in rows_of(app, app.query_one("#state")))
        assert "there is no iteration 99" in " ".join(state.split())


async def test_p_after_t_brings_the_plot_in_front_of_the_timeline():
    app = app_for("while_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n", "t")
        assert app.query_one("#tabs").active == "tab-timeline"
        await press(pilot, "p", *"x_next[0]", "enter")
        await pilot.pause()
        assert app.query_one("#tabs").active == "tab-plot"


async def test_stepping_node_by_node_keeps_the_values_of_the_nodes_run_so_far():
    app = app_for("while_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        node = app.session.stop.node
        assert node is not None
        rows = [strip.text for _, strip in rows_of(app, app.query_one(PseudoCode))]
        line = [r for r in rows if f"{node.layer.name} = " in r]
        assert line and "//" in line[0], rows


async def test_restart_tells_what_the_ifs_chose_in_the_new_run_only():
    xml, npz = model_files("if_only")
    app = LoopdbgApp(Session.open(xml, npz), title="if_only/model.onnx")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await press(pilot, "r", "c")               # run again: c runs a model without loops
        state = rows_of(app, app.query_one("#state"))
        text = " ".join(" ".join(strip.text for _, strip in state).split())
        assert "If sign_gate: condition true, ran the then branch" in text


def box_values(app) -> dict[str, str]:
    """The value line of each box of the graph as drawn on screen: ``{box name: text}``."""
    graph = app.query_one("#graph")
    rows = screen_text(app)
    region = graph.content_region
    out = {}
    for box in graph._layout.boxes:
        y = region.y + box.y + 1 + len(box.lines) - int(graph.scroll_offset.y)
        x = region.x + box.x + graph._dx - int(graph.scroll_offset.x)
        if region.y <= y < region.bottom and x >= region.x and x + box.w <= region.right:
            inner = rows[y][x + 1: x + box.w - 1].strip()
            if inner.startswith("= "):
                out[box.name] = inner[2:]
    return out


async def test_neighbouring_boxes_show_floats_at_one_precision():
    """Every box of a picture gives its floats the same number of significant digits (no
    ``[0.653846 1.49671 0.29]`` in one box next to ``-0.3813 … 0.09159`` in the next), as the
    pseudo-code and the back-edge table do."""
    app = app_for("ti_lstm")
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        app.query_one("#graph").focus()
        await press(pilot, "n", "n", "v")                 # wide boxes
        shown = box_values(app)
        assert len(shown) >= 5, shown
        # one box has room for three digits only: all of them show three (the old code: six
        # in one, four in another)
        digits = {d for text in shown.values() if "…" not in text.replace(" … ", "")
                  for d in significant(text)}
        assert max(digits) == 3, shown
        code = "\n".join(strip.text for _, strip in rows_of(app, app.query_one(PseudoCode)))
        assert max(significant(code)) == 4, code


def significant(text: str) -> list[int]:
    """The significant digits of each decimal number in ``text``."""
    import re

    return [len(num.split("e")[0].lstrip("-").replace(".", "").lstrip("0"))
            for num in re.findall(r"-?\d+\.\d+(?:e[-+]\d+)?", text)]


async def test_a_nested_loop_opens_on_the_outermost_loop_and_s_steps_into_the_inner_one():
    app = app_for("nested_loop")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        title = rows_of(app, app.query_one("#graph"))[0][1].text
        state = rows_of(app, app.query_one("#state"))[0][1].text
        assert "rows_loop" in title and "cols_loop" not in title, title
        assert "in loop rows_loop at iteration 0" in state, state
        assert "cols_loop" in "\n".join(strip.text for _, strip in
                                        rows_of(app, app.query_one(PseudoCode)))
        await press(pilot, "s")                          # into the inner loop of iteration 1
        title = rows_of(app, app.query_one("#graph"))[0][1].text
        assert "rows_loop › cols_loop" in title
        assert app.session.current.outer == (1,) and app.session.current.iteration == 0


async def test_find_counts_its_matches_centres_the_hit_and_goes_on_to_the_next():
    app = app_for("tacotron_decoder")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        graph = app.query_one("#graph")

        def seen() -> tuple[str, int]:
            """(the graph's bottom border, the screen row of the selected box's name)."""
            rows = rows_of(app, graph)
            name = graph._layout.box(graph.selected).name
            at = [y for y, strip in rows if name in strip.text]
            return rows[-1][1].text, at[0] if at else -1

        await press(pilot, "slash", *"matmul", "enter")
        border, row = seen()
        assert "find 'matmul': match 1 of 11" in border, border
        middle = graph.content_region.y + graph.content_region.height // 2
        assert abs(row - middle) <= 2, (row, middle)        # in the middle, not at an edge
        first = graph.selected
        await press(pilot, "slash", "enter")                # / Enter again: the next match
        border, row = seen()
        assert "match 2 of 11" in border and graph.selected != first
        assert abs(row - middle) <= 2, (row, middle)
        await press(pilot, "f3", "f3")
        assert "match 4 of 11" in seen()[0]
        await press(pilot, "shift+f3")
        assert "match 3 of 11" in seen()[0]
        assert app.session.current.iteration == 0           # n/N still step the debugger
        footer = screen_text(app)[-1]
        assert "n next" in footer


async def test_enter_on_an_if_opens_the_branch_taken_o_the_other_escape_comes_back():
    app = app_for("tacotron_decoder")
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        graph = app.query_one("#graph")
        await press(pilot, "slash", *"If_1", "enter")
        if_box = graph.selected
        await press(pilot, "enter")
        rows = [strip.text for _, strip in rows_of(app, graph)]
        assert "Loop › prim::If/If_1: then branch" in rows[0], rows[0]
        assert "taken (condition true) · o: else · Esc: back" in rows[-1], rows[-1]
        shown = box_values(app)
        assert shown["aten::__not__/LogicalNot_1"] == "true", shown     # its values at the stop
        await press(pilot, "o")
        rows = [strip.text for _, strip in rows_of(app, graph)]
        assert "If_1: else branch" in rows[0]
        assert "not taken (condition true): what it would give · o: then" in rows[-1]
        assert "LogicalNot" not in "\n".join(rows) and box_values(app) == {"Result_35349": "false"}
        await press(pilot, "escape")
        rows = [strip.text for _, strip in rows_of(app, graph)]
        assert "If_1" not in rows[0] and graph.selected == if_box          # back on the If
        await press(pilot, "enter", "n")            # the branch follows the stops
        rows = [strip.text for _, strip in rows_of(app, graph)]
        assert "If_1: then branch" in rows[0] and "taken (condition true)" in rows[-1]
        # recomputing values does not count as the model's Ifs choosing again
        taken = [spec.taken for spec in app.session.engine.ifs.values()
                 if spec.layer.name == "prim::If/If_1"][0]
        assert sum(taken.values()) == app.session.current.iteration + 1, taken


async def test_a_model_whose_control_flow_is_if_only_draws_its_graph_and_enter_opens_the_if():
    xml, npz = model_files("if_only")
    app = LoopdbgApp(Session.open(xml, npz), title="if_only/model.onnx")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        graph = app.query_one("#graph")
        assert "model (no loop; Enter on an If opens its branch)" in rows_of(app, graph)[0][1].text
        shown = box_values(app)
        assert shown["s"] == "3." and shown["pos"] == "true", shown       # the run's values
        graph.focus()
        await press(pilot, "slash", *"sign_gate", "enter", "enter")
        rows = [strip.text for _, strip in rows_of(app, graph)]
        assert "model › sign_gate: then branch" in rows[0], rows[0]
        assert "taken (condition true)" in rows[-1]
        assert "[-1. -2.]" in " ".join(box_values(app).values())       # y = -x, the then branch
        await press(pilot, "o")
        assert "not taken (condition true)" in rows_of(app, graph)[-1][1].text
        await press(pilot, "escape")
        assert "›" not in rows_of(app, graph)[0][1].text
