"""Stateful and random kernels: ReadValue/Assign (loopdbg/ops/state.py, with the engine's run
context) and RandomUniform/Multinomial (loopdbg/ops/random.py)."""

from __future__ import annotations

import numpy as np
import pytest

from loopdbg.builder import GraphBuilder
from loopdbg.engine.context import RunContext
from loopdbg.engine.plan import GraphPlan, drain
from loopdbg.engine.runner import Engine
from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel

RNG = np.random.default_rng(17)


def kernel(type_, version, **data):
    return make_kernel(Layer(id=1, name="n", type=type_, version=f"opset{version}",
                             data={k: str(v) for k, v in data.items()}))[0]


# ---- state: plain unit tests -------------------------------------------------------------------

def _counter_model():
    """x -> ReadValue(init x) + 1 -> Assign; the Result is the sum."""
    b = GraphBuilder("state")
    x = b.parameter("x", "f32", [2])
    rv = b.op("ReadValue", [x], name="rv", version="opset6", variable_id="v",
              variable_type="f32", variable_shape="2")
    total = b.op("Add", [rv, np.float32(1)], name="total")
    b.op("Assign", [total], name="assign", version="opset6", variable_id="v")
    b.result(total, "y")
    return b.build()


def test_assign_runs_although_no_result_reads_it_and_its_value_stays_in_the_run():
    model = _counter_model()
    plan = GraphPlan(model.graph, "", "state: ")
    assert [s.layer.type for s in plan.steps] == ["ReadValue", "Add", "Assign"]
    ctx = RunContext()
    out, = drain(plan.run(ctx, np.array([1, 2], np.float32)))
    np.testing.assert_array_equal(out, [2, 3])
    np.testing.assert_array_equal(ctx.variables["v"], [2, 3])


def test_each_run_starts_with_no_variable_set():
    engine = Engine(_counter_model())
    for _ in range(3):
        finished = engine.run_to_end({"x": np.array([1, 2], np.float32)})
        np.testing.assert_array_equal(finished.outputs["y"], [2, 3])


def test_read_value6_without_input_is_zeros_of_the_variable():
    k = kernel("ReadValue", 6, variable_id="v", variable_type="i32", variable_shape="[2,3]")
    out = k(RunContext())
    assert out.dtype == np.int32 and out.shape == (2, 3) and not out.any()
    dynamic = kernel("ReadValue", 6, variable_id="v", variable_type="f32", variable_shape="?,3")
    with pytest.raises(ValueError, match="no initial value"):
        dynamic(RunContext())


def test_read_value_gives_the_last_assigned_value():
    ctx = RunContext()
    read = kernel("ReadValue", 3, variable_id="h")
    write = kernel("Assign", 3, variable_id="h")
    init = np.zeros(2, np.float32)
    assert read(ctx, init) is init
    write(ctx, np.ones(2, np.float32))
    np.testing.assert_array_equal(read(ctx, init), [1, 1])


# ---- state: against OpenVINO -------------------------------------------------------------------

oracle = pytest.mark.oracle


@pytest.fixture(scope="module")
def ov():
    return pytest.importorskip("openvino")


def _variable(ov, name, shape, type_=None):
    from openvino.op.util import Variable, VariableInfo
    info = VariableInfo()
    info.data_shape = ov.PartialShape(shape)
    info.data_type = type_ or ov.Type.f32
    info.variable_id = name
    return Variable(info)


def _run_both(tmp_path, model, feeds):
    from loopdbg.ir import read_ir
    from loopdbg.oracle import testing as ovt
    import openvino as ov
    path = tmp_path / "state.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    expected = ovt.run(path, feeds)
    ir = read_ir(path)
    names = [ir.graph.layers[p].name for p in ir.graph.parameters]
    finished = Engine(ir).run_to_end(dict(zip(names, feeds)))
    got = list(finished.outputs.values())
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-6)


@oracle
@pytest.mark.parametrize("with_init", [True, False])
def test_read_value_assign6(tmp_path, ov, with_init):
    import openvino.opset1 as o1
    import openvino.opset6 as o6
    x = o1.parameter([2, 3], np.float32)
    var = _variable(ov, "state", [2, 3])
    rv = o6.read_value(x, var) if with_init else o6.read_value(var)
    y = o1.multiply(o1.add(rv, x), o1.constant(np.float32(0.5)))
    sink = o6.assign(y, var)
    _run_both(tmp_path, ov.Model([y.output(0)], [sink], [x]),
              [RNG.uniform(-1, 1, (2, 3)).astype(np.float32)])


@oracle
def test_read_value_assign3(tmp_path, ov):
    import openvino.opset1 as o1
    import openvino.opset3 as o3
    x = o1.parameter([4], np.float32)
    rv = o3.read_value(x, "h")
    y = o1.tanh(o1.add(rv, x))
    sink = o3.assign(y, "h")
    _run_both(tmp_path, ov.Model([y.output(0)], [sink], [x]),
              [RNG.uniform(-1, 1, 4).astype(np.float32)])


@oracle
def test_state_in_a_loop_body_carries_across_iterations(tmp_path, ov):
    # OpenVINO's CPU plugin gives each iteration the value the previous one assigned.
    import openvino.opset1 as o1
    import openvino.opset5 as o5
    import openvino.opset6 as o6
    var = _variable(ov, "acc", [1])
    bx = o1.parameter([1], np.float32)
    rv = o6.read_value(o1.constant(np.zeros(1, np.float32)), var)
    acc = o1.add(o1.multiply(rv, o1.constant(np.float32(0.5))), bx)
    body = ov.Model([o1.constant(True).output(0), acc.output(0)], [o6.assign(acc, var)], [bx])
    x = o1.parameter([1], np.float32)
    loop = o5.loop(o1.constant(np.int64(5)), o1.constant(True))
    loop.set_function(body)
    loop.set_invariant_input(bx, x.output(0))
    loop.set_special_body_ports([-1, 0])
    out = loop.get_concatenated_slices(acc.output(0), 0, 1, 1, -1, 0)
    _run_both(tmp_path, ov.Model([out], [x]), [np.array([2.0], np.float32)])
