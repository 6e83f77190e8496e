"""Indexing kernels (Gather ... OneHot) against numpy formulas and hand-computed values."""

import numpy as np
import pytest

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import make_kernel


def kernel(type_, version="opset1", n_in=2, **data):
    layer = Layer(id=1, name="x", type=type_, version=version, data=data,
                  inputs=tuple(Port(i, i) for i in range(n_in)), outputs=(Port(n_in, 0),))
    fn, n_out = make_kernel(layer)
    assert n_out == 1
    return fn


def i64(*values):
    return np.array(values, np.int64)


def ax(v):
    return np.array(v, np.int64)


X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

# ---- Gather ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["opset1", "opset7", "opset8"])
def test_gather_matches_take(version):
    fn = kernel("Gather", version, n_in=3)
    idx = np.array([[2, 0], [1, 1]], np.int32)
    for axis in (0, 1, 2, -1):
        if axis == 0:
            np.testing.assert_array_equal(fn(X, idx % 2, ax(0)), np.take(X, idx % 2, axis=0))
        else:
            np.testing.assert_array_equal(fn(X, idx, ax(axis)), np.take(X, idx, axis=axis))
    assert fn(X, np.array(1, np.int64), ax(1)).shape == (2, 4)


def test_gather_negative_indices_v8_counts_from_end_v1_v7_give_zeros():
    d = np.arange(5, dtype=np.float32) * 10
    i = i64(0, -1, 4, 5, -6)
    assert kernel("Gather", "opset8", n_in=3)(d, i, ax(0)).tolist() == [0, 40, 40, 0, 0]
    for v in ("opset1", "opset7"):
        assert kernel("Gather", v, n_in=3)(d, i, ax(0)).tolist() == [0, 0, 40, 0, 0]


def test_gather_out_of_range_zeroes_whole_slices():
    out = kernel("Gather", "opset8", n_in=3)(X, i64(1, 7), ax(1))
    np.testing.assert_array_equal(out[:, 0], X[:, 1])
    assert (out[:, 1] == 0).all()
    b = kernel("Gather", "opset8", n_in=3)(np.array([True, True]), i64(0, 2), ax(0))
    assert b.dtype == np.bool_ and b.tolist() == [True, False]
    one = kernel("Gather", "opset8", n_in=3)(np.arange(3.0), np.array(5), ax(0))
    assert one.shape == () and one == 0


def _gather_batch_ref(x, idx, axis, bd):
    if bd == 0:
        return np.take(x, idx, axis=axis)
    return np.stack([_gather_batch_ref(x[b], idx[b], axis - 1, bd - 1) for b in range(x.shape[0])])


@pytest.mark.parametrize("version", ["opset7", "opset8"])
@pytest.mark.parametrize("axis, bd, idx_shape", [
    (1, 1, (2, 4)), (2, 1, (2, 3)), (2, 2, (2, 3, 2)), (2, -1, (2, 3, 2)), (-1, 1, (2, 5)),
    (3, 2, (2, 3, 4, 2)),
])
def test_gather_batch_dims(version, axis, bd, idx_shape):
    x = np.arange(2 * 3 * 5 * 2, dtype=np.float32).reshape(2, 3, 5, 2)
    a = axis % 4
    idx = np.random.default_rng(a + bd).integers(0, x.shape[a], size=idx_shape)
    out = kernel("Gather", version, n_in=3, batch_dims=str(bd))(x, idx, ax(axis))
    np.testing.assert_array_equal(out, _gather_batch_ref(x, idx, a, bd % idx.ndim))


def test_gather_batch_dims_errors():
    fn = kernel("Gather", "opset8", n_in=3, batch_dims="2")
    with pytest.raises(ValueError, match="batch_dims"):
        fn(X, np.zeros((2, 3), np.int64), ax(1))
    with pytest.raises(ValueError, match="differ"):
        kernel("Gather", "opset8", n_in=3, batch_dims="1")(X, np.zeros((3, 1), np.int64), ax(1))


# ---- GatherND, GatherElements ----------------------------------------------------------------

def test_gather_nd_without_batch():
    fn = kernel("GatherND", "opset5")
    d = np.arange(12).reshape(3, 4)
    assert fn(d, i64(1, 2)).tolist() == 6
    assert fn(d, np.array([[0, 1], [2, 3]])).tolist() == [1, 11]
    assert fn(d, np.array([[1], [0]])).tolist() == [[4, 5, 6, 7], [0, 1, 2, 3]]
    assert fn(d, np.array([[-1, -1]])).tolist() == [11]


