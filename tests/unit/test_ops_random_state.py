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
pytestmark = pytest.mark.ov_batch


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
    import openvino as ov

    from loopdbg.ir import read_ir
    from loopdbg.oracle import testing as ovt
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


# ---- random: plain unit tests ------------------------------------------------------------------

def test_philox_matches_the_published_known_answer():
    # Random123's known-answer test for Philox4x32-10 with key 0 and counter 0.
    from loopdbg.ops.random import philox_words
    assert philox_words(0, 0, 0, 1).tolist() == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_mt19937_words_are_numpys_mt19937_on_the_seed_seq_state():
    # The twister itself is numpy's; std::mt19937's first output after seeding by the integer
    # 5489 (its default) is 3499211612, the C++ standard's reference value.
    gen = np.random.MT19937()
    key = np.zeros(624, np.uint32)
    key[0] = 5489
    for i in range(1, 624):
        key[i] = (1812433253 * (int(key[i - 1]) ^ (int(key[i - 1]) >> 30)) + i) & 0xFFFFFFFF
    gen.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 624}}
    assert int(gen.random_raw()) == 3499211612


@pytest.mark.parametrize("data, match", [
    ({"output_type": "f32", "global_seed": "0", "op_seed": "0"}, "both 0"),
    ({"output_type": "f32", "global_seed": "1", "op_seed": "2", "alignment": "pytorch"},
     "pytorch"),
])
def test_random_uniform_refuses_what_it_cannot_reproduce(data, match):
    from loopdbg.errors import UnsupportedOperation
    with pytest.raises(UnsupportedOperation, match=match):
        kernel("RandomUniform", 8, **data)


def test_random_uniform_continues_its_sequence_within_a_run_only():
    k = kernel("RandomUniform", 8, output_type="f32", global_seed="3", op_seed="4")
    args = (np.array([5]), np.float32(0), np.float32(1))
    ctx = RunContext()
    first, second = k(ctx, *args), k(ctx, *args)
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(k(RunContext(), *args), first)


# ---- random: against OpenVINO ------------------------------------------------------------------

@pytest.fixture(scope="module")
def ovr():
    pytest.importorskip("openvino")
    import openvino.opset8 as o8
    import openvino.opset13 as o13
    from _ov_single_op import C, P, layer_from_ir, run_openvino
    return {"o8": o8, "o13": o13, "C": C, "P": P, "layer_from_ir": layer_from_ir,
            "run": run_openvino}


def _compare(tmp_path, ovr, build, inputs, backend="cpu", with_ctx=False):
    path = tmp_path / "op.xml"
    expected, = ovr["run"](build, inputs, backend, path)
    k, _ = make_kernel(ovr["layer_from_ir"](path))
    values = [x.value for x in inputs]
    got = k(RunContext(), *values) if with_ctx else k(*values)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


@oracle
@pytest.mark.parametrize("out_type, low, high, backend", [
    ("f32", -2.0, 3.0, "cpu"), ("i32", -5, 50, "cpu"), ("f32", 0.0, 1.0, "ref"),
    ("f16", -2.0, 3.0, "ref"), ("f64", -1.0, 7.0, "ref"), ("i32", 3, 4, "ref"),
    ("i64", -5, 1000, "ref"),
])
@pytest.mark.parametrize("seeds", [(1, 2), (0, 9), (77, 0), (2 ** 40 + 3, 2 ** 33)])
def test_random_uniform(tmp_path, ovr, out_type, low, high, backend, seeds):
    # The CPU plugin draws f16, f64 and i64 as f32 / i32 and converts; those are compared with
    # OpenVINO's reference, which follows the specification.
    C = ovr["C"]
    npt = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32,
           "i64": np.int64}[out_type]
    _compare(tmp_path, ovr, lambda s, a, b: ovr["o8"].random_uniform(s, a, b, out_type, *seeds),
             [C(np.array([3, 11], np.int64)), C(np.array(low, npt)), C(np.array(high, npt))],
             backend, with_ctx=True)


@oracle
def test_random_uniform_in_a_loop_body_continues_as_the_cpu_plugin_does(tmp_path, ov):
    import openvino.opset1 as o1
    import openvino.opset5 as o5
    import openvino.opset8 as o8
    bx = o1.parameter([6], np.float32)
    ru = o8.random_uniform(o1.constant(np.array([6], np.int64)), o1.constant(np.float32(0)),
                           o1.constant(np.float32(1)), "f32", 4, 5)
    row = o1.reshape(o1.add(ru, bx), o1.constant(np.array([1, 6], np.int64)), False)
    body = ov.Model([o1.constant(True).output(0), row.output(0)], [bx])
    x = o1.parameter([6], np.float32)
    loop = o5.loop(o1.constant(np.int64(3)), o1.constant(True))
    loop.set_function(body)
    loop.set_invariant_input(bx, x.output(0))
    loop.set_special_body_ports([-1, 0])
    out = loop.get_concatenated_slices(row.output(0), 0, 1, 1, -1, 0)
    _run_both(tmp_path, ov.Model([out], [x]), [np.zeros(6, np.float32)])


@oracle
@pytest.mark.parametrize("replace, log_probs, out_type, n", [
    (True, False, "i32", 40), (False, False, "i32", 6), (False, True, "i64", 3),
    (True, True, "i64", 17)])
@pytest.mark.parametrize("seeds", [(123, 4), (0, 1), (9, 0)])
def test_multinomial(tmp_path, ovr, replace, log_probs, out_type, n, seeds):
    C, P = ovr["C"], ovr["P"]
    probs = RNG.uniform(0.05, 1, (3, 6)).astype(np.float32)
    if log_probs:
        probs = np.log(probs)
    _compare(tmp_path, ovr, lambda p, k: ovr["o13"].multinomial(
        p, k, out_type, replace, log_probs, *seeds), [P(probs), C(np.array([n], np.int64))])
