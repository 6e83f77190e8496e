"""Normalisation kernels (loopdbg/ops/norm.py): MVN, BatchNormInference, GroupNormalization,
NormalizeL2, LRN, GRN. Oracle cases compare with OpenVINO's CPU plugin; the plain ones need no
OpenVINO."""

from __future__ import annotations

import numpy as np
import pytest

from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel

RNG = np.random.default_rng(7)


def f32(*shape, lo=-3.0, hi=3.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def kernel(type_, version, **data):
    return make_kernel(Layer(id=1, name="n", type=type_, version=f"opset{version}",
                             data={k: str(v) for k, v in data.items()}))[0]


# ---- plain unit tests --------------------------------------------------------------------------

def test_mvn6_inside_sqrt_by_hand():
    x = np.array([[1.0, 2.0, 3.0, 6.0]], np.float32)
    out = kernel("MVN", 6, normalize_variance="true", eps="0.5", eps_mode="inside_sqrt")(
        x, np.array([-1]))
    mean, var = 3.0, np.mean((x - 3.0) ** 2)
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 0.5), rtol=1e-6)
    assert out.dtype == np.float32


def test_mvn1_axes_from_across_channels():
    x = f32(2, 3, 4)
    within = kernel("MVN", 2, eps="0", normalize_variance="false", across_channels="false")(x)
    np.testing.assert_allclose(within, x - x.mean(axis=2, keepdims=True), atol=1e-6)
    across = kernel("MVN", 2, eps="0", normalize_variance="false", across_channels="true")(x)
    np.testing.assert_allclose(across, x - x.mean(axis=(1, 2), keepdims=True), atol=1e-6)


def test_lrn_window_by_hand():
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 5, 1, 1)
    out = kernel("LRN", 1, alpha="1", beta="1", bias="0", size="3")(x, np.array([1]))
    sq = x.reshape(-1) ** 2
    windows = [sq[0:2].sum(), sq[0:3].sum(), sq[1:4].sum(), sq[2:5].sum(), sq[3:5].sum()]
    np.testing.assert_allclose(out.reshape(-1), x.reshape(-1) / (np.array(windows) / 3), rtol=1e-6)


def test_group_norm_rejects_groups_that_do_not_divide():
    k = kernel("GroupNormalization", 12, num_groups="4", epsilon="1e-5")
    with pytest.raises(ValueError, match="does not split into 4 groups"):
        k(f32(1, 6, 2), np.ones(6, np.float32), np.zeros(6, np.float32))


def test_normalize_l2_empty_axes_is_one_or_zero():
    x = np.array([0.0, -2.0, 3.0], np.float32)
    out = kernel("NormalizeL2", 1, eps="1e-6", eps_mode="add")(x, np.zeros(0, np.int64))
    np.testing.assert_array_equal(out, [0, 1, 1])


# ---- against OpenVINO --------------------------------------------------------------------------

oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch


@oracle
@pytest.mark.parametrize("across, variance, shape", [
    (False, False, (2, 3, 4)), (True, True, (2, 3, 4, 5)), (False, True, (1, 2, 3, 2, 2)),
    (True, False, (3, 5)),
])
def test_mvn1(tmp_path, ovm, across, variance, shape):
    ovm["check"](tmp_path, lambda x: ovm["o2"].mvn(x, across, variance, 1e-4),
                 [ovm["P"](f32(*shape))], version="opset2")


@oracle
@pytest.mark.parametrize("axes, variance, mode, shape", [
    ([-1], True, "inside_sqrt", (2, 3, 8)), ([1, 2], True, "outside_sqrt", (2, 3, 4)),
    ([0, 2], False, "inside_sqrt", (2, 3, 4)), ([2, 3], True, "inside_sqrt", (1, 4, 3, 5)),
    ([1], True, "outside_sqrt", (4, 6)),
])
def test_mvn6(tmp_path, ovm, axes, variance, mode, shape):
    C, P = ovm["C"], ovm["P"]
    ovm["check"](tmp_path, lambda x, a: ovm["o6"].mvn(x, a, variance, 1e-3, mode),
                 [P(f32(*shape)), C(np.array(axes, np.int64))], version="opset6")