def test_gather_nd_batch_dims_v5_folds_and_v8_keeps():
    d = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    idx = np.array([[[1], [0]], [[2], [2]]])  # 2,2,1
    expected = [[d[0, 1], d[0, 0]], [d[1, 2], d[1, 2]]]
    v8 = kernel("GatherND", "opset8", batch_dims="1")(d, idx)
    assert v8.shape == (2, 2, 4) and v8.tolist() == np.array(expected).tolist()
    d4 = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    idx4 = np.zeros((2, 3, 1, 1), np.int64)
    assert kernel("GatherND", "opset8", batch_dims="2")(d4, idx4).shape == (2, 3, 1, 5)
    v5 = kernel("GatherND", "opset5", batch_dims="2")(d4, idx4)
    assert v5.shape == (6, 1, 5)
    np.testing.assert_array_equal(v5.reshape(2, 3, 1, 5)[:, :, 0], d4[:, :, 0])


def test_gather_elements():
    d = np.array([[1, 2], [3, 4]], np.float32)
    idx = np.array([[0, 0], [1, 0]], np.int32)
    fn = kernel("GatherElements", "opset6", axis="1")
    assert fn(d, idx).tolist() == [[1, 1], [4, 3]]
    assert kernel("GatherElements", "opset6", axis="-2")(d, idx).tolist() == [[1, 2], [3, 2]]
    assert fn(d, np.array([[-1], [-2]])).tolist() == [[2], [3]]


# ---- StridedSlice ----------------------------------------------------------------------------

def ss(x, begin, end, strides=None, **masks):
    data = {k: ",".join(str(v) for v in m) for k, m in masks.items()}
    fn = kernel("StridedSlice", n_in=4 if strides is not None else 3, **data)
    args = (x, i64(*begin), i64(*end)) + ((i64(*strides),) if strides is not None else ())
    return fn(*args)


def test_strided_slice_mask_bit_one_ignores_the_value():
    out = ss(X, [1, 1, 1], [2, 2, 3], [1, 1, 1], begin_mask=[1, 0, 0], end_mask=[0, 0, 1])
    np.testing.assert_array_equal(out, X[0:2, 1:2, 1:])


def test_strided_slice_reverse_with_end_mask_includes_zero():
    x = np.arange(5)
    assert ss(x, [-1], [0], [-1], end_mask=[1]).tolist() == [4, 3, 2, 1, 0]
    assert ss(x, [-1], [0], [-1], end_mask=[0]).tolist() == [4, 3, 2, 1]
    assert ss(x, [0], [0], [1]).tolist() == []
    assert ss(x, [0], [0], [1], begin_mask=[1], end_mask=[1]).tolist() == [0, 1, 2, 3, 4]


def test_strided_slice_new_axis_shrink_and_ellipsis():
    out = ss(X, [0, 1], [0, 2], [1, 1], new_axis_mask=[1, 0])
    np.testing.assert_array_equal(out, X[None, 1:2])
    out = ss(X, [1, 0, 2], [2, 3, 3], [1, 1, 1], shrink_axis_mask=[1, 0, 1])
    np.testing.assert_array_equal(out, X[1, 0:3, 2])
    out = ss(X, [0, 1], [0, 3], [1, 1], ellipsis_mask=[1, 0])
    np.testing.assert_array_equal(out, X[..., 1:3])
    out = ss(X, [1], [2])  # missing strides default to 1; trailing dims are kept whole
    np.testing.assert_array_equal(out, X[1:2])
    out = ss(X, [-2, 0], [100, -1], [1, 2])
    np.testing.assert_array_equal(out, X[-2:100, 0:-1:2])


def test_strided_slice_empty_mask_strings_and_errors():
    fn = kernel("StridedSlice", n_in=4, begin_mask="", end_mask="", new_axis_mask="",
                shrink_axis_mask="", ellipsis_mask="")
    assert fn(X, i64(0), i64(1), i64(1)).shape == (1, 3, 4)
    with pytest.raises(ValueError, match="zero"):
        fn(X, i64(0), i64(1), i64(0))
    with pytest.raises(UnsupportedOperation, match="more than one bit"):
        kernel("StridedSlice", n_in=4, ellipsis_mask="1,1")


# ---- Slice -----------------------------------------------------------------------------------

