"""GraphBuilder, write_ir and shape inference: round trips, the spec examples, OpenVINO as oracle.

* Round trip: a built model written with ``write_ir`` and read back with ``read_ir`` is the same
  model (layers, ports, data, Const values, port maps, back edges); writing is deterministic.
* The builder reproduces the two worked examples of the spec (``tests/data``) layer for layer and
  byte for byte in the ``.bin``, and the engine gives the spec's outputs.
* Oracle (``-m oracle``): OpenVINO reads every written model, its CPU plugin gives the same outputs
  as loopdbg's engine, and the port types and dims the builder declared agree with what OpenVINO
  infers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from loopdbg.engine import Engine
from loopdbg.ir import read_ir
from loopdbg.ir.bin_writer import encode, normalise
from loopdbg.builder import GraphBuilder, format_attr
from loopdbg.ir.model import Graph, Layer
from loopdbg.ops.shape_rules import TensorInfo, broadcast, infer
from loopdbg.ir.xml_writer import to_bytes, write_ir
from loopdbg.oracle import testing as ovt

DATA = Path(__file__).resolve().parents[1] / "data"
F32 = np.float32


# ---------------------------------------------------------------------------------------------
# Models (each returns the model and inputs to run it on)


def for_loop():
    """Loop-5 as a for-loop: trip 5, no body condition; acc += x * i; rows of acc scanned."""
    b = GraphBuilder("for_loop")
    x = b.parameter("x", "f32", [3])
    acc0 = b.parameter("acc0", "f32", [3])
    loop = b.loop("loop", trip=5)
    xs = loop.invariant_input(x, "x_in")
    acc = loop.merged_input(acc0, "acc")
    i = loop.current_iteration("i", "i32", [])
    body = loop.body
    i_f = body.op("Convert", [i], destination_type="f32", name="i_f")
    step = body.op("Multiply", [xs, i_f], name="step", auto_broadcast="numpy")
    acc_new = body.op("Add", [acc, step], name="acc_new", auto_broadcast="numpy")
    loop.back_edge(acc_new, acc)
    row = body.op("Unsqueeze", [acc_new, np.array([0], np.int64)], name="acc_row")
    b.result(loop.output_last(acc_new, name="acc_final"))
    b.result(loop.output_concat(row, axis=0, name="acc_rows"))
    return b.build(), {"x": np.array([1, 2, 3], F32), "acc0": np.array([0.5, 0, -1], F32)}


def while_loop():
    """Unbounded Loop whose body condition is computed: v doubles while sum(v) < 100."""
    b = GraphBuilder("while_loop")
    v0 = b.parameter("v0", "f32", [2, 2])
    loop = b.loop("grow", trip=-1, cond=True)
    v = loop.merged_input(v0, "v")
    k = loop.current_iteration("k", "i64", [1])
    body = loop.body
    v2 = body.op("Multiply", [v, np.float32(2.0)], name="v2")
    total = body.op("ReduceSum", [v2, np.array([0, 1], np.int64)], name="total", keep_dims=False)
    loop.back_edge(v2, v)
    loop.condition(body.op("Less", [total, np.float32(100.0)], name="more"))
    b.result(loop.output_last(v2, name="v_final"))
    b.result(loop.output_concat(k, axis=0, name="steps"))
    return b.build(), {"v0": np.array([[1, 2], [0.5, -1]], F32)}


def ti_lstm():
    """TensorIterator over time (axis 1) backwards with an LSTMCell; h concatenated reversed."""
    rng = np.random.default_rng(7)
    n, t, i, h = 2, 5, 3, 4
    b = GraphBuilder("ti_lstm")
    xs = b.parameter("X", "f32", [n, t, i])
    h0 = b.parameter("h0", "f32", [n, h])
    c0 = b.parameter("c0", "f32", [n, h])
    ti = b.tensor_iterator("ti")
    x_t = ti.sliced_input(xs, "x_t", axis=1, start=-1, end=0, stride=-1)
    h_in = ti.merged_input(h0, "h")
    c_in = ti.merged_input(c0, "c")
    body = ti.body
    x = body.op("Squeeze", [x_t, np.array([1], np.int64)], name="x")
    w = body.const("W", rng.standard_normal((4 * h, i)).astype(F32))
    r = body.const("R", rng.standard_normal((4 * h, h)).astype(F32))
    bias = body.const("B", rng.standard_normal((4 * h,)).astype(F32))
    h_new, c_new = body.op("LSTMCell", [x, h_in, c_in, w, r, bias], name="cell", hidden_size=h)
    ti.back_edge(h_new, h_in)
    ti.back_edge(c_new, c_in)
    h_step = body.op("Unsqueeze", [h_new, np.array([1], np.int64)], name="h_step")
    b.result(ti.output_last(h_new, name="h_last"))
    b.result(ti.output_last(c_new, name="c_last"))
    b.result(ti.output_concat(h_step, axis=1, start=-1, end=0, stride=-1, name="h_seq"))
    return b.build(), {"X": rng.standard_normal((n, t, i)).astype(F32),
                       "h0": rng.standard_normal((n, h)).astype(F32),
                       "c0": np.zeros((n, h), F32)}


def nested_loop():
    """An outer Loop over rows; the inner Loop's trip count is the outer iteration + 1."""
    b = GraphBuilder("nested")
    rows = b.parameter("rows", "f32", [3, 2])
    outer = b.loop("outer", trip=3)
    row = outer.sliced_input(rows, "row", axis=0)
    i = outer.current_iteration("i", "i64", [1])
    ob = outer.body
    inner = ob.loop("inner", trip=ob.op("Add", [i, np.array([1], np.int64)], name="inner_trip"))
    val = inner.merged_input(row, "val")
    doubled = inner.body.op("Multiply", [val, np.float32(2)], name="doubled")
    inner.back_edge(doubled, val)
    powed = inner.output_last(doubled, name="powed")
    b.result(outer.output_concat(powed, axis=0, name="out"))
    return b.build(), {"rows": np.array([[1, 2], [3, 4], [5, 6]], F32)}


