"""A loop body reads the constants of an enclosing graph as constants (``GraphPlan.known``).

torch.onnx.export writes a model's weights as initializers of the main graph, read by the Loop
body from the outer scope, often through an ``Identity``; loopdbg feeds them to the body as
invariant inputs. The body's plan knows that those inputs are constants: a MatMul on a weight gets
the constant-weight kernel (``gemm.with_constant``), steps on such values alone are folded, and
every value the debugger shows is the one the unspecialized, unfolded run gives, event by event.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import _onnx_models as om  # noqa: E402
from loopdbg.engine import Engine, runner  # noqa: E402
from loopdbg.engine.hoist import Folded  # noqa: E402
from loopdbg.ir.load import read_model  # noqa: E402
from loopdbg.ops import gemm  # noqa: E402
from test_engine_hoist import _agree, _compare, _events  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
D = 192                             # a 192x192 weight: big enough for the weight-first GEMM
ROWS = 8                            # (rows of x: the products are the generic kernel's, bit for bit)


def _weights():
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32)
    b = rng.standard_normal(D).astype(np.float32) / 4
    return w, b


def _decoder_like(tmp_path, trips=3):
    """x = tanh(x @ W + b) ``trips`` times; W read through an Identity of an initializer (as
    torch exports it), b straight from the outer scope and reshaped in the body."""
    w, b = _weights()
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_in", "w_id"], ["h"]),
         helper.make_node("Reshape", ["b", "bias_shape"], ["b3"]),
         helper.make_node("Add", ["h", "b3"], ["hb"]),
         helper.make_node("Tanh", ["hb"], ["x_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [om.vi("i", I64, []), om.vi("cond_in", B, []), om.vi("x_in", F, [1, ROWS, D])],
        [om.vi("cond_out", B, []), om.vi("x_out", F, [1, ROWS, D])])
    nodes = [helper.make_node("Identity", ["W"], ["w_id"], name="weight"),
             helper.make_node("Loop", ["M", "", "x0"], ["x_final"], body=body, name="steps")]
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(np.array(trips, np.int64), "M"),
             numpy_helper.from_array(np.array([1, 1, D], np.int64), "bias_shape")]
    m = om.model(nodes, [om.vi("x0", F, [1, ROWS, D])], [om.vi("x_final", F, [1, ROWS, D])],
                 inits=inits)
    path = tmp_path / "model.onnx"
    path.write_bytes(m.SerializeToString())
    x0 = np.random.default_rng(4).standard_normal((1, ROWS, D)).astype(np.float32)
    return read_model(path), {"x0": x0}


def _body(engine):
    return next(iter(engine.loops.values())).body


def test_an_outer_weight_behind_an_identity_gets_the_constant_weight_kernel(tmp_path,
                                                                            monkeypatch):
    model, _ = _decoder_like(tmp_path)
    w, _ = _weights()
    seen = []
    real = gemm.with_constant
    monkeypatch.setattr(gemm, "with_constant", lambda v: seen.append(v) or real(v))
    body = _body(Engine(model))
    assert len(seen) == 1 and np.array_equal(seen[0], w)
    linear = next(s for s in body.steps if s.layer.name == "h")
    assert linear.ins[1] in body.consts          # the weight, read as a constant
    assert not body.consts[linear.ins[1]].flags.writeable


def test_steps_on_outer_constants_alone_are_folded_and_shown_at_every_iteration(tmp_path):
    model, inputs = _decoder_like(tmp_path)
    engine = Engine(model)
    kinds = {s.layer.name: type(s.fn) for s in _body(engine).steps}
    assert kinds["b3"] is Folded and kinds["h"] is not Folded
    _, b = _weights()
    shown = [e.nodes["b3"] for e in engine.run(inputs, record_nodes=True)
             if type(e).__name__ == "IterationDone"]
    assert len(shown) == 3
    for value in shown:
        np.testing.assert_array_equal(value, b.reshape(1, 1, D))


def test_values_are_those_of_the_run_that_knows_no_outer_constant(tmp_path, monkeypatch):
    """Event by event, every node at every iteration: with the outer constants known (kernels
    chosen for them, steps folded) and without (the plain kernels, nothing folded), in the
    recording loop code and in the fast one; folding on and off agree too."""
    model, inputs = _decoder_like(tmp_path)
    for record in (True, False):
        _, known, known_error = _events(model, inputs, True, monkeypatch, record=record)
        with monkeypatch.context() as m:
            m.setattr(runner, "outer_constants", lambda *args, **kw: {})
            plain_engine, plain, plain_error = _events(model, inputs, False, monkeypatch,
                                                       record=record)
        plain_body = _body(plain_engine)
        linear = next(s for s in plain_body.steps if s.layer.name == "h")
        assert linear.ins[1] not in plain_body.consts
        assert known_error is None and plain_error is None
        _agree(known, plain)
    _compare(model, inputs, monkeypatch)
    w, b = _weights()
    x = inputs["x0"].astype(np.float64)
    for _ in range(3):
        x = np.tanh(x @ w + b)
    final = known[-1].outputs["x_final"]
    np.testing.assert_allclose(final, x, rtol=1e-5, atol=1e-5)


def test_an_if_branch_reads_an_outer_constant_as_a_constant(tmp_path):
    """The branches of an If read the main graph's initializer (through an Identity) as a
    constant of their plans, and each gives its value."""
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    then = helper.make_graph([helper.make_node("Mul", ["x", "w_id"], ["y_then"])], "then", [],
                             [om.vi("y_then", F, [2, 3])])
    other = helper.make_graph([helper.make_node("Sub", ["x", "w_id"], ["y_else"])], "else", [],
                              [om.vi("y_else", F, [2, 3])])
    nodes = [helper.make_node("Identity", ["W"], ["w_id"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)]
    m = om.model(nodes, [om.vi("c", B, []), om.vi("x", F, [2, 3])], [om.vi("y", F, [2, 3])],
                 inits=[numpy_helper.from_array(w, "W")])
    path = tmp_path / "if.onnx"
    path.write_bytes(m.SerializeToString())
    engine = Engine(read_model(path))
    branches = [p for p in engine.plans if p is not engine.plan]
    assert len(branches) == 2
    for plan in branches:
        assert len(plan.steps) == 1 and plan.steps[0].ins[1] in plan.consts
        np.testing.assert_array_equal(plan.consts[plan.steps[0].ins[1]], w)
    x = np.full((2, 3), 2, np.float32)
    for cond, want in ((True, x * w), (False, x - w)):
        out = engine.run_to_end({"c": np.array(cond), "x": x}).outputs["y"]
        np.testing.assert_array_equal(out, want)
