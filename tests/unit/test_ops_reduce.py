"""Reductions, TopK, NonZero and CumSum against numpy, with OpenVINO's element-type rules."""

import numpy as np
import pytest

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel


def kernel(type_, version="opset1", n_in=2, n_out=1, **data):
    layer = Layer(id=1, name="x", type=type_, version=version, data=data,
                  inputs=tuple(Port(i, i) for i in range(n_in)),
                  outputs=tuple(Port(n_in + j, j) for j in range(n_out)))
    fn, got = make_kernel(layer)
    assert got == n_out
    return fn


def i64(*values):
    return np.array(values, np.int64)


X = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)

REDUCTIONS = [
    ("ReduceSum", "opset1", np.sum),
    ("ReduceMean", "opset1", np.mean),
    ("ReduceMax", "opset1", np.max),
    ("ReduceMin", "opset1", np.min),
    ("ReduceProd", "opset1", np.prod),
    ("ReduceL1", "opset4", lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis,
                                                            keepdims=keepdims)),
    ("ReduceL2", "opset4", lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis,
                                                                    keepdims=keepdims))),
]


@pytest.mark.parametrize("type_, version, ref", REDUCTIONS)
@pytest.mark.parametrize("axes", [(1,), (-1,), (0, 2), (2, -1), (0, 1, 2)])
@pytest.mark.parametrize("keep", [False, True])
def test_reductions(type_, version, ref, axes, keep):
    fn = kernel(type_, version, keep_dims=str(keep).lower())
    out = fn(X, i64(*axes))
    norm = tuple(sorted({a % 3 for a in axes}))
    expected = ref(X.astype(np.float64), axis=norm, keepdims=keep)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("type_, version, ref", REDUCTIONS)
def test_empty_axes_reduce_nothing(type_, version, ref):
    out = kernel(type_, version, keep_dims="false")(X, i64())
    assert out.shape == X.shape
    if type_ not in ("ReduceL1", "ReduceL2"):
        np.testing.assert_array_equal(out, X)


def test_reduce_to_a_0d_array():
    out = kernel("ReduceSum", keep_dims="false")(np.arange(6, dtype=np.float32), i64(0))
    assert isinstance(out, np.ndarray) and out.shape == () and out == 15
    out = kernel("ReduceSum")(np.float32(2), i64())
    assert out.shape == ()
    assert kernel("ReduceMax")(np.array([[1, 5]], np.int32), np.array(-1, np.int64)).shape == (1,)


def test_integer_sums_keep_the_element_type_and_wrap():
    x = np.array([2 ** 30, 2 ** 30, 2 ** 30], np.int32)
    out = kernel("ReduceSum")(x, i64(0))
    assert out.dtype == np.int32 and out == 2 ** 30 * 3 - 2 ** 32
    assert kernel("ReduceProd")(np.array([3, 4], np.uint8), i64(0)).dtype == np.uint8


def test_integer_mean_truncates_toward_zero():
    x = np.array([[1, 2], [-3, -4], [7, 0]], np.int32)
    out = kernel("ReduceMean")(x, i64(1))
    assert out.dtype == np.int32 and out.tolist() == [1, -3, 3]


def test_logical_reductions():
    b = np.array([[True, False], [True, True]])
    assert kernel("ReduceLogicalAnd")(b, i64(1)).tolist() == [False, True]
    assert kernel("ReduceLogicalOr")(b, i64(0)).tolist() == [True, True]
    out = kernel("ReduceLogicalAnd", keep_dims="true")(b, i64(0, 1))
    assert out.shape == (1, 1) and out.dtype == np.bool_


def test_axes_out_of_range():
    with pytest.raises(ValueError, match="out of range"):
        kernel("ReduceSum")(X, i64(3))


# ---- TopK ------------------------------------------------------------------------------------

V = np.array([[3, 1, 3, 2, 1, 3]], np.float32)


@pytest.mark.parametrize("version", ["opset1", "opset3", "opset11"])
@pytest.mark.parametrize("mode, sort, values, indices", [
    ("max", "value", [3, 3, 3], [0, 2, 5]),
    ("max", "index", [3, 3, 3], [0, 2, 5]),
    ("max", "none", [3, 3, 3], [0, 2, 5]),
    ("min", "value", [1, 1, 2], [1, 4, 3]),
    ("min", "index", [1, 2, 1], [1, 3, 4]),
    ("min", "none", [1, 1, 2], [1, 4, 3]),
])
def test_topk_ties_go_to_the_smaller_index(version, mode, sort, values, indices):
    fn = kernel("TopK", version, n_out=2, axis="1", mode=mode, sort=sort)
    vals, idx = fn(V, np.array(3, np.int64))
    assert vals.tolist() == [values] and idx.tolist() == [indices]
    assert vals.dtype == np.float32 and idx.dtype == np.int32


def test_topk_index_element_type_axis_and_integers():
    x = np.array([[5, -2], [0, 7], [3, 3]], np.int32)
    fn = kernel("TopK", "opset11", n_out=2, axis="-2", mode="max", sort="value",
                index_element_type="i64", stable="true")
    vals, idx = fn(x, np.array(2, np.int32))
    assert vals.tolist() == [[5, 7], [3, 3]] and idx.tolist() == [[0, 1], [2, 2]]
    assert idx.dtype == np.int64
    u = np.array([0, 255, 7], np.uint8)
    vals, idx = kernel("TopK", n_out=2, axis="0", mode="max", sort="value")(u, i64(2))
    assert vals.tolist() == [255, 7] and idx.tolist() == [1, 2]