def if_model(cond=True):
    """If-8 at the top level: x*2 or x-1."""
    b = GraphBuilder("if_model")
    c = b.parameter("c", "boolean", [])
    x = b.parameter("x", "f32", [2, 3])
    pick = b.if_("pick", c)
    tx, ex = pick.input(x, "x_then", "x_else")
    then = pick.then_body.op("Multiply", [tx, np.float32(2)], name="twice")
    other = pick.else_body.op("Subtract", [ex, np.float32(1)], name="minus_one")
    b.result(pick.output(then, other, name="y"))
    return b.build(), {"c": np.array(cond), "x": np.arange(6, dtype=F32).reshape(2, 3)}


def if_in_loop():
    """An If inside a Loop body, choosing by the parity of the iteration; a While over it."""
    b = GraphBuilder("if_in_loop")
    x0 = b.parameter("x0", "f32", [2])
    loop = b.loop("loop", trip=6)
    x = loop.merged_input(x0, "x")
    i = loop.current_iteration("i", "i64", [])
    body = loop.body
    even = body.op("Equal", [body.op("FloorMod", [i, np.int64(2)]), np.int64(0)], name="even")
    choose = body.if_("choose", even)
    tx, ex = choose.input(x, "x")
    y = choose.output(choose.then_body.op("Add", [tx, np.float32(1)], name="plus"),
                      choose.else_body.op("Multiply", [ex, np.float32(3)], name="times"),
                      name="y")
    loop.back_edge(y, x)
    b.result(loop.output_last(y, name="x_final"))
    return b.build(), {"x0": np.array([1, -2], F32)}


def cells_and_shapes():
    """Ops whose shapes the builder infers, in one graph: cells, MatMul, Reshape, Gather, ..."""
    rng = np.random.default_rng(3)
    b = GraphBuilder("zoo")
    x = b.parameter("x", "f32", [2, 3])
    h = b.parameter("h", "f32", [2, 4])
    idx = b.parameter("idx", "i64", [2])
    w = lambda *s: rng.standard_normal(s).astype(F32)  # noqa: E731
    gru = b.op("GRUCell", [x, h, w(12, 3), w(12, 4), w(12)], name="gru", hidden_size=4)
    rnn = b.op("RNNCell", [x, h, w(4, 3), w(4, 4), w(4)], name="rnn", hidden_size=4,
               activations=["tanh"])
    both = b.op("Concat", [gru, rnn], name="both", axis=-1)                  # [2, 8]
    mm = b.op("MatMul", [both, w(3, 8)], name="mm", transpose_b=True)        # [2, 3]
    mv = b.op("MatMul", [w(3), mm], name="mv", transpose_b=True)             # [2]
    flat = b.op("Reshape", [mm, np.array([0, -1, 1], np.int64)], name="flat", special_zero=True)
    t = b.op("Transpose", [flat, np.array([2, 0, 1], np.int64)], name="t")   # [1, 2, 3]
    g = b.op("Gather", [t, idx, np.int64(2)], name="g", batch_dims=0)        # [1, 2, 2]
    red = b.op("ReduceMean", [g, np.array([-1], np.int64)], name="red", keep_dims=True)
    sq = b.op("Squeeze", [red], name="sq")                                   # [2]
    sm = b.op("Softmax", [mm], name="sm", axis=-1)
    top_v, top_i = b.op("TopK", [sm, np.int64(2)], name="top", axis=1, mode="max",
                        sort="value", index_element_type="i32")
    parts = b.op("Split", [mm, np.int64(1)], name="parts", num_splits=3)
    tiled = b.op("Tile", [parts[1], np.array([1, 4], np.int64)], name="tiled")   # [2, 4]
    sel = b.op("Select", [b.op("Greater", [tiled, np.float32(0)]), tiled, np.float32(0)],
               name="sel")
    rng_ = b.op("Range", [np.int64(0), np.int64(5), np.int64(2)], name="range", output_type="i64")
    shp = b.op("ShapeOf", [sel], name="shp", output_type="i32")
    bc = b.op("Broadcast", [mv, np.array([3, 2], np.int64)], name="bc")
    conv = b.op("Convert", [top_i], name="conv", destination_type="f32")
    for tensor in (sq, top_v, conv, sel, rng_, shp, bc):
        b.result(tensor)
    return b.build(), {"x": rng.standard_normal((2, 3)).astype(F32),
                       "h": rng.standard_normal((2, 4)).astype(F32),
                       "idx": np.array([2, 0], np.int64)}


