"""Issue 18 items 2, 4 and 6: values that can be read, ONNX bodies labelled as ONNX means them,
and the edges of a run (after the loop, no iteration at all).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("textual")

from screen import settle  # noqa: E402
from textual.widgets import TabbedContent  # noqa: E402

from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.tui.app import LoopdbgApp  # noqa: E402
from loopdbg.tui.widgets.graph import GraphView  # noqa: E402
from loopdbg.tui.widgets.valuetext import value_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEMOS = ROOT / "loopdbg" / "demos"
ONNX = ROOT / "tests" / "corpus" / "onnx_loop_spec_example"


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


def text(widget) -> str:
    content = widget.content
    return getattr(content, "plain", str(content))


# -- item 2: values --------------------------------------------------------------------------

@pytest.mark.parametrize("value", [np.float32(1.75), np.arange(4, dtype=np.float32) / 3,
                                   np.linspace(-1.2345, 7.5, 1024).reshape(256, 4),
                                   np.array([np.nan, 1.0]), np.zeros((0, 3)), np.array([True])])
@pytest.mark.parametrize("width", [8, 12, 20, 36])
def test_a_value_fits_its_room_and_is_never_cut_twice(value, width):
    shown = value_text(value, width)
    assert len(shown) <= width
    assert "……" not in shown and shown.count("…") <= 1


def test_a_value_says_more_where_there_is_room():
    a = np.array([[-0.53125, 0.25, 0.125, 0.90625]], np.float32)
    assert value_text(a, 12) == "(1,4)"
    assert value_text(a, 24) == "(1,4) -0.5312 … 0.9062"
    assert value_text(a, 40) == "(1,4) [-0.5312 0.25 0.125 0.9062]"   # as many digits as the range


async def test_boxes_fill_a_wide_pane_and_v_switches_their_size():
    sess = Session.open(DEMOS / "ti_lstm" / "model.xml", DEMOS / "ti_lstm" / "inputs.npz")
    widths = {}
    for size in ((80, 24), (200, 60)):
        app = LoopdbgApp(sess, title="m")
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            graph = app.query_one(GraphView)
            widths[size] = graph._layout.value_width
            assert graph._layout.width <= max(graph.size.width, 80) or size == (80, 24)
            if size == (200, 60):
                pane = graph.size.width
                assert graph._layout.width > pane * 0.6, "a wide pane left mostly empty"
                assert any("… " in line or "[" in line for line in graph._lines)
                before = graph._layout
                graph.focus()
                await press(pilot, "v")                     # fit -> wide
                assert graph.detail == "wide" and graph._layout is not before
                await press(pilot, "v", "v")                # compact, fit again
                assert graph.detail == "fit"
        sess.restart()
    assert widths[(200, 60)] > widths[(80, 24)]


# -- item 4: ONNX ----------------------------------------------------------------------------

async def test_an_onnx_body_shows_every_value_and_onnx_words():
    pytest.importorskip("onnx")
    sess = Session.open(ONNX / "model.onnx", ONNX / "inputs.npz")
    app = LoopdbgApp(sess, title="model.onnx")
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        graph = app.query_one(GraphView)
        layout = graph._layout
        picture = "\n".join(graph._lines)
        for box in layout.boxes:                     # no empty value line (Result = node names)
            if box.kind in ("op", "result"):
                row = graph._lines[box.y + 1 + len(box.lines)]
                inner = row[box.x + graph._dx + 2: box.x + graph._dx + box.w - 2]
                assert inner.strip().startswith("="), (box.name, inner)
        assert "stack new axis 0" in picture and "concat axis" not in picture
        assert "body condition" in picture and "exec condition" not in picture
        assert "onnx.Add" not in picture and "─ Add ─" in picture


# -- item 6: outputs and the edges of a run ---------------------------------------------------

async def test_after_the_run_the_loop_outputs_named_in_the_code_can_be_inspected():
    sess = Session.open(DEMOS / "while_loop" / "model.xml", DEMOS / "while_loop" / "inputs.npz")
    app = LoopdbgApp(sess, title="m")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        app.show_value("x_final")                  # before the loop ended: says when it will be
        await pilot.pause()
        assert "it has a value once the loop has ended" in text(app.query_one("#inspect-view"))
        await press(pilot, "c")
        assert app.last_stop.kind == "end"
        app.show_value("x_final")
        await pilot.pause()
        shown = text(app.query_one("#inspect-view"))
        assert "dtype float32" in shown, shown
        final = sess.finished.outputs["x_final"]
        assert f"min {float(np.min(final)):.6g}" in shown


async def test_a_loop_that_runs_no_iteration_shows_its_code_notice_and_outputs():
    sess = Session.open(DEMOS / "zero_trip" / "model.xml", DEMOS / "zero_trip" / "inputs.npz")
    app = LoopdbgApp(sess, title="m")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        code = text(app.query_one("#code"))
        assert "no loop has started" not in code
        assert "0 iterations of loop never" in code and "acc_final = acc;" in code
        state = " ".join(text(app.query_one("#state")).split())
        assert "loop never ran 0 iterations" in state
        assert "notice: loop 'never' ran zero iterations" in state      # not only in the Log
        assert "ran no iteration" in str(app.query_one(GraphView).border_title)
        app.show_value("acc_final")                  # the outputs: the initial value of acc
        await pilot.pause()
        assert app.query_one(TabbedContent).active == "tab-inspect"
        assert "[10. 20.]" in text(app.query_one("#inspect-view"))


def test_the_heat_map_says_what_it_shows_and_labels_its_axes():
    from loopdbg.tui.widgets.heatmap import heatmap_text

    big = heatmap_text("x", np.arange(262144, dtype=np.float32), width=60, height=10).plain
    lines = big.splitlines()
    assert lines[0].startswith("x (262144,), row by row, each cell the mean of")
    assert lines[1].split()[0] == "0" and lines[2].split()[0] == "0"      # axes from 0
    assert lines[-1].split()[0] == "0." or lines[-1].split()[0] == "720"  # the scale
    small = heatmap_text("H", np.ones((1, 4, 4)), width=60, height=10).plain.splitlines()
    assert small[0] == "H (1, 4, 4)[0, :, :]"
    assert small[1].split() == ["0", "1", "2", "3"] and len(small) == 7
    assert all(len(line) <= 60 for line in big.splitlines())


async def test_the_1_mib_state_gets_a_heat_map():
    from loopdbg.builder import GraphBuilder
    from loopdbg.engine import Engine

    n = 262144                                       # a 1 MiB float32 state
    bld = GraphBuilder("state_bench")
    x0 = bld.parameter("x0", "f32", [n])
    loop = bld.loop("decay", trip=5, cond=True)
    x = loop.merged_input(x0, "x")
    half = loop.body.op("Multiply", [x, np.array(0.5, np.float32)], name="half")
    nxt = loop.body.op("Add", [half, np.array(1.0, np.float32)], name="x_next")
    loop.back_edge(nxt, x)
    loop.condition(loop.body.const("true", np.array(True)))
    bld.result(loop.output_last(nxt, name="x_final"))
    model, inputs = bld.build(), {"x0": np.ones(n, np.float32)}
    app = LoopdbgApp(Session(Engine(model), inputs), title="m")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        app.query_one(TabbedContent).active = "tab-scan"
        await pilot.pause()
        assert text(app.query_one("#heat")).startswith("x (carried to the next iteration)")


def test_values_side_by_side_share_the_precision_of_the_most_cramped():
    from loopdbg.tui.widgets.valuetext import side_by_side

    a = np.array([[0.6538461, 1.4967142, 0.29]], np.float32)
    b = np.array([[-0.38127, 0.0915912, 0.5, 0.25]], np.float32)
    alone = side_by_side({"a": (a, 40), "b": (b, 40)})
    assert alone == {"a": "(1,3) [0.6538 1.497 0.29]", "b": "(1,4) [-0.3813 0.09159 0.5 0.25]"}
    shared = side_by_side({"a": (a, 40), "b": (b, 18), "n": (np.arange(3), 12)})
    assert shared == {"a": "(1,3) [0.654 1.5 0.29]", "b": "(1,4) -0.381 … 0.5",
                      "n": "[0 1 2]"}
    cramped = side_by_side({"a": (a, 40), "b": (b, 14)})     # alone below three digits
    assert cramped["a"] == "(1,3) [0.654 1.5 0.29]" and cramped["b"] == "(1,4) -0.4…0.5"
