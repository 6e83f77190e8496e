"""Random ONNX operators run seeded and say so; Dropout in training mode really drops.

No runtime reproduces another's random numbers, so loopdbg cannot match onnxruntime: it draws
from numpy's RandomState seeded with the node's seed (0 without one), as onnx.reference does,
and a Notice before the first iteration says which seed and that the values are not
onnxruntime's.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import _onnx_models as om  # noqa: E402
from loopdbg.engine import Engine, Notice  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402

F, B = TensorProto.FLOAT, TensorProto.BOOL
X = np.arange(1, 21, dtype=np.float32).reshape(4, 5)


def _dropout(seed=None):
    attrs = {} if seed is None else {"seed": seed}
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], **attrs)
    return om.model([node], [om.vi("x", F, [4, 5]), om.vi("r", F, []), om.vi("t", B, [])],
                    [om.vi("y", F, [4, 5]), om.vi("mask", B, [4, 5])], opset=13)


def test_training_mode_dropout_drops_and_scales_as_onnx_reference_with_the_seed():
    m = _dropout(seed=3)
    feeds = {"x": X, "r": np.array(0.5, np.float32), "t": np.array(True)}
    events = list(Engine(from_proto(m)).run(feeds))
    out = events[-1].outputs
    mask = out["mask"]
    assert 0 < mask.sum() < mask.size                   # some dropped, not the input unchanged
    np.testing.assert_allclose(out["y"], np.where(mask, X * 2, 0))
    want = ReferenceEvaluator(m).run(None, feeds)
    np.testing.assert_array_equal(out["y"], want[0])
    np.testing.assert_array_equal(mask, want[1])
    said = [e.message for e in events if isinstance(e, Notice)]
    assert any("RandomState(seed 3, the node's)" in t and "onnxruntime draws other numbers" in t
               for t in said), said


def test_dropout_outside_training_mode_is_the_identity_with_an_all_true_mask():
    out = Engine(from_proto(_dropout())).run_to_end(
        {"x": X, "r": np.array(0.5, np.float32), "t": np.array(False)}).outputs
    np.testing.assert_array_equal(out["y"], X)
    assert out["mask"].all()


def test_a_node_without_a_seed_draws_with_seed_0_the_same_values_every_run():
    m = om.model([helper.make_node("RandomNormal", [], ["y"], shape=[3, 4], mean=1.0, scale=2.0)],
                 [], [om.vi("y", F, [3, 4])])
    engine = Engine(from_proto(m))
    first = list(engine.run({}))
    again = engine.run_to_end({}).outputs["y"]
    y = first[-1].outputs["y"]
    np.testing.assert_array_equal(y, again)
    np.testing.assert_allclose(y, np.random.RandomState(0).randn(3, 4).astype(np.float32) * 2 + 1)
    notes = [e.message for e in first if isinstance(e, Notice)]
    assert any("seed 0, as the node gives no seed" in t for t in notes), notes


@pytest.mark.parametrize("op, attrs", [
    ("RandomUniform", {"shape": [2, 3], "low": -1.0, "high": 1.0, "seed": 5.0}),
    ("RandomNormal", {"shape": [2, 3], "seed": 7.0, "dtype": TensorProto.DOUBLE}),
])
def test_seeded_generators_give_onnx_references_values(op, attrs):
    m = om.model([helper.make_node(op, [], ["y"], **attrs)], [], [om.vi("y", F, None)])
    want = ReferenceEvaluator(m).run(None, {})[0]
    got = Engine(from_proto(m)).run_to_end({}).outputs["y"]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["RandomUniformLike", "RandomNormalLike", "Bernoulli"])
def test_the_like_forms_and_bernoulli_are_seeded_too(op):
    x = np.full((3, 4), 0.5, np.float32)
    m = om.model([helper.make_node(op, ["x"], ["y"], seed=11.0)], [om.vi("x", F, [3, 4])],
                 [om.vi("y", F, None)], opset=22)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    got = Engine(from_proto(m)).run_to_end({"x": x}).outputs["y"]
    np.testing.assert_array_equal(got, want)


def test_multinomial_draws_class_indices_by_softmax_probabilities():
    logits = np.log(np.array([[1e-9, 1.0, 1e-9], [0.5, 0.5, 1e-12]], np.float32))
    m = om.model([helper.make_node("Multinomial", ["x"], ["y"], sample_size=50, seed=2.0)],
                 [om.vi("x", F, [2, 3])], [om.vi("y", TensorProto.INT32, None)])
    y = Engine(from_proto(m)).run_to_end({"x": logits}).outputs["y"]
    assert y.dtype == np.int32 and y.shape == (2, 50)
    assert (y[0] == 1).all() and set(np.unique(y[1])) == {0, 1}