def dynamic_ti():
    """Dynamic dims: a TensorIterator over the rows of an [?, 3] input plus a [?] bias."""
    b = GraphBuilder("dynamic_ti")
    xs = b.parameter("xs", "f32", [-1, 3])
    bias = b.parameter("bias", "f32", [None])
    ti = b.tensor_iterator("rows")
    x = ti.sliced_input(xs, "x", axis=0)
    y = ti.invariant_input(bias, "b")
    total = ti.merged_input(b.op("ReduceSum", [xs, np.array([0], np.int64)], name="zero",
                                 keep_dims=True), "total")
    s = ti.body.op("Relu", [ti.body.op("Add", [x, y], name="shifted")], name="s")
    ti.back_edge(ti.body.op("Add", [total, s], name="total_new"), total)
    b.result(ti.output_concat(s, axis=0, name="all"))
    b.result(ti.output_last(s, name="last"))
    return b.build(), {"xs": np.array([[1, -2, 3], [-4, 5, -6]], F32),
                       "bias": np.array([0.5], F32)}


def dynamic_rank():
    """A Parameter of dynamic rank (OpenVINO reads it; its CPU plugin cannot compile it)."""
    b = GraphBuilder("dynamic_rank")
    xs = b.parameter("xs", "f32", [2, 3])
    bias = b.parameter("bias", "f32", None)
    ti = b.tensor_iterator("rows")
    x = ti.sliced_input(xs, "x", axis=0)
    y = ti.invariant_input(bias, "b")
    b.result(ti.output_concat(ti.body.op("Add", [x, y], name="s"), axis=0, name="all"))
    return b.build(), {"xs": np.ones((2, 3), F32), "bias": np.float32(0.5)}


MODELS = [for_loop, while_loop, ti_lstm, nested_loop, if_model, if_in_loop, cells_and_shapes,
          dynamic_ti]


# ---------------------------------------------------------------------------------------------
# Structural comparison


def assert_same_graph(got: Graph, want: Graph, where: str = "model", *,
                      extra_names: bool = False) -> None:
    """Layers, ports, data, values, edges and port maps equal. ``extra_names``: ``got`` may
    carry tensor names ``want`` lacks (the builder names every tensor it was given a name for)."""
    assert list(got.layers) == list(want.layers), where
    for lid, layer in got.layers.items():
        assert_same_layer(layer, want.layers[lid], f"{where}/{layer.name}", extra_names)
    assert got.edges == want.edges, where
    assert got.parameters == want.parameters, where
    assert got.results == want.results, where


def assert_same_layer(got: Layer, want: Layer, where: str, extra_names: bool) -> None:
    for attr in ("id", "name", "type", "version", "ir_type"):
        assert getattr(got, attr) == getattr(want, attr), (where, attr)
    assert dict(got.data) == dict(want.data), where
    for mine, theirs in ((got.inputs, want.inputs), (got.outputs, want.outputs)):
        assert len(mine) == len(theirs), where
        for p, q in zip(mine, theirs):
            assert (p.id, p.index, p.precision, p.dims) == (q.id, q.index, q.precision, q.dims), \
                (where, p, q)
            if extra_names:
                assert set(q.names) <= set(p.names), (where, p.names, q.names)
            else:
                assert p.names == q.names, (where, p.names, q.names)
    if want.value is None:
        assert got.value is None, where
    else:
        assert got.value.dtype == want.value.dtype and got.value.shape == want.value.shape, where
        np.testing.assert_array_equal(got.value, want.value, err_msg=where)
    assert [s.role for s in got.subgraphs] == [s.role for s in want.subgraphs], where
    for s, t in zip(got.subgraphs, want.subgraphs):
        assert (s.inputs, s.outputs, s.back_edges) == (t.inputs, t.outputs, t.back_edges), where
        assert_same_graph(s.graph, t.graph, f"{where}/{s.role}", extra_names=extra_names)


# ---------------------------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize("factory", MODELS, ids=lambda f: f.__name__)
def test_written_model_reads_back_identical(tmp_path, factory):
    model, _ = factory()
    xml, bin_ = write_ir(model, tmp_path / "m.xml")
    assert bin_ == tmp_path / "m.bin"
    back = read_ir(xml)
    assert back.ir_version == 11 and not back.warnings
    assert_same_graph(back.graph, model.graph)
    # Writing what was read gives the same files again.
    assert to_bytes(back) == (xml.read_bytes(), bin_.read_bytes())


@pytest.mark.parametrize("factory", MODELS, ids=lambda f: f.__name__)
def test_writing_is_deterministic(factory):
    assert to_bytes(factory()[0]) == to_bytes(factory()[0])


