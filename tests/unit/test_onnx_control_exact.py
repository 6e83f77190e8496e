"""ONNX Loop/Scan as the operator texts say, where loopdbg was wrong or refused a valid model
(issue 32): carried optionals that start or become empty, Scan-8's scoping, and the element
shape of the scan outputs of a loop that runs no iteration.

Expected values are written from the ONNX text by hand; onnxruntime agrees on each (checked in
tests/reliability/test_fuzz_onnx_semantics.py, which also runs these shapes at random)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

from _onnx_models import B, F, I64, model, vi  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402

OPT_F2 = helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2]))


def opt_vi(name):
    return helper.make_value_info(name, OPT_F2)


def run(m, feeds, **options):
    return Engine(from_proto(m)).run_to_end(feeds, **options)


def both_ways(m, feeds):
    """The compiled loop code and the general one (every node recorded) give the same."""
    fast = run(m, feeds)
    slow = run(m, feeds, record_nodes=True)
    assert fast.outputs.keys() == slow.outputs.keys()
    for k, v in fast.outputs.items():
        w = slow.outputs[k]
        assert (v is None) == (w is None)
        if v is not None:
            np.testing.assert_array_equal(v, w)
    return fast


def carried_optional(start_empty: bool, body_empties: bool):
    """Loop over M carrying an optional o: the scan says, per iteration, whether o holds a value;
    the body keeps o (or makes it empty); the output says whether the final o holds one."""
    nodes = [helper.make_node("OptionalHasElement", ["o_in"], ["has"]),
             helper.make_node("Cast", ["has"], ["has_f"], to=F),
             helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    nodes.append(helper.make_node("Optional", [], ["o_out"], type=OPT_F2.optional_type.elem_type)
                 if body_empties else helper.make_node("Identity", ["o_in"], ["o_out"]))
    body = helper.make_graph(nodes, "body",
                             [vi("i", I64, []), vi("cond_in", B, []), opt_vi("o_in")],
                             [vi("cond_out", B, []), opt_vi("o_out"), vi("has_f", F, [])])
    start = (helper.make_node("Optional", [], ["o0"], type=OPT_F2.optional_type.elem_type)
             if start_empty else helper.make_node("Optional", ["x"], ["o0"]))
    m = model([start, helper.make_node("Loop", ["M", "", "o0"], ["o_fin", "seen"], body=body),
               helper.make_node("OptionalHasElement", ["o_fin"], ["has_fin"])],
              [vi("M", I64, []), vi("x", F, [2])], [vi("has_fin", B, []), vi("seen", F, None),
                                                     opt_vi("o_fin")])
    return m, {"M": np.array(3, np.int64), "x": np.array([1.0, 2.0], np.float32)}


def test_a_carried_optional_may_start_empty():
    m, feeds = carried_optional(start_empty=True, body_empties=False)
    out = both_ways(m, feeds).outputs
    assert out["has_fin"] == np.array(False)
    np.testing.assert_array_equal(out["seen"], np.zeros(3, np.float32))
    assert out["o_fin"] is None


def test_the_body_may_make_a_carried_optional_empty():
    m, feeds = carried_optional(start_empty=False, body_empties=True)
    out = both_ways(m, feeds).outputs
    assert out["has_fin"] == np.array(False)
    np.testing.assert_array_equal(out["seen"], np.array([1, 0, 0], np.float32))
    assert out["o_fin"] is None


def test_an_empty_carried_optional_through_zero_iterations_stays_empty():
    m, feeds = carried_optional(start_empty=True, body_empties=True)
    feeds["M"] = np.array(0, np.int64)
    out = both_ways(m, feeds).outputs
    assert out["o_fin"] is None and out["has_fin"] == np.array(False)
    assert out["seen"].shape == (0,)


def test_an_empty_tensor_input_to_a_carried_tensor_is_still_refused():
    """An omitted carried input ("") of a tensor body input is not an empty optional."""
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Identity", ["v_in"], ["v_out"])], "body",
                             [vi("i", I64, []), vi("cond_in", B, []), vi("v_in", F, [2])],
                             [vi("cond_out", B, []), vi("v_out", F, [2])])
    m = model([helper.make_node("Loop", ["M", "", ""], ["v"], body=body)], [vi("M", I64, [])],
              [vi("v", F, [2])])
    from loopdbg.errors import RunError
    with pytest.raises(RunError, match="not connected"):
        run(m, {"M": np.array(2, np.int64)})


def scan8_of_scalars(nodes):
    """A Scan-8 over x [2, 3] with a state s0 [2]; its body (s_in, e) -> (s_out, y), 0-d."""
    body = helper.make_graph(nodes, "body", [vi("s_in", F, []), vi("e", F, [])],
                             [vi("s_out", F, []), vi("y", F, [])])
    return model([helper.make_node("Scan", ["", "s0", "x"], ["s_fin", "ys"], body=body,
                                   num_scan_inputs=1)],
                 [vi("s0", F, [2]), vi("x", F, [2, 3])],
                 [vi("s_fin", F, None), vi("ys", F, None)], opset=8)


def scan8_reading_a_scanned_input_by_name():
    """Scan-8 over x [2, 3]: the body adds each element and the sum of the WHOLE outer x (read
    by name: the body sees the outer graph's x, not its batch's slice of it)."""
    m = scan8_of_scalars([helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
                          helper.make_node("Add", ["s_in", "e"], ["s1"]),
                          helper.make_node("Add", ["s1", "total"], ["s_out"]),
                          helper.make_node("Identity", ["s_out"], ["y"])])
    return m, {"s0": np.zeros(2, np.float32), "x": np.arange(6, dtype=np.float32).reshape(2, 3)}


def test_a_scan8_body_reads_an_outer_tensor_by_name_not_its_batch_slice():
    m, feeds = scan8_reading_a_scanned_input_by_name()
    out = both_ways(m, feeds).outputs
    total = 15.0                          # 0 + 1 + ... + 5: the whole x, in every batch entry
    want = []
    for row in feeds["x"]:
        s, ys = 0.0, []
        for e in row:
            s = s + e + total
            ys.append(s)
        want.append(ys)
    np.testing.assert_array_equal(out["ys"], np.array(want, np.float32))
    np.testing.assert_array_equal(out["s_fin"], np.array([w[-1] for w in want], np.float32))


def test_a_scan8_body_reading_an_outer_state_input_by_name_gets_the_whole_tensor():
    """Reading the outer s0 (a state input, [2]) by name: rank 1, so Concat on axis 0 works."""
    m = scan8_of_scalars([helper.make_node("Concat", ["s0", "s0"], ["both"], axis=0),
                          helper.make_node("ReduceSum", ["both"], ["t"], keepdims=0),
                          helper.make_node("Add", ["s_in", "t"], ["s_out"]),
                          helper.make_node("Identity", ["e"], ["y"])])
    s0 = np.array([1.0, 2.0], np.float32)
    out = both_ways(m, {"s0": s0, "x": np.zeros((2, 3), np.float32)}).outputs
    np.testing.assert_array_equal(out["s_fin"], s0 + 3 * 6.0)


def zero_trip_loop_scanning_an_initializer():
    """A Loop whose scan output is the body's own initializer w [1], passed straight through
    (the body output declares no shape)."""
    w = helper.make_tensor("w", F, [1], [5.0])
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
                             [vi("i", I64, []), vi("cond_in", B, [])],
                             [vi("cond_out", B, []), vi("w", F, None)], initializer=[w])
    return model([helper.make_node("Loop", ["M", ""], ["ws"], body=body)], [vi("M", I64, [])],
                 [vi("ws", F, None)])


def test_zero_iterations_keep_the_shape_of_an_initializer_passed_through():
    m = zero_trip_loop_scanning_an_initializer()
    fin = run(m, {"M": np.array(0, np.int64)})
    assert fin.outputs["ws"].shape == (0, 1)
    assert not fin.notices


def test_zero_iterations_take_the_element_shape_from_the_run_when_the_file_leaves_it_open():
    """A carried v of no declared shape, scanned as v + v: the run fixes v's shape (2, 3)."""
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Identity", ["v_in"], ["v_out"]),
                              helper.make_node("Add", ["v_in", "v_in"], ["twice"])], "body",
                             [vi("i", I64, []), vi("cond_in", B, []), vi("v_in", F, None)],
                             [vi("cond_out", B, []), vi("v_out", F, None), vi("twice", F, None)])
    m = model([helper.make_node("Loop", ["M", "", "v"], ["v_fin", "all"], body=body)],
              [vi("M", I64, []), vi("v", F, None)], [vi("v_fin", F, None), vi("all", F, None)])
    fin = run(m, {"M": np.array(-1, np.int64), "v": np.ones((2, 3), np.float32)})
    assert fin.outputs["all"].shape == (0, 2, 3)
    assert fin.outputs["all"].dtype == np.float32