def test_topk_k_bigger_than_axis_is_clamped_and_zero_is_empty():
    fn = kernel("TopK", n_out=2, axis="1", mode="max", sort="value")
    assert fn(V, i64(10))[0].shape == (1, 6)
    assert fn(V, i64(0))[1].shape == (1, 0)


@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("axis", ["1", "0"])
def test_topk_over_a_vocabulary_is_the_stable_sort_s_first_k(mode, axis):
    # a generation step's TopK: the k first of a stable sort of the whole axis (NaN after every
    # number: the smallest for max, the largest for min), found without sorting the axis
    rng = np.random.default_rng(1)
    x = rng.integers(-40, 40, (3, 5000)).astype(np.float32)      # many ties
    x[rng.random(x.shape) < 0.01] = np.nan
    x[:, 7] = -0.0
    data = x if axis == "1" else np.ascontiguousarray(x.T)
    ax = int(axis)
    key = np.where(np.isnan(data), np.inf, -data if mode == "max" else data)
    for k in (1, 5, 64):
        vals, idx = kernel("TopK", n_out=2, axis=axis, mode=mode, sort="value")(data, i64(k))
        want = np.take(np.argsort(key, axis=ax, kind="stable"), np.arange(k), axis=ax)
        assert idx.tolist() == want.tolist()
        np.testing.assert_array_equal(vals, np.take_along_axis(data, want, axis=ax))


@pytest.mark.parametrize("mode", ["max", "min"])
def test_topk_of_one_is_the_stable_sort_s_first(mode):
    # k = 1 over the last axis (greedy decoding) takes argmax/argmin: the same first index of
    # equal values, -0.0 and 0.0 included, NaN after every number, any rank and element type
    rng = np.random.default_rng(2)
    cases = [rng.integers(-3, 3, (4, 2, 9)).astype(np.float32),
             np.array([[-0.0, 0.0, -0.0], [0.0, -0.0, 0.0]], np.float32),
             np.array([[np.nan, 1, 1], [2, np.nan, 2], [np.nan, np.nan, np.nan],
                       [np.nan, -np.inf, np.inf]], np.float64),
             rng.integers(-5, 5, (3, 7)).astype(np.int32),
             rng.integers(0, 3, (3, 7)).astype(np.uint8),
             np.array([[False, True, True], [False, False, False]]),
             rng.standard_normal((1, 1024)).astype(np.float32)]
    fn = kernel("TopK", "opset11", n_out=2, axis="-1", mode=mode, sort="value")
    for x in cases:
        if x.dtype.kind == "f":
            key = np.where(np.isnan(x), np.inf, -x if mode == "max" else x)
        else:
            key = ~x if mode == "max" else x
        want = np.argsort(key, axis=-1, kind="stable")[..., :1]
        vals, idx = fn(x, i64(1))
        assert idx.dtype == np.int32 and idx.shape == x.shape[:-1] + (1,)
        assert idx.tolist() == want.tolist()
        got, ref = vals.view(np.uint8), np.take_along_axis(x, want, axis=-1).view(np.uint8)
        assert vals.dtype == x.dtype and got.tolist() == ref.tolist()     # bits: -0.0, NaN


def test_topk_bad_attributes():
    with pytest.raises(UnsupportedOperation, match="mode='top'"):
        kernel("TopK", n_out=2, axis="0", mode="top")
    with pytest.raises(UnsupportedOperation, match="index_element_type"):
        kernel("TopK", n_out=2, axis="0", mode="max", index_element_type="f32")


# ---- NonZero, CumSum -------------------------------------------------------------------------

def test_non_zero():
    x = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
    out = kernel("NonZero", "opset3", n_in=1)(x)
    assert out.dtype == np.int64 and out.tolist() == [[0, 1, 1], [1, 0, 2]]
    out = kernel("NonZero", "opset3", n_in=1, output_type="i32")(np.zeros((2, 2)))
    assert out.dtype == np.int32 and out.shape == (2, 0)
    assert kernel("NonZero", "opset3", n_in=1)(np.float32(3)).shape == (1, 1)
    assert kernel("NonZero", "opset3", n_in=1)(np.float32(0)).shape == (1, 0)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cum_sum(exclusive, reverse):
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    fn = kernel("CumSum", "opset3", exclusive=str(exclusive).lower(), reverse=str(reverse).lower())
    out = fn(x, np.array(1, np.int64))
    y = x[:, ::-1] if reverse else x
    c = np.cumsum(y, axis=1)
    if exclusive:
        c = np.concatenate([np.zeros((2, 1), int), c[:, :-1]], axis=1)
    expected = c[:, ::-1] if reverse else c
    assert out.dtype == np.int32 and out.tolist() == expected.tolist()


def test_cum_sum_default_axis_is_zero():
    x = np.array([[1, 2], [3, 4]], np.float32)
    assert kernel("CumSum", "opset3", n_in=1)(x).tolist() == [[1, 2], [4, 6]]
    assert kernel("CumSum", "opset3")(x, np.array(-1, np.int32)).tolist() == [[1, 3], [3, 7]]