def test_building_twice_gives_the_same_model():
    b = GraphBuilder("twice")
    loop = b.loop("loop", trip=2)                     # build() adds its body condition once
    v = loop.merged_input(b.parameter("x", "f32", [1]), "v")
    loop.back_edge(loop.body.op("Negative", [v], name="neg"), v)
    b.result(loop.output_last(v, name="v"))
    assert to_bytes(b.build()) == to_bytes(b.build())


def test_dynamic_shapes_are_declared_as_such(tmp_path):
    model, _ = dynamic_ti()
    g = model.graph
    assert g.layers[0].data == {"shape": "?,3", "element_type": "f32"}
    assert g.layers[0].outputs[0].dims == (-1, 3)
    assert [p.dims for p in the(model, "TensorIterator").outputs] == [(-1, 3), (1, 3)]
    model, inputs = dynamic_rank()
    g = model.graph
    assert g.layers[1].data == {"shape": "...", "element_type": "f32"}
    assert g.layers[1].outputs[0].dims == ()
    ti = the(model, "TensorIterator")
    assert ti.outputs[0].dims == ()                      # x + bias: rank unknown
    assert ti.body.graph.layers[1].data == {"shape": "...", "element_type": "f32"}
    write_ir(model, tmp_path / "m.xml")
    assert_same_graph(read_ir(tmp_path / "m.xml").graph, model.graph)
    out = Engine(model).run_to_end(inputs).outputs["all"]
    np.testing.assert_array_equal(out, np.full((2, 3), 1.5, F32))


def test_constant_values_must_fit_their_type():
    with pytest.raises(ValueError, match="do not fit"):
        GraphBuilder().const("c", np.array([300]), type="u8")
    with pytest.raises(ValueError, match="do not fit"):
        GraphBuilder().const("c", np.array([8]), type="i4")


@pytest.mark.parametrize("factory", MODELS, ids=lambda f: f.__name__)
def test_built_and_written_models_run_alike(tmp_path, factory):
    model, inputs = factory()
    write_ir(model, tmp_path / "m.xml")
    direct = Engine(model).run_to_end(inputs).outputs
    written = Engine(read_ir(tmp_path / "m.xml")).run_to_end(inputs).outputs
    assert list(direct) == list(written)
    for name in direct:
        np.testing.assert_array_equal(direct[name], written[name])


@pytest.mark.parametrize("et, value", [
    ("f64", [1.5, -2.25]), ("f32", [[1.5, 2], [3, 4]]), ("f16", [0.5, 65504]),
    ("i64", [-(2 ** 40), 7]), ("i32", [-5, 5]), ("i16", [-300]), ("i8", [-128, 127]),
    ("u64", [2 ** 63]), ("u32", [4_000_000_000]), ("u16", [65535]), ("u8", [0, 255]),
    ("boolean", [True, False, True]), ("u1", [1, 0, 1, 1, 0, 0, 0, 1, 1]),
    ("u4", [0, 15, 7]), ("i4", [-8, 7, -1]), ("bf16", [1.0, -2.5, 3.0e38]),
])
def test_const_values_of_every_element_type_round_trip(tmp_path, et, value):
    b = GraphBuilder("consts")
    c = b.const("c", np.array(value), type=et)
    b.result(b.op("Convert", [c], destination_type="f32", name="as_f32"))
    model = b.build()
    write_ir(model, tmp_path / "m.xml")
    layer = read_ir(tmp_path / "m.xml").graph.layers[0]
    assert layer.data["element_type"] == et
    assert layer.value.dtype == model.graph.layers[0].value.dtype
    np.testing.assert_array_equal(layer.value, model.graph.layers[0].value)
    if et not in ("bf16",):
        np.testing.assert_array_equal(layer.value, np.array(value).astype(layer.value.dtype))


def test_packed_layouts_match_openvino():
    """u1: element 0 in the most significant bit; u4/i4: element 0 in the low nibble."""
    assert encode([1, 0, 0, 0, 0, 0, 0, 1, 1], "u1") == bytes([0b10000001, 0b10000000])
    assert encode([1, 2, 3], "u4") == bytes([0x21, 0x03])
    assert encode([-1, 1], "i4") == bytes([0x1F])
    assert encode([True, False], "boolean") == b"\x01\x00"


def test_bf16_rounds_to_nearest_even():
    # 1 + 2**-8 lies half way between two bf16 values: ties go to the even one (1.0).
    values = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5, np.inf], F32)
    np.testing.assert_array_equal(normalise(values, "bf16"), [1.0, 1 + 2 ** -6, -2.5, np.inf])
    assert np.isnan(normalise(np.array([np.nan], F32), "bf16")[0])


def test_identical_blobs_are_stored_once(tmp_path):
    b = GraphBuilder("dedup")
    x = b.parameter("x", "f32", [3])
    loop = b.loop("loop", trip=2)
    v = loop.merged_input(x, "v")
    w = np.array([1, 2, 3], F32)
    v1 = loop.body.op("Add", [v, loop.body.const("w_in", w)], name="v1")
    loop.back_edge(v1, v)
    b.result(b.op("Add", [loop.output_last(v1, name="o"), b.const("w_out", w)], name="y"))
    model = b.build()
    _, bin_ = write_ir(model, tmp_path / "m.xml")
    trip, cond = 8, 1
    assert bin_.stat().st_size == trip + cond + w.nbytes
    back = read_ir(tmp_path / "m.xml")
    outer_w = next(l for l in back.graph.layers.values() if l.name == "w_out")
    inner_w = next(l for l in the(back, "Loop").body.graph.layers.values() if l.name == "w_in")
    assert outer_w.data["offset"] == inner_w.data["offset"] == str(trip + cond)


