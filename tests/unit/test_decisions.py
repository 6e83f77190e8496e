"""Every rule of docs/semantics.md, each checked on a small IR written here by hand.

The ``Net`` helper below only saves typing: it writes the XML boilerplate (layers, ports, edges,
port maps, back edges) and the .bin bytes (``np.array(...).tobytes()``) exactly as a person would
write them; no loopdbg code is involved in producing the IR. Tests marked ``oracle`` run the same
files through OpenVINO's CPU plugin where docs/semantics.md says it agrees with loopdbg.
"""

from __future__ import annotations

import itertools
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from loopdbg.engine import Engine, IterationDone, LoopFinished, LoopStarted, Notice, RunFinished
from loopdbg.errors import ModelError, RunError
from loopdbg.ir.xml_reader import read_ir
from loopdbg.oracle import testing as ovt

DATA = Path(__file__).resolve().parent.parent / "data"

# ----------------------------------------------------------------------------------------------
# Writing IR by hand, with less typing

PRECISION = {"f32": "FP32", "i32": "I32", "i64": "I64", "boolean": "BOOL"}
ELEMENT = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32", np.dtype(np.int64): "i64",
           np.dtype(np.bool_): "boolean"}
INT = {"i32": np.int32, "i64": np.int64}
BROADCASTING = {"Add", "Subtract", "Multiply", "Less", "Greater", "Equal"}


@dataclass(frozen=True)
class T:
    """An output port of a layer already written: what an edge starts from."""

    layer: int
    port: int
    shape: tuple
    et: str


def _dims(shape) -> str:
    return "".join(f"<dim>{d}</dim>" for d in shape)


def _port(pid: int, et: str, shape=(), names: str = "") -> str:
    names = f' names="{names}"' if names else ""
    return f'<port id="{pid}" precision="{PRECISION[et]}"{names}>{_dims(shape)}</port>'


def _attrs(d: dict) -> str:
    return "".join(f' {k}="{v}"' for k, v in d.items())


def pin(ext: int, param: T, **attrs) -> str:
    """A port_map input entry: external input ``ext`` feeds body Parameter ``param``."""
    return f'<input{_attrs({"external_port_id": ext, "internal_layer_id": param.layer, **attrs})}/>'


def pout(ext: int, result: int, **attrs) -> str:
    """A port_map output entry: body Result ``result`` gives external output ``ext``."""
    return f'<output{_attrs({"external_port_id": ext, "internal_layer_id": result, **attrs})}/>'


class Net:
    """A graph being written: the top-level <net> or a <body>; all share one .bin."""

    def __init__(self, blob: bytearray | None = None):
        self.blob = bytearray() if blob is None else blob
        self.layers: list[str] = []
        self.edges: list[tuple[int, int, int, int]] = []
        self.ids = itertools.count()

    def body(self) -> "Net":
        return Net(self.blob)

    def _layer(self, type_, name, ins, outs, *, version="opset1", data=None, inner="") -> list[T]:
        lid = next(self.ids)
        name = name or f"{type_.lower()}{lid}"
        xml = [f'<layer id="{lid}" name="{name}" type="{type_}" version="{version}">']
        if data:
            xml.append(f"<data{_attrs(data)}/>")
        xml.append(inner)
        if ins:
            xml.append("<input>" + "".join(_port(k, t.et, t.shape) if t else
                                           _port(k, "boolean" if k == 1 else "i64")
                                           for k, t in enumerate(ins)) + "</input>")
            for k, t in enumerate(ins):
                if t is not None:          # None: a declared input left unconnected
                    self.edges.append((t.layer, t.port, lid, k))
        if outs:
            xml.append("<output>" + "".join(_port(len(ins) + k, et, shape, names)
                                            for k, (shape, et, names) in enumerate(outs))
                       + "</output>")
        xml.append("</layer>")
        self.layers.append("\n".join(x for x in xml if x))
        return [T(lid, len(ins) + k, tuple(shape), et) for k, (shape, et, _) in enumerate(outs)]

    def param(self, name: str, shape=(), et: str = "f32") -> T:
        text = ",".join("?" if d < 0 else str(d) for d in shape)
        return self._layer("Parameter", name, [], [(shape, et, name)],
                           data={"shape": text, "element_type": et})[0]

    def const(self, value, et: str | None = None, name: str | None = None) -> T:
        arr = np.asarray(value)
        et = et or ELEMENT[arr.dtype]
        raw = arr.tobytes()
        offset = len(self.blob)
        self.blob += raw
        return self._layer("Const", name, [], [(arr.shape, et, "")],
                           data={"element_type": et, "shape": ",".join(map(str, arr.shape)),
                                 "offset": offset, "size": len(raw)})[0]

    def op(self, type_: str, *ins: T, shape=None, et=None, data=None, version="opset1",
           name=None) -> T:
        if data is None and type_ in BROADCASTING:
            data = {"auto_broadcast": "numpy"}
        shape = ins[0].shape if shape is None else tuple(shape)
        return self._layer(type_, name, list(ins), [(shape, et or ins[0].et, "")],
                           version=version, data=data)[0]

    def result(self, t: T, name: str | None = None) -> int:
        lid = next(self.ids)
        self.layers.append(f'<layer id="{lid}" name="{name or f"result{lid}"}" type="Result" '
                           f'version="opset1"><input>{_port(0, t.et, t.shape)}</input></layer>')
        self.edges.append((t.layer, t.port, lid, 0))
        return lid

    def loop(self, ins, body: "Net", port_map, back_edges=(), outs=(), *, type_="Loop",
             name="loop") -> list[T]:
        """``outs``: (shape, element type) of each output; ``back_edges``: (Result, Parameter)."""
        version = "opset5" if type_ == "Loop" else "opset1"
        edges = "".join(f'<edge from-layer="{r}" to-layer="{p.layer}"/>' for r, p in back_edges)
        inner = (f"<port_map>{''.join(port_map)}</port_map><back_edges>{edges}</back_edges>"
                 + body.xml("body"))
        return self._layer(type_, name, list(ins), [(s, et, "") for s, et in outs],
                           version=version, inner=inner)

    def if_(self, cond: T, ins, then: "Net", then_map, other: "Net", else_map, outs,
            name="if") -> list[T]:
        inner = (then.xml("then_body") + other.xml("else_body")
                 + f"<then_port_map>{''.join(then_map)}</then_port_map>"
                 + f"<else_port_map>{''.join(else_map)}</else_port_map>")
        return self._layer("If", name, [cond, *ins], [(s, et, "") for s, et in outs],
                           version="opset8", inner=inner)

    def xml(self, tag: str = "net") -> str:
        edges = "\n".join(f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>'
                          for a, b, c, d in self.edges)
        body = f"<layers>\n{chr(10).join(self.layers)}\n</layers>\n<edges>\n{edges}\n</edges>"
        if tag == "net":
            return f'<?xml version="1.0"?>\n<net name="test" version="11">\n{body}\n</net>\n'
        return f"<{tag}>\n{body}\n</{tag}>"

    def save(self, directory: Path, name: str = "model", edit=None) -> Path:
        text = self.xml()
        if edit is not None:
            text = edit(text)
        xml = directory / f"{name}.xml"
        xml.write_text(text)
        (directory / f"{name}.bin").write_bytes(bytes(self.blob))
        return xml