def test_slice_numpy_like_with_clamping():
    fn = kernel("Slice", "opset8", n_in=5)
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    np.testing.assert_array_equal(fn(X, i64(1, -1), i64(big, small), i64(1, -2), i64(1, 2)),
                                  X[:, 1:, ::-2])
    np.testing.assert_array_equal(fn(X, i64(-100), i64(1), i64(1), i64(-1)), X[..., :1])
    fn4 = kernel("Slice", "opset8", n_in=4)
    np.testing.assert_array_equal(fn4(X, i64(0, 2), i64(1, 0), i64(1, -1)), X[0:1, 2:0:-1])
    with pytest.raises(ValueError, match="step is zero"):
        fn4(X, i64(0), i64(1), i64(0))
    with pytest.raises(ValueError, match="twice"):
        fn(X, i64(0, 0), i64(1, 1), i64(1, 1), i64(1, -2))


# ---- Scatter family --------------------------------------------------------------------------

def test_scatter_update_along_axis_and_copies_input():
    data = np.zeros((3, 4), np.float32)
    data.flags.writeable = False
    fn = kernel("ScatterUpdate", "opset3", n_in=4)
    out = fn(data, i64(2, 0), np.array([[1, 2], [3, 4], [5, 6]], np.float32), ax(1))
    assert out.tolist() == [[2, 0, 1, 0], [4, 0, 3, 0], [6, 0, 5, 0]]
    assert (data == 0).all()
    out = fn(data, np.array([[1]]), np.ones((1, 1, 4), np.float32), ax(0))
    assert out[1].tolist() == [1, 1, 1, 1] and out.sum() == 4
    assert fn(data, i64(-1), np.ones((1, 4), np.float32), ax(0))[2].tolist() == [1, 1, 1, 1]


def test_scatter_nd_update():
    data = np.arange(8, dtype=np.float32)
    fn = kernel("ScatterNDUpdate", "opset4", n_in=3)
    out = fn(data, np.array([[4], [3], [1], [7]]), np.array([9, 10, 11, 12], np.float32))
    assert out.tolist() == [0, 11, 2, 10, 9, 5, 6, 12]
    d2 = np.zeros((2, 3), np.int32)
    out = fn(d2, np.array([[1]]), np.array([[1, 2, 3]], np.int32))
    assert out.tolist() == [[0, 0, 0], [1, 2, 3]]


@pytest.mark.parametrize("reduction, expected", [
    ("none", [0, 7, 2, 3]), ("sum", [0, 12, 2, 3]), ("sub", [0, -10, 2, 3]),
    ("prod", [0, 28, 2, 3]), ("min", [0, 1, 2, 3]), ("max", [0, 7, 2, 3]),
])
def test_scatter_nd_update15_reductions(reduction, expected):
    fn = kernel("ScatterNDUpdate", "opset15", n_in=3, reduction=reduction)
    out = fn(np.arange(4, dtype=np.int32), np.array([[1], [-3]]), np.array([4, 7], np.int32))
    assert out.tolist() == expected


def test_scatter_elements_update():
    data = np.zeros((3, 3), np.float32)
    idx = np.array([[1, 0, 2], [0, 2, 1]])
    upd = np.array([[1, 1.1, 1.2], [2, 2.1, 2.2]], np.float32)
    out = kernel("ScatterElementsUpdate", "opset3", n_in=4)(data, idx, upd, ax(0))
    expected = np.zeros((3, 3), np.float32)
    np.put_along_axis(expected, idx, upd, axis=0)
    np.testing.assert_array_equal(out, expected)
    out = kernel("ScatterElementsUpdate", "opset3", n_in=4)(data, idx, upd, ax(-1))
    np.testing.assert_array_equal(out[0], np.array([1.1, 1, 1.2], np.float32))
    small = kernel("ScatterElementsUpdate", "opset3", n_in=4)(
        data, i64(2)[None], upd[:1, :1], ax(1))
    assert small.tolist() == [[0, 0, 1], [0, 0, 0], [0, 0, 0]]