def test_names_are_escaped_and_commas_kept(tmp_path):
    b = GraphBuilder('odd <"names"> & co')
    x = b.parameter("a,b", "f32", [1])
    b.result(b.op("Relu", [x], name="<relu> & 'more'"), "out,put")
    model = b.build()
    write_ir(model, tmp_path / "m.xml")
    back = read_ir(tmp_path / "m.xml")
    assert_same_graph(back.graph, model.graph)
    assert back.graph.layers[1].name == "<relu> & 'more'"
    assert back.graph.layers[1].outputs[0].names == ("out,put", "<relu> & 'more'")
    assert back.graph.layers[1].ir_type == "ReLU"
    assert Engine(back).run_to_end({"a,b": np.array([-1], F32)}).outputs["out,put"] == 0


def test_control_characters_are_refused():
    b = GraphBuilder("bad")
    b.result(b.op("Relu", [b.parameter("x", "f32", [1])], name="a\x01b"))
    with pytest.raises(ValueError, match="cannot be written as XML"):
        to_bytes(b.build())


# ---------------------------------------------------------------------------------------------
# The worked examples of the spec


def build_loop_example():
    b = GraphBuilder("loop_example")
    seq = b.parameter("seq", "f32", [4, 2])
    acc0 = b.parameter("acc0", "f32", [1, 2])
    trip = b.const("trip_count", np.int64(-1))
    cond = b.const("exec_cond", np.bool_(True))
    loop = b.loop("loop", trip, cond)
    x_t = loop.sliced_input(seq, "x_t", axis=0)
    acc = loop.merged_input(acc0, "acc")
    it = loop.current_iteration("iter", "i64", [1])
    body = loop.body
    acc_new = body.op("Add", [acc, x_t], name="acc_new", auto_broadcast="numpy")
    limit = body.const("limit", np.array([2], np.int64))
    keep = body.op("Less", [it, limit], name="keep_going", auto_broadcast="numpy")
    acc_out = body.result(acc_new, "acc_out")
    cond_out = body.result(keep, "cond_out")
    acc_scan = body.result(acc_new, "acc_scan")
    loop.back_edge(acc_out, acc)
    loop.condition(cond_out)
    b.result(loop.output_last(acc_out, name="acc_final"), "acc_final")
    b.result(loop.output_concat(acc_scan, axis=0, name="acc_seq"), "acc_seq")
    return b.build()


def build_ti_example():
    b = GraphBuilder("ti_example")
    xs = b.parameter("X", "f32", [1, 3, 2])
    h0 = b.parameter("H0", "f32", [1, 2])
    ti = b.tensor_iterator("ti")
    x_t = ti.sliced_input(xs, "x_t", axis=1, start=-1, end=0, stride=-1, part_size=1)
    h = ti.merged_input(h0, "h")
    body = ti.body
    axis1 = body.const("axis1", np.array([1], np.int64))
    x_sq = body.op("Squeeze", [x_t, axis1], name="x_sq")
    decay = body.const("decay", np.float32(0.5))
    h_scaled = body.op("Multiply", [h, decay], name="h_scaled", auto_broadcast="numpy")
    h_new = body.op("Add", [h_scaled, x_sq], name="h_new", auto_broadcast="numpy")
    h_unsq = body.op("Unsqueeze", [h_new, axis1], name="h_unsq")
    h_out = body.result(h_new, "h_out")
    h_seq_out = body.result(h_unsq, "h_seq_out")
    ti.back_edge(h_out, h)
    b.result(ti.output_last(h_out, name="H_last"), "H_last")
    b.result(ti.output_concat(h_seq_out, axis=1, start=-1, end=0, stride=-1, name="H_seq"),
             "H_seq")
    return b.build()


EXAMPLES = [
    ("loop_example", build_loop_example,
     {"seq": np.array([[1, 2], [3, 4], [5, 6], [7, 8]], F32), "acc0": np.zeros((1, 2), F32)},
     {"acc_final": [[9, 12]], "acc_seq": [[1, 2], [4, 6], [9, 12]]}),
    ("ti_example", build_ti_example,
     {"X": np.array([[[1, 10], [2, 20], [3, 30]]], F32), "H0": np.zeros((1, 2), F32)},
     {"H_last": [[2.75, 27.5]], "H_seq": [[[2.75, 27.5], [3.5, 35], [3, 30]]]}),
]


