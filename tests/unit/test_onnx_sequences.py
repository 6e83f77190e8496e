"""ONNX sequences and optionals as values: a Loop that appends to a list (SequenceEmpty, Loop,
SequenceInsert, ConcatFromSequence, as torch.onnx.export writes one), through the engine, the
debugging session and its breakpoints (``len(seq)``), the report, the UI, .npz files and traces.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import _onnx_models as om  # noqa: E402
from loopdbg.cli import main  # noqa: E402
from loopdbg.debug.report import fmt_value  # noqa: E402
from loopdbg.debug.session import Session  # noqa: E402
from loopdbg.engine import Engine, IterationDone  # noqa: E402
from loopdbg.engine.inputs import load_npz  # noqa: E402
from loopdbg.engine.npz import save_npz  # noqa: E402
from loopdbg.errors import InputError, RunError  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
SEQ_F = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))


def list_appending_loop(steps: int = 4):
    """h = x; for i < M: h = h * 0.5 + i; seq.append(h); y = concat(seq, axis 0)."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["iteration_num"], ["i_f"], to=F),
         helper.make_node("Mul", ["h_in", "half"], ["h_half"]),
         helper.make_node("Add", ["h_half", "i_f"], ["h_out"]),
         helper.make_node("SequenceInsert", ["seq_in", "h_out"], ["seq_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [om.vi("iteration_num", I64, []), om.vi("cond_in", B, []), om.vi("h_in", F, [2]),
         helper.make_value_info("seq_in", SEQ_F)],
        [om.vi("cond_out", B, []), om.vi("h_out", F, [2]), helper.make_value_info("seq_out", SEQ_F)],
        initializer=[helper.make_tensor("half", F, [], [0.5])])
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
             helper.make_node("Loop", ["M", "", "x", "empty"], ["h_final", "seq_final"],
                              body=body, name="appender"),
             helper.make_node("ConcatFromSequence", ["seq_final"], ["y"], axis=0),
             helper.make_node("SequenceLength", ["seq_final"], ["n"])]
    m = om.model(nodes, [om.vi("x", F, [2]), om.vi("M", I64, [])],
                 [om.vi("y", F, None), om.vi("n", I64, []), helper.make_value_info("seq_final", SEQ_F)])
    feeds = {"x": np.array([1.0, -2.0], np.float32), "M": np.array(steps, np.int64)}
    h, want = feeds["x"], []
    for i in range(steps):
        h = h * np.float32(0.5) + np.float32(i)
        want.append(h)
    return m, feeds, want


def test_the_loop_appends_to_its_sequence_and_the_outputs_are_onnxs():
    m, feeds, want = list_appending_loop()
    events = list(Engine(from_proto(m)).run(feeds))
    final = events[-1]
    np.testing.assert_allclose(final.outputs["y"], np.concatenate(want))
    assert int(final.outputs["n"]) == 4
    seq = final.outputs["seq_final"]
    assert isinstance(seq, list) and len(seq) == 4
    for got, w in zip(seq, want):
        np.testing.assert_allclose(got, w)
    iters = [e for e in events if isinstance(e, IterationDone)]
    assert [len(e.inputs["seq_in"]) for e in iters] == [0, 1, 2, 3]
    assert [len(e.back_edges["seq_in"]) for e in iters] == [1, 2, 3, 4]
    # an event keeps its iteration's sequence: the next iteration made a new list
    assert len(iters[0].outputs["seq_out"]) == 1


def test_a_breakpoint_on_the_length_of_a_sequence_and_the_report_showing_it():
    m, feeds, _ = list_appending_loop()
    sess = Session(Engine(from_proto(m)), feeds)
    sess.breakpoints.add("len(seq_out) == 3 and seq_out[-1][0] > 1")
    stop = sess.continue_()
    assert stop.kind == "breakpoint" and stop.event.iteration == 2
    from loopdbg.debug.report import format_stop

    text = format_stop(stop, sess)
    assert "seq_in <- seq_out" in text and "sequence of 3 tensors: [0] float32 (2,)" in text


def test_fmt_value_of_sequences_and_empty_optionals():
    assert fmt_value([]) == "sequence of 0 tensors"
    many = fmt_value([np.zeros(2, np.float32)] * 5)
    assert many.startswith("sequence of 5 tensors: [0] float32 (2,)") and "and 2 more" in many