@pytest.mark.parametrize("type_, version, n_in, args", [
    ("ScatterUpdate", "opset3", 4, (np.zeros((2, 4), np.float32), i64(-5), np.ones((2, 1)),
                                   ax(1))),
    ("ScatterNDUpdate", "opset4", 3, (np.zeros(4, np.float32), np.array([[-5]]),
                                     np.ones(1, np.float32))),
    ("ScatterNDUpdate", "opset15", 3, (np.zeros((2, 4), np.float32), np.array([[1, -6]]),
                                      np.ones(1, np.float32))),
    ("ScatterElementsUpdate", "opset12", 4, (np.zeros(4, np.float32), i64(-8),
                                            np.ones(1, np.float32), ax(0))),
    ("GatherElements", "opset6", 2, (np.zeros((2, 4), np.float32), np.array([[0], [-7]]))),
])
def test_indices_below_minus_the_axis_are_refused_not_wrapped_twice(type_, version, n_in, args):
    """An index in [-2n, -n) once wrapped is still negative: numpy would count it from the end
    again and touch the wrong element (-5 on an axis of 4 at 3) where it must be an error."""
    extra = {"axis": "1"} if type_ == "GatherElements" else {}
    fn = kernel(type_, version, n_in=n_in, **extra)
    with pytest.raises(IndexError, match=r"index -\d is out of range for an axis of [24]"):
        fn(*args)


@pytest.mark.parametrize("reduction, init, expected", [
    ("sum", "true", [1, 9, 3]), ("sum", "false", [1, 7, 3]),
    ("prod", "true", [1, 24, 3]), ("prod", "false", [1, 12, 3]),
    ("max", "true", [1, 4, 3]), ("min", "false", [1, 3, 3]),
    ("mean", "true", [1, 3, 3]), ("mean", "false", [1, 3.5, 3]),
])
def test_scatter_elements_update12_reductions(reduction, init, expected):
    fn = kernel("ScatterElementsUpdate", "opset12", n_in=4, reduction=reduction,
                use_init_val=init)
    out = fn(np.array([1, 2, 3], np.float32), i64(1, 1), np.array([3, 4], np.float32), ax(0))
    assert out.tolist() == expected


# ---- Pad, OneHot -----------------------------------------------------------------------------

@pytest.mark.parametrize("version", ["opset1", "opset12"])
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_modes(version, mode):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    fn = kernel("Pad", version, n_in=4, pad_mode=mode)
    out = fn(x, i64(1, 2), i64(2, 0), np.float32(-1))
    kw = {"constant_values": -1} if mode == "constant" else {}
    np.testing.assert_array_equal(out, np.pad(x, [(1, 2), (2, 0)], mode=mode, **kw))


def test_pad_default_value_and_negative_pads():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = kernel("Pad", "opset1", n_in=3, pad_mode="constant")(x, i64(0, 1), i64(1, 0))
    np.testing.assert_array_equal(out, np.pad(x, [(0, 1), (1, 0)]))
    fn12 = kernel("Pad", "opset12", n_in=3, pad_mode="edge")
    np.testing.assert_array_equal(fn12(x, i64(-1, 1), i64(1, -2)),
                                  np.pad(x[1:, :2], [(0, 1), (1, 0)], mode="edge"))
    with pytest.raises(ValueError, match="negative"):
        kernel("Pad", "opset1", n_in=3, pad_mode="edge")(x, i64(-1, 0), i64(0, 0))


def test_one_hot():
    fn = kernel("OneHot", n_in=4, axis="-1")
    out = fn(i64(0, 2, -1, 3), ax(3), np.float32(5), np.float32(-1))
    assert out.dtype == np.float32
    assert out.tolist() == [[5, -1, -1], [-1, -1, 5], [-1, -1, -1], [-1, -1, -1]]
    out = kernel("OneHot", n_in=4, axis="0")(np.array([[0, 1]]), ax(2), np.int32(1), np.int32(0))
    assert out.shape == (2, 1, 2) and out.tolist() == [[[1, 0]], [[0, 1]]]
    out = kernel("OneHot", n_in=4, axis="1")(np.array([[0, 1]]), ax(2), np.int32(1), np.int32(0))
    assert out.shape == (1, 2, 2) and out.tolist() == [[[1, 0], [0, 1]]]


def test_one_hot16_normalizes_negative_indices_only_when_asked():
    indices, on_off = i64(0, -1, -3, -4, 3), (ax(3), np.float32(1), np.float32(0))
    ignore = kernel("OneHot", "opset16", n_in=4, axis="-1")(indices, *on_off)
    assert ignore.tolist() == [[1, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]]
    fn = kernel("OneHot", "opset16", n_in=4, axis="-1", negative_indices_mode="normalize")
    assert fn(indices, *on_off).tolist() == [[1, 0, 0], [0, 0, 1], [1, 0, 0], [0, 0, 0], [0, 0, 0]]
    with pytest.raises(UnsupportedOperation, match="negative_indices_mode"):
        kernel("OneHot", "opset16", n_in=4, axis="0", negative_indices_mode="wrap")