@pytest.mark.parametrize("name, build, inputs, expected", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_builder_reproduces_spec_example(tmp_path, name, build, inputs, expected):
    model = build()
    reference = read_ir(DATA / f"{name}.xml")
    assert_same_graph(model.graph, reference.graph, extra_names=True)
    _, bin_ = write_ir(model, tmp_path / "m.xml")
    assert bin_.read_bytes() == (DATA / f"{name}.bin").read_bytes()
    for m in (model, read_ir(tmp_path / "m.xml")):
        outputs = Engine(m).run_to_end(inputs).outputs
        assert list(outputs) == list(expected)
        for key, want in expected.items():
            np.testing.assert_allclose(outputs[key], np.array(want, F32), rtol=1e-6)
            assert outputs[key].dtype == np.float32


# ---------------------------------------------------------------------------------------------
# Builder behaviour


def test_ids_and_order_follow_creation():
    b = GraphBuilder()
    y = b.parameter("y", "f32", [1])
    x = b.parameter("x", "f32", [1])
    s = b.op("Add", [x, y], name="s")
    b.result(s, "second")
    b.result(y, "first")
    g = b.build().graph
    assert list(g.layers) == [0, 1, 2, 3, 4]
    assert [g.layers[i].name for i in g.parameters] == ["y", "x"]
    assert [g.layers[i].name for i in g.results] == ["second", "first"]
    assert g.layers[2].inputs[0].id == 0 and g.layers[2].outputs[0].id == 2
    assert g.layers[2].outputs[0].names == ("second", "s")


def test_op_defaults_and_attribute_strings():
    b = GraphBuilder()
    x = b.parameter("x", "f32", [2, 3])
    sm = b.op("SoftMax", [x], axis=-1)
    lstm = b.op("LSTMCell", [x] * 3, name="cell", hidden_size=3, outputs=2,
                activations=["sigmoid", "tanh", "tanh"], clip=0.0)
    g = b.build().graph
    layer = g.layers[sm.node]
    assert (layer.type, layer.ir_type, layer.version, layer.name) == \
        ("Softmax", "SoftMax", "opset8", "Softmax_1")
    cell = g.layers[lstm[0].node]
    assert cell.version == "opset4" and len(cell.outputs) == 2
    assert cell.outputs[1].names == ("cell.1",)
    assert dict(cell.data) == {"hidden_size": "3", "activations": "sigmoid, tanh, tanh",
                               "clip": "0.0"}
    assert [format_attr(v) for v in (True, False, 3, 0.1, np.int64(2), [1, 2], np.float32)] == \
        ["true", "false", "3", "0.1", "2", "1, 2", "f32"]


def test_numpy_inputs_become_constants():
    b = GraphBuilder()
    x = b.parameter("x", "i32", [2])
    b.result(b.op("Add", [x, np.array([1, 2], np.int32)], name="y"))
    g = b.build().graph
    const = g.layers[1]
    assert const.type == "Constant" and const.ir_type == "Const"
    assert const.value.dtype == np.int32 and not const.value.flags.writeable
    assert dict(const.data) == {"element_type": "i32", "shape": "2", "offset": "0", "size": "8"}


def the(model, type_: str) -> Layer:
    """The one top-level layer of ``type_``."""
    (layer,) = (l for l in model.graph.layers.values() if l.type == type_)
    return layer


def test_a_for_loop_gets_a_constant_true_condition():
    model, _ = for_loop()
    body = the(model, "Loop").body
    cond = next(m for m in body.outputs if m.purpose == "execution_condition")
    result = body.graph.layers[cond.internal_layer_id]
    src = body.graph.layers[body.graph.producer(result.id, 0)[0]]
    assert src.type == "Constant" and src.value.dtype == np.bool_ and bool(src.value)


def test_one_result_per_body_tensor_is_shared():
    model, _ = while_loop()
    body = the(model, "Loop").body
    v2_results = {m.internal_layer_id for m in body.outputs if m.purpose is None and m.axis is None}
    assert v2_results == {be.from_layer for be in body.back_edges}


def test_declared_ports_of_loop_outputs():
    model, _ = for_loop()
    assert [p.dims for p in the(model, "Loop").outputs] == [(3,), (5, 3)]   # trip 5, no condition
    model, _ = while_loop()
    assert [p.dims for p in the(model, "Loop").outputs] == [(2, 2), (-1,)]
    model, _ = ti_lstm()
    ti = the(model, "TensorIterator")
    assert [p.dims for p in ti.outputs] == [(2, 4), (2, 4), (2, 5, 4)]
    x_t = ti.body.graph.layers[0]
    assert x_t.data == {"shape": "2,1,3", "element_type": "f32"}


def test_back_edge_changing_shape_widens_the_parameter():
    b = GraphBuilder()
    x = b.parameter("x", "f32", [1, 2])
    loop = b.loop("grow", trip=3)
    v = loop.merged_input(x, "v")
    loop.back_edge(loop.body.op("Concat", [v, v], name="vv", axis=0), v)
    b.result(loop.output_last(v, name="v_last"))
    loop = the(b.build(), "Loop")
    assert loop.body.graph.layers[0].data["shape"] == "?,2"
    assert loop.outputs[0].dims == (-1, 2)


def test_zero_iteration_loop_gets_empty_concat_from_declared_dims():
    b = GraphBuilder()
    x = b.parameter("x", "f32", [1, 2])
    loop = b.loop("never", trip=0)
    v = loop.merged_input(x, "v")
    v2 = loop.body.op("Add", [v, v], name="v2")
    loop.back_edge(v2, v)
    b.result(loop.output_last(v2, name="last"))     # a back-edge source: the initial value
    b.result(loop.output_concat(v, axis=0, name="all"))
    model = b.build()
    assert the(model, "Loop").outputs[1].dims == (0, 2)
    out = Engine(model).run_to_end({"x": np.ones((1, 2), F32)}).outputs
    assert out["all"].shape == (0, 2) and out["last"].tolist() == [[1, 1]]


@pytest.mark.parametrize("action, message", [
    (lambda b, loop: loop.body.parameter("p", "f32", [1]), "created by its loop"),
    (lambda b, loop: loop.body.op("Relu", [b.parameter("q", "f32", [1])]), "belongs to graph"),
    (lambda b, loop: b.op("Relu", [b.parameter("x", "f32", [1])], name="x"), "already used"),
    (lambda b, loop: loop.sliced_input(b.parameter("s", "f32", [2]), "s", axis=-1), "axis"),
    (lambda b, loop: loop.back_edge(loop.current_iteration(), loop.invariant_input(
        b.parameter("w", "f32", [1]), "w")), "merged_input"),
    (lambda b, loop: b.op("Const", []), "own method"),
])
def test_builder_refuses_mistakes_at_once(action, message):
    b = GraphBuilder()
    b.parameter("x", "f32", [1])
    loop = b.loop("loop")
    with pytest.raises(ValueError, match=message):
        action(b, loop)


def test_build_refuses_a_merged_input_without_back_edge():
    b = GraphBuilder()
    loop = b.loop("loop", trip=2)
    loop.merged_input(b.parameter("x", "f32", [1]), "acc")
    with pytest.raises(ValueError, match="merged input 'acc' has no back edge"):
        b.build()


def test_build_refuses_a_cycle():
    b = GraphBuilder()
    loop = b.loop("loop", trip=2)
    out = loop.output_last(loop.body.const("one", np.float32(1)), name="o")
    loop.invariant_input(out, "again")
    with pytest.raises(ValueError, match="cycle"):
        b.build()


# ---------------------------------------------------------------------------------------------
# Shape inference rules


def info(type_, *shape):
    return TensorInfo(type_, tuple(shape))


def test_broadcast_with_dynamic_dims():
    assert broadcast((2, 1, 3), (4, 1)) == (2, 4, 3)
    assert broadcast((-1, 3), (1, 3)) == (-1, 3)
    assert broadcast((-1, 3), (5, 1)) == (5, 3)
    assert broadcast((2,), None) is None
    with pytest.raises(ValueError):
        broadcast((2,), (3,))


@pytest.mark.parametrize("op, ins, attrs, consts, want", [
    ("Less", [info("f32", 2, 1), info("f32", 3)], {}, [None, None], info("boolean", 2, 3)),
    ("MatMul", [info("f32", 5, 2, 3), info("f32", 4, 3)], {"transpose_b": "true"}, [None, None],
     info("f32", 5, 2, 4)),
    ("MatMul", [info("f32", 3), info("f32", 3, 4)], {}, [None, None], info("f32", 4)),
    ("Reshape", [info("f32", 2, 3, 4), info("i64", 2)], {"special_zero": "true"},
     [None, np.array([0, -1])], info("f32", 2, 12)),
    ("Unsqueeze", [info("f32", 2, 3), info("i64", 2)], {}, [None, np.array([0, -1])],
     info("f32", 1, 2, 3, 1)),
    ("Squeeze", [info("f32", 1, 3, 1), info("i64", 1)], {}, [None, np.array([-1])],
     info("f32", 1, 3)),
    ("Concat", [info("f32", 2, 3), info("f32", 2, -1)], {"axis": "1"}, [None, None],
     info("f32", 2, -1)),
    ("ReduceSum", [info("i32", 2, 3, 4), info("i64", 1)], {"keep_dims": "false"},
     [None, np.array([1])], info("i32", 2, 4)),
    ("Gather", [info("f32", 5, 6), info("i64", 2, 3), info("i64")], {}, [None, None, np.int64(1)],
     info("f32", 5, 2, 3)),
    ("ShapeOf", [info("f32", 5, 6)], {}, [None], info("i64", 2)),
    ("Convert", [info("f32", 5)], {"destination_type": "boolean"}, [None], info("boolean", 5)),
    ("Mystery", [info("f16", 5, 6)], {}, [None], info("f16", -1, -1)),
    ("Reshape", [info("f32", 2, 3), info("i64", 2)], {}, [None, None], info("f32", -1, -1)),
])
def test_shape_rules(op, ins, attrs, consts, want):
    assert infer(op, ins, attrs, consts, 1) == [want]


def test_cell_outputs_and_unknown_inputs():
    assert infer("LSTMCell", [info("f32", 7, 3)] * 6, {"hidden_size": "5"}, [None] * 6, 2) == \
        [info("f32", 7, 5)] * 2
    assert infer("Add", [TensorInfo(None, None)] * 2, {}, [None] * 2, 1) == \
        [TensorInfo(None, None)]


def test_declared_out_shape_and_type_win():
    b = GraphBuilder()
    x = b.parameter("x", "f32", [2])
    y = b.op("Mystery", [x], name="y", out_shape=[2, 2], out_type="i8")
    b.result(y)
    port = b.build().graph.layers[1].outputs[0]
    assert (port.precision, port.dims) == ("I8", (2, 2))


# ---------------------------------------------------------------------------------------------
# OpenVINO as oracle


def _check_ports(graph: Graph, described: dict, where: str, problems: list[str]) -> None:
    """Every declared port type equals OpenVINO's; every declared static dim equals its dim.

    ``described`` is what OpenVINO's reader made of the model (``loopdbg.oracle``'s describe).
    A port without dims is skipped: in IR it means a scalar or an unknown rank alike.
    """
    from loopdbg.ir import elements

    ov_nodes = described["nodes"]
    for layer in graph.layers.values():
        node = ov_nodes.get(layer.name)
        if node is None:
            problems.append(f"{where}/{layer.name}: not in OpenVINO's model")
            continue
        for k, port in enumerate(layer.outputs):
            ov_type, ov_dims = node["outputs"][k]
            if elements.canonical(port.precision) != elements.canonical(ov_type):
                problems.append(f"{where}/{layer.name}:{k} type {port.precision} vs {ov_type}")
            if ov_dims is None or not port.dims:
                continue
            if len(port.dims) != len(ov_dims) or any(
                    d >= 0 and d != o for d, o in zip(port.dims, ov_dims)):
                problems.append(f"{where}/{layer.name}:{k} dims {port.dims} vs {ov_dims}")
        for sub in layer.subgraphs:
            _check_ports(sub.graph, node["bodies"][sub.role], f"{where}/{layer.name}", problems)


@pytest.mark.oracle
@pytest.mark.parametrize("factory", MODELS + [lambda: if_model(False)],
                         ids=[f.__name__ for f in MODELS] + ["if_model_false"])
def test_openvino_agrees_with_the_engine(tmp_path, factory):
    model, inputs = factory()
    write_ir(model, tmp_path / "m.xml")
    want, names = ovt.run_named(tmp_path / "m.xml", inputs)
    ours = Engine(read_ir(tmp_path / "m.xml")).run_to_end(inputs).outputs
    assert len(ours) == len(want)
    for (name, value), expected, out_names in zip(ours.items(), want, names):
        assert name in out_names, (name, out_names)
        assert value.shape == expected.shape and value.dtype == expected.dtype, name
        if value.dtype.kind == "f":
            np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(value, expected, err_msg=name)


@pytest.mark.oracle
@pytest.mark.parametrize("factory", MODELS, ids=lambda f: f.__name__)
def test_declared_ports_agree_with_openvino(tmp_path, factory):
    model, _ = factory()
    write_ir(model, tmp_path / "m.xml")
    problems: list[str] = []
    _check_ports(model.graph, ovt.describe(tmp_path / "m.xml"), model.graph.name, problems)
    assert not problems


@pytest.mark.oracle
@pytest.mark.parametrize("name, build", [e[:2] for e in EXAMPLES], ids=[e[0] for e in EXAMPLES])
def test_openvino_reads_the_rebuilt_examples(tmp_path, name, build):
    write_ir(build(), tmp_path / "m.xml")
    assert len(ovt.describe(tmp_path / "m.xml")["outputs"]) == 2


@pytest.mark.oracle
def test_openvino_reads_a_dynamic_rank_model(tmp_path):
    write_ir(dynamic_rank()[0], tmp_path / "m.xml")
    assert ovt.describe(tmp_path / "m.xml")["inputs"][1]["rank_dynamic"]


# ---------------------------------------------------------------------------------------------
# Models written by OpenVINO survive a rewrite


CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CASES = sorted(p.name for p in CORPUS.glob("*") if (p / "model.xml").exists())


@pytest.mark.parametrize("case", CASES)
def test_corpus_models_rewrite_to_the_same_model(tmp_path, case):
    from loopdbg.engine.inputs import load_npz

    original = read_ir(CORPUS / case / "model.xml")
    write_ir(original, tmp_path / "m.xml")
    rewritten = read_ir(tmp_path / "m.xml")
    assert_same_graph(rewritten.graph, original.graph)
    outputs = Engine(rewritten).run_to_end(load_npz(CORPUS / case / "inputs.npz")).outputs
    for name, want in load_npz(CORPUS / case / "expected.npz").items():
        np.testing.assert_allclose(outputs[name], want, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.oracle
@pytest.mark.parametrize("case", CASES)
def test_openvino_runs_rewritten_corpus_models(tmp_path, case):
    from loopdbg.engine.inputs import load_npz

    write_ir(read_ir(CORPUS / case / "model.xml"), tmp_path / "m.xml")
    got, names = ovt.run_named(tmp_path / "m.xml", load_npz(CORPUS / case / "inputs.npz"))
    expected = load_npz(CORPUS / case / "expected.npz")
    assert len(got) == len(expected)
    for value, out_names, (name, want) in zip(got, names, expected.items()):
        assert name in out_names
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-5, err_msg=name)