# ----------------------------------------------------------------------------------------------
# Running


def run(xml: Path, inputs: dict, **options) -> list:
    return list(Engine(read_ir(xml)).run(inputs, **options))


def final(events) -> RunFinished:
    assert isinstance(events[-1], RunFinished)
    return events[-1]


def of(events, cls) -> list:
    return [e for e in events if isinstance(e, cls)]


def notices(events, rule: int) -> list[Notice]:
    return [e for e in of(events, Notice) if e.rule == rule]


def finished(events, path: str = "loop") -> LoopFinished:
    (done,) = [e for e in of(events, LoopFinished) if e.path == path]
    return done


def run_error(xml: Path, inputs: dict, **options) -> RunError:
    with pytest.raises(RunError) as info:
        run(xml, inputs, **options)
    return info.value


def assert_outputs(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for name, value in want.items():
        value = np.asarray(value, dtype=got[name].dtype if np.asarray(value).size == 0 else None)
        assert got[name].shape == value.shape, (name, got[name].shape, value.shape)
        np.testing.assert_allclose(got[name], value, rtol=1e-6, atol=1e-6, err_msg=name)


def f32(*values) -> np.ndarray:
    return np.array(values, dtype=np.float32)


# ----------------------------------------------------------------------------------------------
# The counter Loop, used by the rules on trip count, condition, current_iteration and zero trips.
#
#   acc_new = acc + 1          (acc: merged, back edge from acc_new)
#   twice   = acc_new * 2      (a last-value output with no back edge)
#   cond    = iter < limit     (or a constant)
# outputs: acc (last value), acc_seq (concat axis 0), twice (last value), iters (concat axis 0)


def counter_loop(tmp_path, *, trip=("i64", ()), cond=("boolean", ()), cur=("i64", ()),
                 limit=None, body_cond=True, cur_back_edge=False, acc_shape=(1,)) -> Path:
    g = Net()
    inputs = []
    inputs.append(g.param("trip", trip[1], trip[0]) if trip else None)
    inputs.append(g.param("exec", cond[1], "boolean") if cond else None)
    acc0 = g.param("acc0", acc_shape)
    b = g.body()
    acc = b.param("acc", acc_shape)
    it = b.param("iter", cur[1], cur[0]) if cur else None
    acc_new = b.op("Add", acc, b.const(np.float32(1)))
    twice = b.op("Multiply", acc_new, b.const(np.float32(2)))
    if limit is not None:
        c = b.op("Less", it, b.const(np.array(limit, dtype=INT[cur[0]])), et="boolean")
    else:
        c = b.const(np.array(body_cond))
    r_acc, r_seq = b.result(acc_new, "acc_out"), b.result(acc_new, "acc_seq_out")
    r_twice, r_cond = b.result(twice, "twice_out"), b.result(c, "cond_out")
    port_map = [pin(2, acc), pout(3, r_acc), pout(4, r_seq, axis=0), pout(5, r_twice)]
    outs = [(acc_shape, "f32"), ((-1,) + acc_shape[1:], "f32"), (acc_shape, "f32")]
    back = [(r_acc, acc)]
    if it is not None:
        if cur_back_edge:              # iter_next = iter + 2 feeds the counter Parameter
            r_iter = b.result(b.op("Add", it, b.const(np.array(2, INT[cur[0]]))), "iter_next")
            back.append((r_iter, it))
        else:
            r_iter = b.result(it, "iter_out")
        port_map.append(pout(6, r_iter, axis=0))
        outs.append(((-1,), cur[0]))
        port_map.append(pin(-1, it, purpose="current_iteration"))
    port_map.append(pout(-1, r_cond, purpose="execution_condition"))
    outputs = g.loop(inputs + [acc0], b, port_map, back, outs)
    for t, name in zip(outputs, ["acc", "acc_seq", "twice", "iters"]):
        g.result(t, name)
    return g.save(tmp_path)


def counter_inputs(trip=3, trip_et=np.int64, trip_shape=(), exec_=True, exec_shape=()):
    return {"trip": np.full(trip_shape, trip, dtype=trip_et),
            "exec": np.full(exec_shape, exec_, dtype=np.bool_),
            "acc0": f32(0)}


# ----------------------------------------------------------------------------------------------
# Rule 1: trip count


@pytest.mark.parametrize("et,dtype", [("i32", np.int32), ("i64", np.int64)])
@pytest.mark.parametrize("shape", [(), (1,)])
def test_rule1_trip_count_i32_i64_scalar_or_one_element(tmp_path, et, dtype, shape):
    xml = counter_loop(tmp_path, trip=(et, shape))
    events = run(xml, counter_inputs(3, dtype, shape))
    out = final(events).outputs
    assert_outputs(out, {"acc": f32(3), "acc_seq": f32(1, 2, 3), "twice": f32(6),
                         "iters": np.array([0, 1, 2])})
    assert of(events, LoopStarted)[0].trip_count == 3
    assert finished(events).reason == "trip_count"
    assert finished(events).iterations == 3


@pytest.mark.parametrize("trip", [-1, -7])
def test_rule1_negative_trip_count_means_no_limit(tmp_path, trip):
    xml = counter_loop(tmp_path, limit=4)
    events = run(xml, counter_inputs(trip))
    assert of(events, LoopStarted)[0].trip_count is None
    done = finished(events)
    assert (done.iterations, done.reason) == (5, "condition")
    assert_outputs(final(events).outputs, {"acc": f32(5), "acc_seq": f32(1, 2, 3, 4, 5),
                                           "twice": f32(10), "iters": np.arange(5)})


def test_rule1_float_trip_count_is_an_error(tmp_path):
    xml = counter_loop(tmp_path, trip=("f32", ()))
    err = run_error(xml, {**counter_inputs(), "trip": np.float32(3)})
    assert "'loop' (Loop)" in str(err) and "i32 or i64" in str(err)


def test_rule1_trip_count_with_two_elements_is_an_error_naming_the_layer(tmp_path):
    xml = counter_loop(tmp_path, trip=("i64", (2,)))
    err = run_error(xml, counter_inputs(3, np.int64, (2,)))
    assert "'loop' (Loop)" in str(err) and "trip count" in str(err)


# ----------------------------------------------------------------------------------------------
# Rule 2: execution condition


@pytest.mark.parametrize("shape", [(), (1,)])
def test_rule2_false_execution_condition_runs_zero_iterations(tmp_path, shape):
    xml = counter_loop(tmp_path, cond=("boolean", shape))
    events = run(xml, counter_inputs(3, exec_=False, exec_shape=shape))
    assert not of(events, IterationDone)
    assert of(events, LoopStarted)[0].execution_condition is False
    assert (finished(events).iterations, finished(events).reason) == (0, "execution_condition")


def test_rule2_one_element_true_execution_condition_runs(tmp_path):
    xml = counter_loop(tmp_path, cond=("boolean", (1,)))
    events = run(xml, counter_inputs(3, exec_shape=(1,)))
    assert finished(events).iterations == 3


def test_rule2_execution_condition_with_two_elements_is_an_error(tmp_path):
    xml = counter_loop(tmp_path, cond=("boolean", (2,)))
    err = run_error(xml, counter_inputs(3, exec_shape=(2,)))
    assert "'loop' (Loop)" in str(err) and "execution condition" in str(err)


def test_rule2_execution_condition_gates_only_the_first_iteration(tmp_path):
    # Body condition constant false: the first iteration still runs (do-while), then it stops.
    xml = counter_loop(tmp_path, body_cond=False)
    events = run(xml, counter_inputs(5))
    done = finished(events)
    assert (done.iterations, done.reason) == (1, "condition")
    assert_outputs(final(events).outputs, {"acc": f32(1), "acc_seq": f32(1), "twice": f32(2),
                                           "iters": np.array([0])})
    # Body condition constant true: the execution condition is not consulted again.
    xml = counter_loop(tmp_path, body_cond=True)
    assert finished(run(xml, counter_inputs(5))).iterations == 5


# ----------------------------------------------------------------------------------------------
# Rule 3: the iteration whose condition is false counts (the §8.1 example)


def test_rule3_iteration_with_false_condition_counts_loop_example():
    events = run(DATA / "loop_example.xml",
                 {"seq": f32([1, 2], [3, 4], [5, 6], [7, 8]), "acc0": f32([0, 0])})
    out = final(events).outputs
    assert_outputs(out, {"acc_final": f32([9, 12]), "acc_seq": f32([1, 2], [4, 6], [9, 12])})
    iters = of(events, IterationDone)
    assert [e.cond for e in iters] == [True, True, False]
    assert [e.continues for e in iters] == [True, True, False]
    np.testing.assert_array_equal(iters[-1].scan_slices["acc_seq"], f32([9, 12]))
    np.testing.assert_array_equal(iters[-1].sliced_inputs["x_t"], f32([5, 6]))
    np.testing.assert_array_equal(iters[1].partial("acc_seq"), f32([1, 2], [4, 6]))
    np.testing.assert_array_equal(iters[1].back_edges["acc"], f32([4, 6]))
    np.testing.assert_array_equal(iters[2].inputs["iter"], np.array([2]))
    done = finished(events)
    assert (done.iterations, done.reason) == (3, "condition")


# ----------------------------------------------------------------------------------------------
# Rule 4: current_iteration


@pytest.mark.parametrize("et,dtype", [("i32", np.int32), ("i64", np.int64)])
@pytest.mark.parametrize("shape", [(), (1,)])
def test_rule4_current_iteration_dtype_and_rank(tmp_path, et, dtype, shape):
    xml = counter_loop(tmp_path, cur=(et, shape))
    events = run(xml, counter_inputs(3))
    for k, e in enumerate(of(events, IterationDone)):
        value = e.inputs["iter"]
        assert value.dtype == dtype and value.shape == shape and int(value.reshape(())) == k
    iters = final(events).outputs["iters"]
    assert iters.dtype == dtype
    np.testing.assert_array_equal(iters, [0, 1, 2])


def test_rule4_current_iteration_may_be_absent(tmp_path):
    xml = counter_loop(tmp_path, cur=None)
    out = final(run(xml, counter_inputs(4))).outputs
    assert_outputs(out, {"acc": f32(4), "acc_seq": f32(1, 2, 3, 4), "twice": f32(8)})


def test_rule4_back_edge_into_current_iteration_wins(tmp_path):
    xml = counter_loop(tmp_path, cur_back_edge=True)
    events = run(xml, counter_inputs(4))
    assert [int(e.inputs["iter"]) for e in of(events, IterationDone)] == [0, 2, 4, 6]
    np.testing.assert_array_equal(final(events).outputs["iters"], [2, 4, 6, 8])


# ----------------------------------------------------------------------------------------------
# Rule 5: back edges


def swap_loop(tmp_path) -> Path:
    """a' = b, b' = a (+0): only right if both back edges read the same iteration's Results."""
    g = Net()
    trip, exec_ = g.const(np.int64(3)), g.const(np.bool_(True))
    a0, b0 = g.param("a0", (1,)), g.param("b0", (1,))
    b = g.body()
    a, bb = b.param("a", (1,)), b.param("b", (1,))
    zero = b.const(np.float32(0))
    ra, rb = b.result(b.op("Add", bb, zero), "a_next"), b.result(b.op("Add", a, zero), "b_next")
    rc = b.result(b.const(np.bool_(True)), "cond")
    outs = g.loop([trip, exec_, a0, b0], b,
                  [pin(2, a), pin(3, bb), pout(4, ra), pout(5, rb), pout(6, ra, axis=0),
                   pout(-1, rc, purpose="execution_condition")],
                  [(ra, a), (rb, bb)], [((1,), "f32"), ((1,), "f32"), ((3,), "f32")])
    for t, n in zip(outs, ["a", "b", "a_seq"]):
        g.result(t, n)
    return g.save(tmp_path)


def test_rule5_back_edges_are_applied_all_at_once(tmp_path):
    out = final(run(swap_loop(tmp_path), {"a0": f32(1), "b0": f32(2)})).outputs
    assert_outputs(out, {"a": f32(2), "b": f32(1), "a_seq": f32(2, 1, 2)})


def growing_loop(tmp_path, *, scan_unsqueezed=False, scan=False) -> Path:
    """s' = Concat(s, [1]): the state grows by one element per iteration."""
    g = Net()
    trip, exec_ = g.const(np.int64(3)), g.const(np.bool_(True))
    s0 = g.param("s0", (1,))
    b = g.body()
    s = b.param("s", (-1,))
    grown = b.op("Concat", s, b.const(f32(1)), shape=(-1,), data={"axis": 0})
    rs = b.result(grown, "s_next")
    rc = b.result(b.const(np.bool_(True)), "cond")
    port_map = [pin(2, s), pout(3, rs), pout(-1, rc, purpose="execution_condition")]
    outs = [((-1,), "f32")]
    if scan or scan_unsqueezed:
        piece = b.op("Unsqueeze", grown, b.const(np.int64([0])), shape=(1, -1)) \
            if scan_unsqueezed else grown
        port_map.append(pout(4, b.result(piece, "piece"), axis=0))
        outs.append(((-1,) * len(piece.shape), "f32"))
    outputs = g.loop([trip, exec_, s0], b, port_map, [(rs, s)], outs)
    for t, n in zip(outputs, ["s", "seq"]):
        g.result(t, n)
    return g.save(tmp_path)


def test_rule5_back_edge_may_change_shape(tmp_path):
    events = run(growing_loop(tmp_path), {"s0": f32(0)})
    assert [e.back_edges["s"].shape for e in of(events, IterationDone)] == [(2,), (3,), (4,)]
    assert_outputs(final(events).outputs, {"s": f32(0, 1, 1, 1)})


def test_rule5_back_edge_dtype_change_is_an_error_naming_the_edge(tmp_path):
    g = Net()
    trip, exec_ = g.const(np.int64(3)), g.const(np.bool_(True))
    x0 = g.param("x0", (1,), "i32")
    b = g.body()
    x = b.param("x", (1,), "i32")
    as_float = b.op("Convert", x, et="f32", data={"destination_type": "f32"})
    rx = b.result(as_float, "x_out")
    rc = b.result(b.const(np.bool_(True)), "cond")
    (out,) = g.loop([trip, exec_, x0], b, [pin(2, x), pout(3, rx),
                                          pout(-1, rc, purpose="execution_condition")],
                    [(rx, x)], [((1,), "f32")])
    g.result(out, "x")
    err = run_error(g.save(tmp_path), {"x0": np.array([1], np.int32)})
    assert "'x_out'" in str(err) and "'x'" in str(err) and "dtype" in str(err)
    assert err.loop_path == "loop" and err.iteration == 0


# ----------------------------------------------------------------------------------------------
# Rule 6: zero iterations


def zero_trip_loop(tmp_path) -> Path:
    """Outputs: merged (initial value), concats (static / dynamic declared dims), a plain one."""
    g = Net()
    trip, exec_ = g.param("trip", (), "i64"), g.param("exec", (), "boolean")
    acc0 = g.param("acc0", (1, 2))
    b = g.body()
    acc = b.param("acc", (1, 2))
    acc_new = b.op("Add", acc, b.const(np.float32(1)))
    r_acc = b.result(acc_new, "acc_out")
    r_dyn = b.result(b.op("Multiply", acc_new, b.const(np.float32(3)), shape=(-1, 2)), "dyn_out")
    r_plain = b.result(b.op("Multiply", acc_new, b.const(np.float32(2))), "plain_out")
    rc = b.result(b.const(np.bool_(True)), "cond")
    outs = g.loop([trip, exec_, acc0], b,
                  [pin(2, acc), pout(3, r_acc), pout(4, r_acc, axis=0), pout(5, r_dyn, axis=1),
                   pout(6, r_plain), pout(-1, rc, purpose="execution_condition")],
                  [(r_acc, acc)],
                  [((1, 2), "f32"), ((-1, 2), "f32"), ((1, -1), "f32"), ((1, 2), "f32")])
    for t, n in zip(outs, ["acc", "acc_seq", "dyn_seq", "plain"]):
        g.result(t, n)
    return g.save(tmp_path)


@pytest.mark.parametrize("trip,exec_,reason", [(0, True, "zero_trip_count"),
                                               (5, False, "execution_condition")])
def test_rule6_zero_iterations(tmp_path, trip, exec_, reason):
    xml = zero_trip_loop(tmp_path)
    events = run(xml, {"trip": np.int64(trip), "exec": np.bool_(exec_), "acc0": f32([7, 8])})
    assert not of(events, IterationDone)
    assert (finished(events).iterations, finished(events).reason) == (0, reason)
    out = final(events).outputs
    assert_outputs(out, {"acc": f32([7, 8]), "acc_seq": np.zeros((0, 2)),
                         "dyn_seq": np.zeros((0, 0)), "plain": np.zeros((1, 2))})
    assert out["acc_seq"].dtype == np.float32
    (notice,) = notices(events, 6)
    assert "plain_out" in notice.message and notice.path == "loop"


def test_rule6_nonzero_run_has_no_notice(tmp_path):
    events = run(zero_trip_loop(tmp_path), {"trip": np.int64(2), "exec": np.bool_(True),
                                            "acc0": f32([7, 8])})
    assert not notices(events, 6)
    assert_outputs(final(events).outputs, {"acc": f32([9, 10]), "acc_seq": f32([8, 9], [9, 10]),
                                           "dyn_seq": f32([24, 27, 27, 30]),
                                           "plain": f32([18, 20])})


# ----------------------------------------------------------------------------------------------
# Rule 7: concatenated outputs


def scan_loop(tmp_path, *, axis=0, stride=None, piece_shape=(1, 2), trip=3) -> Path:
    """Each iteration produces x * (iter + 1) as a piece of the concatenated output."""
    g = Net()
    trip_t, exec_ = g.const(np.int64(trip)), g.const(np.bool_(True))
    x0 = g.param("x", piece_shape)
    b = g.body()
    x = b.param("x_in", piece_shape)
    it = b.param("iter", (), "i64")
    k = b.op("Convert", b.op("Add", it, b.const(np.int64(1))), et="f32",
             data={"destination_type": "f32"})
    piece = b.op("Multiply", x, k)
    r = b.result(piece, "piece")
    rc = b.result(b.const(np.bool_(True)), "cond")
    attrs = {"axis": axis} if stride is None else {"axis": axis, "stride": stride}
    (out,) = g.loop([trip_t, exec_, x0], b,
                    [pin(2, x), pin(-1, it, purpose="current_iteration"), pout(3, r, **attrs),
                     pout(-1, rc, purpose="execution_condition")], [], [((-1,), "f32")])
    g.result(out, "seq")
    return g.save(tmp_path)


def test_rule7_negative_axis_is_normalised(tmp_path):
    out = final(run(scan_loop(tmp_path, axis=-2), {"x": f32([1, 10])})).outputs
    assert_outputs(out, {"seq": f32([1, 10], [2, 20], [3, 30])})
    out = final(run(scan_loop(tmp_path, axis=-1), {"x": f32([1, 10])})).outputs
    assert_outputs(out, {"seq": f32([1, 10, 2, 20, 3, 30])})


def test_rule7_scalar_pieces_give_shape_n(tmp_path):
    out = final(run(scan_loop(tmp_path, piece_shape=()), {"x": np.float32(5)})).outputs
    assert_outputs(out, {"seq": f32(5, 10, 15)})


def test_rule7_pieces_are_concatenated_not_stacked(tmp_path):
    out = final(run(scan_loop(tmp_path, piece_shape=(2, 2)), {"x": f32([1, 2], [3, 4])})).outputs
    assert out["seq"].shape == (6, 2)


def test_rule7_pieces_may_differ_along_the_axis(tmp_path):
    out = final(run(growing_loop(tmp_path, scan=True), {"s0": f32(0)})).outputs
    assert_outputs(out, {"s": f32(0, 1, 1, 1), "seq": f32(0, 1, 0, 1, 1, 0, 1, 1, 1)})


def test_rule7_pieces_differing_in_another_dim_are_an_error(tmp_path):
    err = run_error(growing_loop(tmp_path, scan_unsqueezed=True), {"s0": f32(0)})
    text = str(err)
    assert "loop 'loop'" in text and "iteration 1" in text
    assert "(1, 3)" in text and "(1, 2)" in text
    assert err.iteration == 1 and err.loop_path == "loop"


def test_rule7_negative_stride_reverses_loop_output_and_reports(tmp_path):
    events = run(scan_loop(tmp_path, stride=-1), {"x": f32([1, 10])})
    assert_outputs(final(events).outputs, {"seq": f32([3, 30], [2, 20], [1, 10])})
    assert len(notices(events, 7)) == 1


# ----------------------------------------------------------------------------------------------
# Rule 8: sliced inputs of a Loop


def sliced_loop(tmp_path, *, stride=None, start=None) -> Path:
    """out_seq = x_t * 2 per slice of x along axis 0; trip count is an input."""
    g = Net()
    trip, exec_ = g.param("trip", (), "i64"), g.const(np.bool_(True))
    x = g.param("x", (4, 2))
    b = g.body()
    xt = b.param("x_t", (1, 2))
    r = b.result(b.op("Multiply", xt, b.const(np.float32(2))), "y")
    rc = b.result(b.const(np.bool_(True)), "cond")
    attrs = {"axis": 0} if stride is None else {"axis": 0, "stride": stride, "start": -1, "end": 0}
    if start is not None:
        attrs["start"] = start
    outs = g.loop([trip, exec_, x], b, [pin(2, xt, **attrs), pout(3, r, axis=0), pout(4, r),
                                       pout(-1, rc, purpose="execution_condition")],
                  [], [((-1, 2), "f32"), ((1, 2), "f32")])
    g.result(outs[0], "y_seq")
    g.result(outs[1], "y_last")
    return g.save(tmp_path)


X42 = np.arange(8, dtype=np.float32).reshape(4, 2)


def test_rule8_fewer_iterations_than_slices_use_the_first_ones(tmp_path):
    events = run(sliced_loop(tmp_path), {"trip": np.int64(2), "x": X42})
    assert_outputs(final(events).outputs, {"y_seq": 2 * X42[:2], "y_last": 2 * X42[1:2]})
    assert [e.sliced_inputs["x_t"].shape for e in of(events, IterationDone)] == [(1, 2)] * 2


def test_rule8_reverse_sliced_input(tmp_path):
    events = run(sliced_loop(tmp_path, stride=-1), {"trip": np.int64(4), "x": X42})
    assert_outputs(final(events).outputs, {"y_seq": 2 * X42[::-1], "y_last": 2 * X42[:1]})


def test_rule8_loop_slicing_follows_rule10_and_reports_non_canonical_start(tmp_path):
    events = run(sliced_loop(tmp_path, start=1), {"trip": np.int64(3), "x": X42})
    assert_outputs(final(events).outputs, {"y_seq": 2 * X42[1:], "y_last": 2 * X42[3:]})
    assert len(notices(events, 10)) == 1
    assert not notices(run(sliced_loop(tmp_path), {"trip": np.int64(4), "x": X42}), 10)


def test_rule8_more_iterations_than_slices_is_an_error_at_that_iteration(tmp_path):
    xml = sliced_loop(tmp_path)
    events = []
    with pytest.raises(RunError) as info:
        for e in Engine(read_ir(xml)).run({"trip": np.int64(6), "x": X42}):
            events.append(e)
    assert info.value.iteration == 4 and info.value.loop_path == "loop"
    assert "iteration 4" in str(info.value) and "'x_t'" in str(info.value)
    assert len(of(events, IterationDone)) == 4
    assert of(events, LoopFinished)[0].reason == "error"


def test_rule8_unlimited_trip_count_with_slices_is_an_error_after_the_last(tmp_path):
    err = run_error(sliced_loop(tmp_path), {"trip": np.int64(-1), "x": X42})
    assert err.iteration == 4


# ----------------------------------------------------------------------------------------------
# Rule 9: runaway loops


def test_rule9_max_iterations_caps_an_infinite_loop(tmp_path):
    xml = counter_loop(tmp_path)          # body condition constant true
    events = run(xml, counter_inputs(-1), max_iterations=5)
    done = finished(events)
    assert (done.iterations, done.reason) == (5, "iteration_cap")
    assert of(events, IterationDone)[-1].continues is False
    assert_outputs(final(events).outputs, {"acc": f32(5), "acc_seq": f32(1, 2, 3, 4, 5),
                                           "twice": f32(10), "iters": np.arange(5)})
    assert len(notices(events, 9)) == 1


def test_rule9_cap_above_the_trip_count_changes_nothing(tmp_path):
    events = run(counter_loop(tmp_path), counter_inputs(3), max_iterations=10)
    assert finished(events).reason == "trip_count" and not notices(events, 9)


def test_rule9_consumer_may_stop_at_any_event(tmp_path):
    gen = Engine(read_ir(counter_loop(tmp_path))).run(counter_inputs(-1))
    seen = 0
    for e in gen:
        if isinstance(e, IterationDone):
            seen += 1
            partial = e.partial("acc_seq_out")
            if seen == 100:
                break
    gen.close()
    np.testing.assert_array_equal(partial, np.arange(1, 101, dtype=np.float32))


# ----------------------------------------------------------------------------------------------
# Rules 10-12: TensorIterator


def ti_model(tmp_path, *, x_shape=(1, 3, 2), slice_attrs=None, out_attrs=None, part=1,
             second=None, concat=True, sliced=True) -> Path:
    """h' = h + x_t (last value), y = x_t * 10 (concatenated); x sliced along axis 1."""
    slice_attrs = {"axis": 1} if slice_attrs is None else slice_attrs
    out_attrs = {"axis": 1} if out_attrs is None else out_attrs
    g = Net()
    ins = [g.param("X", x_shape), g.param("H0", (1, part, 2))]
    if second is not None:                   # a second sliced input, of shape ``second``
        ins.append(g.param("Y", second))
    b = g.body()
    xt = b.param("x_t", (1, part, 2)) if sliced else b.param("x_t", x_shape)
    h = b.param("h", (1, part, 2))
    h_new = b.op("Add", h, xt)
    port_map = [pin(0, xt, **slice_attrs) if sliced else pin(0, xt), pin(1, h)]
    if second is not None:
        yt = b.param("y_t", (1, part, 2))
        port_map.append(pin(2, yt, axis=1))
        h_new = b.op("Add", h_new, yt)
    r_h = b.result(h_new, "h_out")
    port_map.append(pout(len(ins), r_h))
    outs = [((1, part, 2), "f32")]
    if concat:
        r_y = b.result(b.op("Multiply", xt, b.const(np.float32(10))), "y_out")
        port_map.append(pout(len(ins) + 1, r_y, **out_attrs))
        outs.append(((1, -1, 2), "f32"))
    outs_t = g.loop(ins, b, port_map, [(r_h, h)], outs, type_="TensorIterator", name="ti")
    for t, n in zip(outs_t, ["H", "Y"]):
        g.result(t, n)
    return g.save(tmp_path)


X3 = np.array([[[1, 10], [2, 20], [3, 30]]], dtype=np.float32)
X4 = np.array([[[1, 10], [2, 20], [3, 30], [4, 40]]], dtype=np.float32)
H0 = np.zeros((1, 1, 2), np.float32)


def test_rule10_forward_slicing(tmp_path):
    events = run(ti_model(tmp_path), {"X": X3, "H0": H0})
    assert_outputs(final(events).outputs, {"H": f32([[6, 60]]), "Y": 10 * X3})
    assert [e.sliced_inputs["x_t"].tolist() for e in of(events, IterationDone)] == \
        [[[[1, 10]]], [[[2, 20]]], [[[3, 30]]]]
    assert (finished(events, "ti").iterations, finished(events, "ti").reason) == \
        (3, "slices_exhausted")
    assert not notices(events, 10)


def test_rule10_backward_slicing(tmp_path):
    xml = ti_model(tmp_path, slice_attrs={"axis": 1, "start": -1, "end": 0, "stride": -1})
    events = run(xml, {"X": X3, "H0": H0})
    assert_outputs(final(events).outputs, {"H": f32([[6, 60]]), "Y": 10 * X3[:, ::-1]})
    assert not notices(events, 10)


PART2 = {"axis": 1, "stride": 2, "part_size": 2}
PART2_BACK = {"axis": 1, "start": -1, "end": 0, "stride": -2, "part_size": 2}


def test_rule10_part_size_two_with_stride_two(tmp_path):
    xml = ti_model(tmp_path, x_shape=(1, 4, 2), part=2, slice_attrs=PART2, out_attrs=PART2)
    events = run(xml, {"X": X4, "H0": np.zeros((1, 2, 2), np.float32)})
    assert [e.sliced_inputs["x_t"].shape for e in of(events, IterationDone)] == [(1, 2, 2)] * 2
    assert_outputs(final(events).outputs, {"H": f32([[4, 40], [6, 60]]), "Y": 10 * X4})


def test_rule10_backward_part_size_two_keeps_chunks_in_order(tmp_path):
    xml = ti_model(tmp_path, x_shape=(1, 4, 2), part=2, slice_attrs=PART2_BACK, out_attrs=PART2)
    events = run(xml, {"X": X4, "H0": np.zeros((1, 2, 2), np.float32)})
    assert [e.sliced_inputs["x_t"][0, :, 0].tolist() for e in of(events, IterationDone)] == \
        [[3, 4], [1, 2]]
    assert_outputs(final(events).outputs, {"H": f32([[4, 40], [6, 60]]),
                                           "Y": 10 * X4[:, [2, 3, 0, 1]]})
    # Reverse concatenation puts each chunk back where it was sliced from.
    xml = ti_model(tmp_path, x_shape=(1, 4, 2), part=2, slice_attrs=PART2_BACK,
                   out_attrs=PART2_BACK)
    assert_outputs(final(run(xml, {"X": X4, "H0": np.zeros((1, 2, 2), np.float32)})).outputs,
                   {"H": f32([[4, 40], [6, 60]]), "Y": 10 * X4})


def test_rule10_stride_other_than_part_size_is_an_error_naming_the_layer(tmp_path):
    xml = ti_model(tmp_path, x_shape=(1, 4, 2), part=2,
                   slice_attrs={"axis": 1, "stride": 1, "part_size": 2})
    err = run_error(xml, {"X": X4, "H0": np.zeros((1, 2, 2), np.float32)})
    assert "'ti' (TensorIterator)" in str(err) and "part_size" in str(err)


def test_rule10_sliced_inputs_that_disagree_are_an_error_listing_the_counts(tmp_path):
    xml = ti_model(tmp_path, second=(1, 4, 2))
    err = run_error(xml, {"X": X3, "H0": H0, "Y": X4})
    assert "'x_t' gives 3" in str(err) and "'y_t' gives 4" in str(err)
    assert "'ti' (TensorIterator)" in str(err)


def test_rule10_non_canonical_start_follows_the_spec_and_reports(tmp_path):
    xml = ti_model(tmp_path, x_shape=(1, 4, 2), slice_attrs={"axis": 1, "start": 1, "end": -1})
    events = run(xml, {"X": X4, "H0": H0})
    assert [e.sliced_inputs["x_t"][0, 0, 0] for e in of(events, IterationDone)] == [2, 3, 4]
    assert_outputs(final(events).outputs, {"H": f32([[9, 90]]), "Y": 10 * X4[:, 1:]})
    assert len(notices(events, 10)) == 1


def test_rule11_reverse_concat_ti_example():
    events = run(DATA / "ti_example.xml", {"X": X3, "H0": np.zeros((1, 2), np.float32)})
    assert_outputs(final(events).outputs, {
        "H_last": f32([2.75, 27.5]),
        "H_seq": np.array([[[2.75, 27.5], [3.5, 35], [3, 30]]], np.float32)})
    iters = of(events, IterationDone)
    np.testing.assert_array_equal(iters[0].sliced_inputs["x_t"], [[[3, 30]]])
    # After two iterations the reversed partial holds iteration 1 then iteration 0.
    np.testing.assert_array_equal(iters[1].partial("H_seq"), [[[3.5, 35], [3, 30]]])


def test_rule11_reverse_concat_on_forward_slices(tmp_path):
    xml = ti_model(tmp_path, out_attrs={"axis": 1, "start": -1, "end": 0, "stride": -1})
    assert_outputs(final(run(xml, {"X": X3, "H0": H0})).outputs,
                   {"H": f32([[6, 60]]), "Y": 10 * X3[:, ::-1]})


@pytest.mark.parametrize("start,end", [(1, -1), (0, 2), (-1, 1)])
def test_rule11_non_canonical_output_start_end_is_a_model_error(tmp_path, start, end):
    xml = ti_model(tmp_path, out_attrs={"axis": 1, "start": start, "end": end})
    with pytest.raises(ModelError) as info:
        Engine(read_ir(xml))
    assert "'ti' (TensorIterator)" in str(info.value) and "supported" in str(info.value)


def test_rule12_no_sliced_input_with_a_concat_output(tmp_path):
    xml = ti_model(tmp_path, sliced=False)
    events = run(xml, {"X": X3, "H0": np.zeros((1, 1, 2), np.float32)})
    assert finished(events, "ti").iterations == 1
    assert_outputs(final(events).outputs, {"H": X3, "Y": 10 * X3})


def test_rule12_no_sliced_input_and_no_concat_runs_once_and_reports(tmp_path):
    xml = ti_model(tmp_path, sliced=False, concat=False)
    events = run(xml, {"X": X3, "H0": np.zeros((1, 1, 2), np.float32)})
    assert finished(events, "ti").iterations == 1
    assert_outputs(final(events).outputs, {"H": X3})
    (notice,) = notices(events, 12)
    assert notice.path == "ti"


# ----------------------------------------------------------------------------------------------
# Rule 13: a TensorIterator inside a TensorIterator body


def nested_ti(tmp_path) -> Path:
    """Row sums: the outer TI slices rows, the inner TI slices the row's columns and adds them."""
    g = Net()
    x = g.param("X", (2, 3))
    s0 = g.param("S0", (1, 1))
    ob = g.body()
    row = ob.param("row", (1, 3))
    s_init = ob.param("s_init", (1, 1))
    ib = ob.body()
    col, s = ib.param("col", (1, 1)), ib.param("s", (1, 1))
    r_s = ib.result(ib.op("Add", s, col), "s_out")
    (row_sum,) = ob.loop([row, s_init], ib, [pin(0, col, axis=1), pin(1, s), pout(2, r_s)],
                         [(r_s, s)], [((1, 1), "f32")], type_="TensorIterator", name="inner")
    r_row = ob.result(row_sum, "row_sum")
    (sums,) = g.loop([x, s0], ob, [pin(0, row, axis=0), pin(1, s_init), pout(2, r_row, axis=0)],
                     [], [((2, 1), "f32")], type_="TensorIterator", name="outer")
    g.result(sums, "sums")
    return g.save(tmp_path)


def test_rule13_ti_inside_ti_runs(tmp_path):
    x = np.array([[1, 2, 3], [10, 20, 30]], np.float32)
    events = run(nested_ti(tmp_path), {"X": x, "S0": np.zeros((1, 1), np.float32)})
    assert_outputs(final(events).outputs, {"sums": f32([6], [60])})
    inner = [e for e in of(events, IterationDone) if e.path == "outer/inner"]
    assert [e.outer for e in inner] == [(0,)] * 3 + [(1,)] * 3


# ----------------------------------------------------------------------------------------------
# Rule 15: XML synonyms and the draft Loop-5 spelling


def _synonyms(text: str) -> str:
    text = text.replace("internal_layer_id", "internal_operation_id")
    text = text.replace("from-layer", "from-operation").replace("to-layer", "to-operation")
    text = text.replace("<layers>", "<operations>").replace("</layers>", "</operations>")
    return re.sub(r"<(/?)layer\b", r"<\1operation", text)


def test_rule15_synonym_spellings(tmp_path):
    g_dir = tmp_path / "plain"
    s_dir = tmp_path / "synonyms"
    g_dir.mkdir()
    s_dir.mkdir()
    plain = run(DATA / "loop_example.xml", {"seq": X42, "acc0": f32([0, 0])})
    shutil.copy(DATA / "loop_example.bin", s_dir / "model.bin")
    text = _synonyms((DATA / "loop_example.xml").read_text())
    assert "internal_layer_id" not in text and "<layer " not in text and "from-layer" not in text
    (s_dir / "model.xml").write_text(text)
    other = run(s_dir / "model.xml", {"seq": X42, "acc0": f32([0, 0])})
    assert_outputs(final(other).outputs, dict(final(plain).outputs))


def test_rule15_synonyms_in_a_ti_with_back_edges(tmp_path):
    xml = ti_model(tmp_path)
    text = _synonyms(xml.read_text())
    (tmp_path / "syn.xml").write_text(text)
    shutil.copy(xml.with_suffix(".bin"), tmp_path / "syn.bin")
    out = final(run(tmp_path / "syn.xml", {"X": X3, "H0": H0})).outputs
    assert_outputs(out, {"H": f32([[6, 60]]), "Y": 10 * X3})


def draft_loop(tmp_path, *, connect_trip=False, connect_cond=False, limit=2) -> Path:
    """Draft Loop-5: a body Parameter with condition="True"; trip count/condition unconnected."""
    g = Net()
    trip = g.param("trip", (), "i64") if connect_trip else None
    exec_ = g.param("exec", (), "boolean") if connect_cond else None
    acc0 = g.param("acc0", (1,))
    b = g.body()
    acc = b.param("acc", (1,))
    c_in = b.param("c_in", (), "boolean")
    it = b.param("iter", (), "i64")
    acc_new = b.op("Add", acc, b.op("Convert", c_in, et="f32", data={"destination_type": "f32"}))
    r_acc = b.result(acc_new, "acc_out")
    rc = b.result(b.op("Less", it, b.const(np.int64(limit)), et="boolean"), "cond_out")
    (out,) = g.loop([trip, exec_, acc0], b,
                    [pin(-1, c_in, condition="True"), pin(2, acc),
                     pin(-1, it, purpose="current_iteration"), pout(3, r_acc),
                     pout(-1, rc, purpose="execution_condition")],
                    [(r_acc, acc)], [((1,), "f32")])
    g.result(out, "acc")
    return g.save(tmp_path)


def test_rule15_unconnected_trip_count_and_condition(tmp_path):
    events = run(draft_loop(tmp_path), {"acc0": f32(0)})
    started = of(events, LoopStarted)[0]
    assert started.trip_count is None and started.execution_condition is True
    assert (finished(events).iterations, finished(events).reason) == (3, "condition")
    # c_in received the execution condition, then the body condition: true while running.
    assert [bool(e.inputs["c_in"]) for e in of(events, IterationDone)] == [True] * 3
    assert_outputs(final(events).outputs, {"acc": f32(3)})


def test_rule15_condition_parameter_with_connected_inputs(tmp_path):
    xml = draft_loop(tmp_path, connect_trip=True, connect_cond=True, limit=10)
    events = run(xml, {"trip": np.int64(4), "exec": np.bool_(True), "acc0": f32(0)})
    assert finished(events).iterations == 4
    assert_outputs(final(events).outputs, {"acc": f32(4)})
    events = run(xml, {"trip": np.int64(4), "exec": np.bool_(False), "acc0": f32(0)})
    assert finished(events).iterations == 0
    assert_outputs(final(events).outputs, {"acc": f32(0)})


# ----------------------------------------------------------------------------------------------
# Nested Loops and If inside a Loop


def nested_loops(tmp_path) -> Path:
    """outer (trip 2) runs inner (trip 3) which adds 1 to a shared accumulator each time."""
    g = Net()
    trip, exec_ = g.const(np.int64(2)), g.const(np.bool_(True))
    acc0 = g.param("acc0", (1,))
    ob = g.body()
    acc = ob.param("acc", (1,))
    ib = ob.body()
    a = ib.param("a", (1,))
    r_a = ib.result(ib.op("Add", a, ib.const(np.float32(1))), "a_out")
    r_ic = ib.result(ib.const(np.bool_(True)), "inner_cond")
    inner_out = ob.loop([ob.const(np.int64(3)), ob.const(np.bool_(True)), acc], ib,
                        [pin(2, a), pout(3, r_a), pout(4, r_a, axis=0),
                         pout(-1, r_ic, purpose="execution_condition")],
                        [(r_a, a)], [((1,), "f32"), ((-1,), "f32")], name="inner")
    r_acc = ob.result(inner_out[0], "acc_out")
    r_seq = ob.result(ob.op("Unsqueeze", inner_out[1], ob.const(np.int64([0])), shape=(1, 3)),
                      "inner_seq")
    r_oc = ob.result(ob.const(np.bool_(True)), "outer_cond")
    outs = g.loop([trip, exec_, acc0], ob,
                  [pin(2, acc), pout(3, r_acc), pout(4, r_seq, axis=0),
                   pout(-1, r_oc, purpose="execution_condition")],
                  [(r_acc, acc)], [((1,), "f32"), ((2, 3), "f32")], name="outer")
    g.result(outs[0], "acc")
    g.result(outs[1], "seqs")
    return g.save(tmp_path)


def test_nested_loops_event_order_paths_and_outputs(tmp_path):
    events = run(nested_loops(tmp_path), {"acc0": f32(10)})
    trace = [(type(e).__name__, e.path, getattr(e, "iteration", None), e.outer)
             for e in events if isinstance(e, (LoopStarted, IterationDone, LoopFinished))]
    inner = [("LoopStarted", "outer/inner", None, (0,))] + \
        [("IterationDone", "outer/inner", k, (0,)) for k in range(3)] + \
        [("LoopFinished", "outer/inner", None, (0,))]
    second = [(n, p, i, (1,)) for n, p, i, _ in inner]
    assert trace == ([("LoopStarted", "outer", None, ())] + inner
                     + [("IterationDone", "outer", 0, ())] + second
                     + [("IterationDone", "outer", 1, ()), ("LoopFinished", "outer", None, ())])
    assert_outputs(final(events).outputs, {"acc": f32(16),
                                           "seqs": f32([11, 12, 13], [14, 15, 16])})
    assert [d.path for d in final(events).loops] == ["outer/inner", "outer/inner", "outer"]


def if_in_loop(tmp_path) -> Path:
    """y = iter + 100 when iter < 2, else -iter, chosen by an If in the body."""
    g = Net()
    trip, exec_ = g.const(np.int64(4)), g.const(np.bool_(True))
    x0 = g.param("x0", (), "f32")
    b = g.body()
    x = b.param("x", ())
    it = b.param("iter", (), "i64")
    v = b.op("Add", b.op("Convert", it, et="f32", data={"destination_type": "f32"}), x)
    small = b.op("Less", it, b.const(np.int64(2)), et="boolean")
    then, other = b.body(), b.body()
    tv = then.param("tv", ())
    t_r = then.result(then.op("Add", tv, then.const(np.float32(100))), "then_out")
    ev_ = other.param("ev", ())
    e_r = other.result(other.op("Multiply", ev_, other.const(np.float32(-1))), "else_out")
    (y,) = b.if_(small, [v], then, [pin(1, tv), pout(0, t_r)], other, [pin(1, ev_), pout(0, e_r)],
                 [((), "f32")])
    r_y = b.result(y, "y")
    rc = b.result(b.const(np.bool_(True)), "cond")
    (out,) = g.loop([trip, exec_, x0], b,
                    [pin(2, x), pin(-1, it, purpose="current_iteration"), pout(3, r_y, axis=0),
                     pout(-1, rc, purpose="execution_condition")], [], [((4,), "f32")])
    g.result(out, "ys")
    return g.save(tmp_path)


def test_if_inside_loop_chooses_a_branch_per_iteration(tmp_path):
    events = run(if_in_loop(tmp_path), {"x0": np.float32(0.5)})
    assert_outputs(final(events).outputs, {"ys": f32(100.5, 101.5, -2.5, -3.5)})
    assert [float(e.outputs["y"]) for e in of(events, IterationDone)] == [100.5, 101.5, -2.5, -3.5]


# ----------------------------------------------------------------------------------------------
# Oracle: the same IRs through OpenVINO's CPU plugin, where docs/semantics.md says it agrees


def openvino_outputs(xml: Path, inputs: dict) -> list[np.ndarray]:
    """OpenVINO CPU (f32) in its child process; a crash or hang there skips the case."""
    return ovt.run(xml, {k: np.asarray(v) for k, v in inputs.items()})


def assert_same_as_openvino(xml: Path, inputs: dict, only=None) -> None:
    """docs/semantics.md rule 14: floats at rtol=atol=1e-5, integers and booleans exact, same
    shapes."""
    ours = list(final(run(xml, inputs)).outputs.values())
    theirs = openvino_outputs(xml, inputs)
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if only is not None and k not in only:
            continue
        assert a.shape == b.shape, (k, a.shape, b.shape)
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=str(k))
        else:
            np.testing.assert_array_equal(a, b, err_msg=str(k))