@oracle
@pytest.mark.parametrize("version, shape", [(1, (2, 3, 4, 5)), (5, (2, 3)), (5, (1, 4, 3))])
def test_batch_norm(tmp_path, ovm, version, shape):
    C, P = ovm["C"], ovm["P"]
    c = shape[1]
    factory = ovm["o1" if version == 1 else "o5"].batch_norm_inference
    gamma, beta, mean = f32(c), f32(c), f32(c)
    var = f32(c, lo=0.1, hi=2.0)
    if version == 1:     # the IR of BatchNormInference-1 takes gamma and beta first
        ovm["check"](tmp_path, lambda g, b, x, m, v: factory(x, g, b, m, v, 1e-3),
                     [C(gamma), C(beta), P(f32(*shape)), C(mean), C(var)], version="opset1")
    else:
        ovm["check"](tmp_path, lambda x, g, b, m, v: factory(x, g, b, m, v, 1e-3),
                     [P(f32(*shape)), C(gamma), C(beta), C(mean), C(var)], version="opset5")


@oracle
@pytest.mark.parametrize("groups, shape", [(2, (2, 4, 3)), (1, (1, 3, 2, 2)), (3, (2, 6, 2, 2)),
                                           (4, (1, 4))])
def test_group_normalization(tmp_path, ovm, groups, shape):
    C, P = ovm["C"], ovm["P"]
    c = shape[1]
    ovm["check"](tmp_path, lambda x, s, b: ovm["o12"].group_normalization(x, s, b, groups, 1e-4),
                 [P(f32(*shape)), C(f32(c)), C(f32(c))])


@oracle
@pytest.mark.parametrize("axes, mode, eps", [([1], "add", 1e-6), ([1, 2], "max", 1e-6),
                                             ([2], "max", 50.0), ([0, 1, 2], "add", 0.5),
                                             ([-1], "add", 1e-6), ([], "max", 1e-6)])
def test_normalize_l2(tmp_path, ovm, axes, mode, eps):
    C, P = ovm["C"], ovm["P"]
    ovm["check"](tmp_path, lambda x, a: ovm["o1"].normalize_l2(x, a, eps, mode),
                 [P(f32(2, 3, 4)), C(np.array(axes, np.int64))])


# The CPU plugin truncates bias to an integer (1.5 runs as 1), runs axes [1, 2, 3] as [2, 3] and
# refuses other axes; OpenVINO's reference has no LRN. So the oracle cases keep to integer biases
# and the axes the plugin runs as specified; the rest is the hand-computed test above.
@oracle
@pytest.mark.parametrize("axes, size, bias, shape", [
    ([1], 5, 1.0, (2, 7, 3, 3)), ([2, 3], 3, 2.0, (1, 2, 5, 5)), ([1], 3, 1.0, (1, 4, 2)),
    ([3, 2], 5, 3.0, (1, 3, 4, 6)), ([1], 4, 1.0, (1, 6, 2, 2)), ([2, 3], 2, 1.0, (2, 1, 3, 3)),
])
def test_lrn(tmp_path, ovm, axes, size, bias, shape):
    C, P = ovm["C"], ovm["P"]
    ovm["check"](tmp_path, lambda x, a: ovm["o1"].lrn(x, a, 0.5, 0.75, bias, size),
                 [P(f32(*shape)), C(np.array(axes, np.int64))])


@oracle
@pytest.mark.parametrize("shape, bias", [((2, 3, 4, 5), 1e-4), ((1, 4, 2), 0.5), ((3, 2), 1.0)])
def test_grn(tmp_path, ovm, shape, bias):
    ovm["check"](tmp_path, lambda x: ovm["o1"].grn(x, bias), [ovm["P"](f32(*shape))])