@pytest.mark.parametrize("opset", [8, 11])
def test_a_scan_over_a_zero_length_axis_keeps_its_element_shape(opset):
    """The body input has no declared shape; the scanned input's other dims fix it."""
    body = helper.make_graph([helper.make_node("Add", ["s_in", "e"], ["s_out"]),
                              helper.make_node("Identity", ["e"], ["y"])], "body",
                             [vi("s_in", F, None), vi("e", F, None)],
                             [vi("s_out", F, None), vi("y", F, None)])
    ins = ["", "s", "x"] if opset == 8 else ["s", "x"]
    m = model([helper.make_node("Scan", ins, ["s_fin", "ys"], body=body, num_scan_inputs=1)],
              [vi("s", F, None), vi("x", F, None)], [vi("s_fin", F, None), vi("ys", F, None)],
              opset=opset)
    if opset == 8:                          # batch 2, sequences of length 0
        feeds = {"s": np.ones((2, 3), np.float32), "x": np.zeros((2, 0, 3), np.float32)}
        want = (2, 0, 3)
    else:
        feeds = {"s": np.ones(3, np.float32), "x": np.zeros((0, 3), np.float32)}
        want = (0, 3)
    fin = run(m, feeds)
    assert fin.outputs["ys"].shape == want
    np.testing.assert_array_equal(fin.outputs["s_fin"], feeds["s"])