def test_the_ui_shows_a_sequences_length_and_its_tensors():
    pytest.importorskip("textual")
    from loopdbg.tui.app import LoopdbgApp
    from loopdbg.tui.widgets.valuetext import value_text
    from loopdbg.tui.widgets.inspector import describe
    from loopdbg.tui.widgets.tables import BackEdgeTable, stats

    text = describe([np.array([1.0, 2.0], np.float32), np.array([3.0], np.float32)]).plain
    assert text.startswith("sequence of 2 tensors") and "[1] dtype float32  shape (1,)" in text
    assert describe(None).plain.startswith("empty optional")
    assert value_text([np.zeros(1)] * 3).startswith("seq[3]") and stats([np.zeros(1)]) == ("", "", "")
    m, feeds, _ = list_appending_loop()

    async def drive():
        sess = Session(Engine(from_proto(m)), feeds)
        app = LoopdbgApp(sess, title="appender.onnx")
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(3):
                await app.workers.wait_for_complete()
                await pilot.pause()
            table = app.query_one(BackEdgeTable)
            rows = [table.get_row_at(k) for k in range(table.row_count)]
            seq_row = next(r for r in rows if "seq_in" in str(r[0]))
            assert str(seq_row[1]) == "[1 tensor]" and str(seq_row[2]) == "sequence of float32"

    asyncio.run(asyncio.wait_for(drive(), timeout=60))


def test_a_trace_refuses_a_sequence_value_with_one_sentence(tmp_path, capsys):
    m, feeds, _ = list_appending_loop()
    path = tmp_path / "appender.onnx"
    onnx.save(m, str(path))
    save_npz(tmp_path / "in.npz", feeds)
    rc = main(["run", str(path), str(tmp_path / "in.npz"), "--trace", str(tmp_path / "t.ltrace")])
    err = capsys.readouterr().err
    assert rc != 0 and "Traceback" not in err
    assert "is a sequence of 1 tensor; a trace records tensors only" in err


def test_sequence_inputs_and_outputs_in_npz_files(tmp_path):
    """A sequence input s is s[0], s[1] ... in an .npz (s[] when empty); outputs likewise."""
    body = [helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0, new_axis=1),
            helper.make_node("SequenceAt", ["s", "zero"], ["y_first"]),
            helper.make_node("SequenceInsert", ["s", "y_first"], ["s_out"])]
    m = om.model(body, [helper.make_value_info("s", SEQ_F)],
                 [om.vi("y", F, None), helper.make_value_info("s_out", SEQ_F)],
                 inits=[helper.make_tensor("zero", I64, [], [0])])
    s = [np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)]
    save_npz(tmp_path / "in.npz", {"s": s})
    assert sorted(load_npz(tmp_path / "in.npz")) == ["s[0]", "s[1]"]
    engine = Engine(from_proto(m))
    out = engine.run_to_end(load_npz(tmp_path / "in.npz")).outputs
    np.testing.assert_array_equal(out["y"], np.stack(s))
    save_npz(tmp_path / "out.npz", out)
    back = load_npz(tmp_path / "out.npz")
    assert sorted(back) == ["s_out[0]", "s_out[1]", "s_out[2]", "y"]
    np.testing.assert_array_equal(back["s_out[2]"], s[0])
    save_npz(tmp_path / "empty.npz", {"s": []})
    with pytest.raises(RunError, match="cannot concatenate an empty sequence"):
        engine.run_to_end(load_npz(tmp_path / "empty.npz"))
    with pytest.raises(InputError, match="expects a sequence: give a list of arrays"):
        engine.run_to_end({"s": s[0]})
    with pytest.raises(InputError, match=r"has no input 's' .*; the model expects s sequence of "
                                         r"float32 any shape tensors"):
        engine.run_to_end({})


def test_an_optional_input_may_be_empty():
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2]))
    m = om.model([helper.make_node("OptionalHasElement", ["o"], ["has"])],
                 [helper.make_value_info("o", opt)], [om.vi("has", B, [])], opset=18)
    engine = Engine(from_proto(m))
    assert bool(engine.run_to_end({"o": None}).outputs["has"]) is False
    assert bool(engine.run_to_end({"o": np.zeros(2, np.float32)}).outputs["has"]) is True


@pytest.mark.parametrize("nodes, message", [
    ([helper.make_node("SequenceAt", ["s", "five"], ["y"])],
     "position 5 is out of range for a sequence of length 2"),
    ([helper.make_node("SequenceInsert", ["s", "ints"], ["y"])],
     "cannot put a int64 tensor in a sequence of float32 tensors"),
])
def test_sequence_kernels_name_what_is_wrong(nodes, message):
    m = om.model(nodes, [helper.make_value_info("s", SEQ_F)], [om.vi("y", F, None)],
                 inits=[helper.make_tensor("five", I64, [], [5]),
                        helper.make_tensor("ints", I64, [1], [1])])
    s = [np.zeros(1, np.float32), np.ones(1, np.float32)]
    with pytest.raises(RunError, match=message):
        Engine(from_proto(m)).run_to_end({"s": s})


def test_a_scan_output_that_is_a_sequence_is_refused_by_name():
    m, feeds, _ = list_appending_loop()
    loop = m.graph.node[1]
    body = next(a.g for a in loop.attribute if a.name == "body")
    body.output.append(helper.make_value_info("seq_scan", SEQ_F))
    body.node.append(helper.make_node("Identity", ["seq_out"], ["seq_scan"]))
    loop.output.append("seq_all")
    with pytest.raises(RunError, match="produced a sequence of 1 tensors for concatenated output"):
        Engine(from_proto(m)).run_to_end(feeds)
