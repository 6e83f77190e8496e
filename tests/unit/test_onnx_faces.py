"""Every face of loopdbg accepts MODEL.onnx as it accepts model.xml, and speaks the model's names:
the debugging session and its breakpoints, ``loopdbg run`` (with --break and --trace), the trace
commands, ``explain``, ``graph``, ``inputs`` and the terminal UI.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")

from loopdbg.cli import main  # noqa: E402
from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.engine.inputs import load_npz  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "onnx_loop_spec_example"
ONNX = CORPUS / "model.onnx"
INPUTS = CORPUS / "inputs.npz"


def test_a_session_on_the_onnx_model_stops_at_a_breakpoint_on_iteration_num():
    sess = Session.open(ONNX, INPUTS)
    sess.breakpoints.add("iteration_num == 1")
    stop = sess.continue_()
    assert stop.kind == "breakpoint" and stop.event.iteration == 1
    assert int(stop.event.value("iteration_num")) == 1
    assert float(stop.event.value("b_in")) == -3.0
    from loopdbg.engine.recompute import node_values

    assert float(node_values(stop.event)["my_local"]) == 0.0   # a body node, by its tensor name
    assert bool(stop.event.value("keepgoing_out")) is False


@pytest.mark.parametrize("condition, iteration", [
    ("not keepgoing_out", 1), ("b_out > 0", 1), ("user_defined_val < 0", 1),
    ("keepgoing_in and iteration_num > 0", 1), ("a == 3", 0), ("not cond", 1),
    ("my_local == 0", 1)])
def test_breakpoints_speak_the_models_names(condition, iteration):
    sess = Session.open(ONNX, INPUTS)
    sess.breakpoints.add(condition)
    stop = sess.continue_()
    assert stop.kind == "breakpoint" and stop.event.iteration == iteration


def test_loopdbg_run_model_onnx(capsys, tmp_path):
    out = tmp_path / "out.npz"
    assert main(["run", str(ONNX), str(INPUTS), "-o", str(out)]) in (0, None)
    text = capsys.readouterr().out
    assert "loop: 2 iterations" in text and "user_defined_vals" in text
    got = load_npz(out)
    want = load_npz(CORPUS / "onnxruntime_expected.npz")
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def test_loopdbg_run_with_a_break_on_an_onnx_name(capsys):
    assert main(["run", str(ONNX), str(INPUTS), "--break", "iteration_num == 1"]) in (0, None)
    text = capsys.readouterr().out
    assert "breakpoint 1 (iteration_num == 1)" in text
    assert "b_in <- b_out" in text


def test_traces_of_onnx_models_record_and_replay(capsys, tmp_path):
    trace = tmp_path / "run.ldt"
    assert main(["run", str(ONNX), str(INPUTS), "--trace", str(trace)]) in (0, None)
    capsys.readouterr()
    assert main(["trace", "info", str(trace)]) in (0, None)
    info = capsys.readouterr().out
    assert "model.onnx" in info and "loop: 2 iterations" in info
    assert main(["trace", "show", str(trace), "--iteration", "1"]) in (0, None)
    shown = capsys.readouterr().out
    assert "b_in" in shown and "user_defined_val" in shown


def test_explain_and_graph_and_inputs_read_onnx(capsys, tmp_path):
    assert main(["explain", str(ONNX), "--format", "json"]) in (0, None)
    facts = json.loads(capsys.readouterr().out)
    loop = facts["loops"][0]
    names = {i["name"] for i in loop["inputs"]}
    assert {"iteration_num", "keepgoing_in", "b_in", "a"} <= names
    dot = tmp_path / "loop.dot"
    assert main(["graph", str(ONNX), "-o", str(dot)]) in (0, None)
    assert "b_in" in dot.read_text()
    template = tmp_path / "in.npz"
    assert main(["inputs", str(ONNX), "-o", str(template)]) in (0, None)
    assert set(load_npz(template)) == {"b"}


def test_the_terminal_ui_opens_an_onnx_model_and_steps_through_it():
    pytest.importorskip("textual")
    from loopdbg.tui.app import LoopdbgApp
    from loopdbg.tui.widgets.code import PseudoCode
    from loopdbg.tui.widgets.tables import BackEdgeTable

    async def drive():
        sess = Session.open(ONNX, INPUTS)
        app = LoopdbgApp(sess, title="model.onnx")
        async with app.run_test(size=(160, 48)) as pilot:
            while app.busy or app.last_stop.event is None:      # the engine's own thread
                await pilot.pause(0.01)
            assert sess.current.iteration == 0
            code = app.query_one(PseudoCode).render()
            assert "iteration_num" in getattr(code, "plain", str(code))
            table = app.query_one(BackEdgeTable)
            assert "b_in" in str(table.get_row_at(0)[0])
            await pilot.press("n")
            await pilot.pause()
            while app.busy:
                await pilot.pause(0.01)
            assert sess.current.iteration == 1

    asyncio.run(asyncio.wait_for(drive(), timeout=60))


def test_explain_writes_onnx_semantics_in_the_pseudo_code(capsys, tmp_path):
    import onnx

    import _onnx_models as om

    m, _, _ = om.scan_with_axes_and_directions()
    path = tmp_path / "scan.onnx"
    onnx.save(m, str(path))
    assert main(["explain", str(path)]) in (0, None)
    scan = capsys.readouterr().out
    assert "col = x[:, L-1 - i];" in scan                  # the slice loses the scanned axis
    assert "s_out = Add(s_in, col);" in scan               # ONNX op types, not onnx.Add
    assert "seen_all = stack(seen_all, axis=1);" in scan
    assert "stacked on a new axis 1" in scan
    assert main(["explain", str(ONNX)]) in (0, None)
    loop = capsys.readouterr().out
    assert "keepgoing_in   the loop condition" in loop
    assert "my_local = Add(a, b_in);" in loop


def test_an_onnx_scan_is_called_scan_in_explain_and_check(capsys, tmp_path):
    """Issue 30: explain and check --per-iteration speak the model's word for the loop (Scan
    runs as a TensorIterator inside loopdbg), and no OpenVINO pitfall is told of it."""
    import onnx

    from _onnx_models import scan_with_axes_and_directions

    built = scan_with_axes_and_directions()
    model = built[0] if isinstance(built, tuple) else built
    path = tmp_path / "scan.onnx"
    onnx.save(model, path)
    assert main(["explain", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Scan 'scan'\nmode: scan\n")
    assert "TensorIterator" not in out and "tensor-iterator" not in out
    assert "OpenVINO" not in out
    pytest.importorskip("onnxruntime")
    main(["check", str(path), "--per-iteration"])
    out = capsys.readouterr().out
    row = [line.split() for line in out.splitlines() if line.strip().startswith("scan ")]
    assert row and row[0][1] == "Scan", out