def test_a_declared_body_input_shape_fixes_a_zero_length_scan():
    body = helper.make_graph([helper.make_node("Add", ["e", "e"], ["y"])], "body",
                             [vi("e", F, [2, 2])], [vi("y", F, None)])
    m = model([helper.make_node("Scan", ["x"], ["ys"], body=body, num_scan_inputs=1,
                                scan_output_axes=[1])],
              [vi("x", F, None)], [vi("ys", F, None)], opset=11)
    fin = run(m, {"x": np.zeros((0, 2, 2), np.float32)})
    assert fin.outputs["ys"].shape == (2, 0, 2)


def nonzero_loop():
    """A Loop scanning NonZero(v): its output's length depends on values."""
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Identity", ["v_in"], ["v_out"]),
                              helper.make_node("NonZero", ["v_in"], ["nz"])], "body",
                             [vi("i", I64, []), vi("cond_in", B, []), vi("v_in", F, None)],
                             [vi("cond_out", B, []), vi("v_out", F, None), vi("nz", I64, None)])
    return model([helper.make_node("Loop", ["M", "", "v"], ["v_fin", "nzs"], body=body)],
                 [vi("M", I64, []), vi("v", F, None)],
                 [vi("v_fin", F, None), vi("nzs", I64, None)])


def test_an_element_shape_nothing_fixes_is_said_in_the_notice():
    """NonZero's output length depends on values: zero iterations cannot know it."""
    fin = run(nonzero_loop(), {"M": np.array(0, np.int64), "v": np.ones((2, 3), np.float32)})
    notes = " ".join(n.message for n in fin.notices)
    assert "scan output 'nzs'" in notes and "shape inference" in notes
    assert fin.outputs["nzs"].shape == (0, 2, 0)     # NonZero of a (2, 3): (2, ?) known in part


def test_the_reader_keeps_the_body_only_where_a_scan_shape_is_open():
    from loopdbg.ir.onnx_names import BODY_PROTO

    closed = from_proto(carried_optional(False, False)[0])      # "seen" is declared [] per value
    loop = next(lay for lay in closed.graph.layers.values() if lay.type == "Loop")
    assert BODY_PROTO not in loop.data
    opened = from_proto(nonzero_loop())
    assert [lay.name for _, lay in _all_layers(opened.graph) if BODY_PROTO in lay.data] == ["loop"]


def _all_layers(graph):
    for lay in graph.layers.values():
        yield graph, lay
        for sub in lay.subgraphs:
            yield from _all_layers(sub.graph)


def test_a_scan8_over_a_batch_of_zero_keeps_its_states_and_element_shapes():
    """Batch 0: the states are the initial ones (0, 3), the scan output (0, 2, 3): sequences of
    length 2 of the elements' shape (3,), though no shape is declared anywhere."""
    body = helper.make_graph([helper.make_node("Add", ["s_in", "e"], ["s_out"]),
                              helper.make_node("Identity", ["e"], ["y"])], "body",
                             [vi("s_in", F, None), vi("e", F, None)],
                             [vi("s_out", F, None), vi("y", F, None)])
    m = model([helper.make_node("Scan", ["", "s", "x"], ["s_fin", "ys"], body=body,
                                num_scan_inputs=1)],
              [vi("s", F, None), vi("x", F, None)], [vi("s_fin", F, None), vi("ys", F, None)],
              opset=8)
    fin = run(m, {"s": np.zeros((0, 3), np.float32), "x": np.zeros((0, 2, 3), np.float32)})
    assert fin.outputs["s_fin"].shape == (0, 3)
    assert fin.outputs["ys"].shape == (0, 2, 3)
    assert not fin.notices


def test_explain_does_not_warn_that_a_negative_onnx_m_runs_forever():
    """ONNX's negative M runs no iteration (OpenVINO's runs without limit)."""
    from loopdbg.teach.explain import explain
    from loopdbg.teach.explain_text import format_text

    text = format_text(explain(Engine(from_proto(nonzero_loop()))))
    assert "pseudo" not in text and "run forever" not in text and "nz = NonZero" in text