ORACLE_CASES = {
    "rule1_i32_scalar": (lambda p: counter_loop(p, trip=("i32", ())),
                         counter_inputs(3, np.int32)),
    "rule1_i64_one_element": (lambda p: counter_loop(p, trip=("i64", (1,))),
                              counter_inputs(3, np.int64, (1,))),
    "rule1_negative": (lambda p: counter_loop(p, limit=4), counter_inputs(-1)),
    "rule2_do_while": (lambda p: counter_loop(p, body_cond=False), counter_inputs(5)),
    "rule4_i32_one_element": (lambda p: counter_loop(p, cur=("i32", (1,))), counter_inputs(3)),
    "rule4_i64_scalar": (lambda p: counter_loop(p, cur=("i64", ())), counter_inputs(3)),
    "rule5_swap": (swap_loop, {"a0": f32(1), "b0": f32(2)}),
    "rule5_growing": (growing_loop, {"s0": f32(0)}),
    "rule7_reverse": (lambda p: scan_loop(p, stride=-1), {"x": f32([1, 10])}),
    "rule7_scalar_pieces": (lambda p: scan_loop(p, piece_shape=()), {"x": np.float32(5)}),
    "rule8_fewer": (sliced_loop, {"trip": np.int64(2), "x": X42}),
    "rule8_reverse": (lambda p: sliced_loop(p, stride=-1), {"trip": np.int64(4), "x": X42}),
    "rule10_forward": (ti_model, {"X": X3, "H0": H0}),
    "rule10_backward": (lambda p: ti_model(p, slice_attrs={"axis": 1, "start": -1, "end": 0,
                                                           "stride": -1}), {"X": X3, "H0": H0}),
    "rule11_reverse_concat": (lambda p: ti_model(p, out_attrs={"axis": 1, "start": -1, "end": 0,
                                                               "stride": -1}),
                              {"X": X3, "H0": H0}),
    "rule10_part_size_two": (lambda p: ti_model(p, x_shape=(1, 4, 2), part=2, slice_attrs=PART2,
                                                out_attrs=PART2),
                             {"X": X4, "H0": np.zeros((1, 2, 2), np.float32)}),
    "rule10_part_size_two_backward": (
        lambda p: ti_model(p, x_shape=(1, 4, 2), part=2, slice_attrs=PART2_BACK,
                           out_attrs=PART2_BACK),
        {"X": X4, "H0": np.zeros((1, 2, 2), np.float32)}),
    "nested_loops": (nested_loops, {"acc0": f32(10)}),
    "if_in_loop": (if_in_loop, {"x0": np.float32(0.5)}),
}


@pytest.mark.oracle
@pytest.mark.parametrize("case", sorted(ORACLE_CASES))
def test_oracle_agrees(tmp_path, case):
    build, inputs = ORACLE_CASES[case]
    assert_same_as_openvino(build(tmp_path), inputs)


@pytest.mark.oracle
@pytest.mark.parametrize("trip,exec_", [(0, True), (5, False)])
def test_oracle_zero_iterations_merged_and_concat_outputs(tmp_path, trip, exec_):
    inputs = {"trip": np.int64(trip), "exec": np.bool_(exec_), "acc0": f32([7, 8])}
    # Output 0 (merged: initial value) and 1 (concat with static dims) are defined on CPU too.
    assert_same_as_openvino(zero_trip_loop(tmp_path), inputs, only={0, 1})


@pytest.mark.oracle
@pytest.mark.parametrize("name,inputs", [
    ("loop_example", {"seq": X42 + 1, "acc0": f32([0, 0])}),
    ("ti_example", {"X": X3, "H0": np.zeros((1, 2), np.float32)}),
])
def test_oracle_spec_examples(name, inputs):
    assert_same_as_openvino(DATA / f"{name}.xml", inputs)
