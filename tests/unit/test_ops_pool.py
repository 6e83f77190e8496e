"""MaxPool-1/8/14 and AvgPool-1/14/16.

Differential tests against OpenVINO (MaxPool on the CPU plugin and on the reference, which agree;
AvgPool on the CPU plugin only, as the reference cannot evaluate it through ``Node.evaluate``) over
1-D/2-D/3-D data, every ``auto_pad`` and rounding type, pads, strides, dilations, exclude-pad,
MaxPool-8's indices (both index types, several axes) and integer types; and plain tests that need
no OpenVINO.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel
from loopdbg.ops.shape_rules import TensorInfo, infer

RNG = np.random.default_rng(20260417)
AUTO_PADS = ("explicit", "same_upper", "same_lower", "valid")
# (strides, kernel, pads_begin, pads_end, dilations) per spatial axis
WINDOWS = [(2, 2, 0, 0, 1), (2, 3, 1, 1, 2), (3, 2, 1, 0, 1), (1, 3, 1, 1, 2), (2, 2, 1, 1, 1)]
SPATIAL = {1: (9,), 2: (7, 6), 3: (5, 6, 7)}
oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _window(n, w):
    return [[v] * n for v in w]


def _layer(type_, version, **data):
    return Layer(id=1, name="p", type=type_, version=version, data=dict(data))


def _ids(cases):
    return ["-".join(str(v) for v in c[:-1]) + "-s{}k{}p{}{}d{}".format(*c[-1]) for c in cases]


# ---- MaxPool against OpenVINO -----------------------------------------------------------------

MAX1 = [(n, ap, rt, w) for n, ap, rt, w in itertools.product(SPATIAL, AUTO_PADS, ("floor", "ceil"),
                                                               WINDOWS) if w[4] == 1]


@oracle
@pytest.mark.parametrize("n,auto_pad,rounding,window", MAX1, ids=_ids(MAX1))
def test_max_pool1_matches_openvino(tmp_path, n, auto_pad, rounding, window):
    import openvino.opset1 as o1
    from _ov_single_op import P, check
    st, k, pb, pe, _ = _window(n, window)
    check(tmp_path, lambda a: o1.max_pool(a, st, pb, pe, k, rounding, auto_pad),
          [P(_f32(2, 3, *SPATIAL[n]))], backend="ref" if n == 3 else "cpu", version="opset1")


MAX8 = [(n, ap, rt, w) for n, ap, rt, w in itertools.product(SPATIAL, AUTO_PADS,
                                                               ("floor", "ceil", "ceil_torch"),
                                                               WINDOWS)
        if (n == 2 or ap in ("explicit", "same_upper"))]


@oracle
@pytest.mark.parametrize("n,auto_pad,rounding,window", MAX8, ids=_ids(MAX8))
def test_max_pool8_and_14_with_indices_match_openvino(tmp_path, n, auto_pad, rounding, window):
    import openvino.opset8 as o8
    import openvino.opset14 as o14
    from _ov_single_op import P, check
    st, k, pb, pe, di = _window(n, window)
    x = [P(_f32(2, 3, *SPATIAL[n]))]
    axis = (0, 2, -1)[sum(window) % 3]
    if rounding != "ceil_torch":
        check(tmp_path, lambda a: o8.max_pool(a, st, di, pb, pe, k, rounding, auto_pad, "i32",
                                              axis), x, version="opset8")
    check(tmp_path, lambda a: o14.max_pool(a, st, di, pb, pe, k, rounding, auto_pad, "i64",
                                           axis - 1 if axis > 0 else axis), x,
          backend="ref" if n == 1 else "cpu", version="opset14")


@oracle
@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.int64, np.float16])
def test_pooling_keeps_integer_and_half_types(tmp_path, dtype):
    import openvino.opset1 as o1
    import openvino.opset8 as o8
    from _ov_single_op import P, check
    low = 0 if dtype == np.uint8 else -100
    x = [P(RNG.integers(low, 100, (2, 3, 9, 8)).astype(dtype))]
    check(tmp_path, lambda a: o8.max_pool(a, [2, 2], [1, 1], [1, 1], [0, 0], [2, 2]), x)
    for exclude, k in itertools.product((True, False), ([2, 2], [3, 3], [2, 3])):
        check(tmp_path, lambda a, k=k, ex=exclude: o1.avg_pool(a, [1, 1], [1, 1], [1, 0], k, ex),
              x, rtol=1e-3, atol=1e-2)


# ---- AvgPool against OpenVINO -----------------------------------------------------------------

AVG = [(n, ap, rt, ex, w) for n, ap, rt, ex, w in
       itertools.product(SPATIAL, AUTO_PADS, ("floor", "ceil", "ceil_torch"), (True, False),
                         WINDOWS)
       if n == 2 or (ap == "explicit" and w[0] > 1)]


def _avg_ids(cases):
    return [f"{c[0]}d-{c[1]}-{c[2]}-ex{int(c[3])}-" + "s{}k{}p{}{}d{}".format(*c[4])
            for c in cases]


def _check_avg(tmp_path, build, x, version):
    """As ``check``, but where a window holds no input element (ceil rounding lets one lie wholly
    in the padding) the CPU plugin gives NaN (0/0) and loopdbg, like OpenVINO's reference, 0."""
    import _ov_single_op
    path = tmp_path / "op.xml"
    outputs = _ov_single_op.run_openvino(build, [_ov_single_op.P(x)], "cpu", path)
    if outputs is None:                  # recorded for a batch (_ov_batch.py)
        return
    [expected] = outputs
    layer = _ov_single_op.layer_from_ir(path)
    assert layer.version == version
    kernel, _ = make_kernel(layer)
    got = kernel(x)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    empty = np.isnan(expected)
    assert np.all(got[empty] == 0)
    np.testing.assert_allclose(got[~empty], expected[~empty], rtol=1e-5, atol=1e-5)


@oracle
@pytest.mark.parametrize("n,auto_pad,rounding,exclude,window", AVG, ids=_avg_ids(AVG))
def test_avg_pool_matches_openvino(tmp_path, n, auto_pad, rounding, exclude, window):
    import openvino.opset1 as o1
    import openvino.opset14 as o14
    import openvino.opset16 as o16
    st, k, pb, pe, di = _window(n, window)
    x = _f32(2, 3, *SPATIAL[n])
    if rounding != "ceil_torch" and window[4] == 1:
        _check_avg(tmp_path, lambda a: o1.avg_pool(a, st, pb, pe, k, exclude, rounding,
                                                   auto_pad), x, "opset1")
    if window[4] == 1:
        _check_avg(tmp_path, lambda a: o14.avg_pool(a, st, pb, pe, k, exclude, rounding,
                                                    auto_pad), x, "opset14")
    _check_avg(tmp_path, lambda a: o16.avg_pool(a, st, pb, pe, k, exclude, rounding, auto_pad,
                                                di), x, "opset16")


# ---- AdaptiveAvgPool, AdaptiveMaxPool against OpenVINO ----------------------------------------

ADAPTIVE = [((9,), (4,)), ((9,), (12,)), ((7, 6), (3, 4)), ((7, 6), (7, 6)), ((4, 5), (6, 7)),
            ((5, 6, 7), (2, 3, 4)), ((3, 8, 5), (3, 3, 2))]


@oracle
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("spatial,outs", ADAPTIVE, ids=[f"{a}to{b}" for a, b in ADAPTIVE])
def test_adaptive_pools_match_openvino(tmp_path, spatial, outs, dtype):
    """Overlapping and growing bins; small integers make ties for the max and halves for the
    mean (rounded to nearest, ties to even, as the CPU plugin does)."""
    import openvino.opset8 as o8
    from _ov_single_op import C, P, check
    x = (_f32(2, 3, *spatial) if dtype == np.float32 else
         RNG.integers(0, 4, (2, 3, *spatial)).astype(dtype))
    size = C(np.array(outs, dtype=np.int64))
    check(tmp_path, lambda a, b: o8.adaptive_avg_pool(a, b), [P(x), size], version="opset8")
    # i32 indices only: the CPU plugin cannot compile i64 ones, the reference cannot evaluate it
    check(tmp_path, lambda a, b: o8.adaptive_max_pool(a, b, "i32"), [P(x), size])


# ---- without OpenVINO -------------------------------------------------------------------------

_ATTRS = dict(strides="2,2", pads_begin="1,1", pads_end="1,1", kernel="3,3")


def test_max_pool_indices_are_flat_from_the_axis_and_never_point_into_padding():
    x = np.arange(2 * 2 * 4 * 4, dtype=np.float32).reshape(2, 2, 4, 4)
    x[1, 1, 0, 0] = 1000.0                                  # a maximum in a corner window
    whole = None
    for axis, modulus in ((0, x.size), (1, x[0].size), (2, 16), (-1, 4)):
        kernel, n_out = make_kernel(_layer("MaxPool", "opset8", dilations="1,1", axis=str(axis),
                                           index_element_type="i32", **_ATTRS))
        values, indices = kernel(x)
        assert n_out == 2 and indices.dtype == np.int32 and values.shape == (2, 2, 2, 2)
        if whole is None:
            whole = indices
            np.testing.assert_array_equal(np.take(x.reshape(-1), whole), values)
        np.testing.assert_array_equal(indices, whole % modulus)
    assert values[1, 1, 0, 0] == 1000.0 and whole[1, 1, 0, 0] == 3 * 16


def test_avg_pool_divisors_follow_exclude_pad():
    x = np.ones((1, 1, 3, 3), dtype=np.float32)
    for exclude, corner in (("true", 1.0), ("false", 4 / 9)):
        kernel, _ = make_kernel(_layer("AvgPool", "opset1", **{"exclude-pad": exclude},
                                       **_ATTRS))
        assert kernel(x)[0, 0, 0, 0] == pytest.approx(corner)


def test_a_window_wholly_in_the_padding_averages_to_zero():
    kernel, _ = make_kernel(_layer("AvgPool", "opset1", strides="2", pads_begin="1",
                                   pads_end="1", kernel="2", rounding_type="ceil",
                                   **{"exclude-pad": "true"}))
    out = kernel(np.ones((1, 1, 9), dtype=np.float32))
    assert out.shape == (1, 1, 6) and out[0, 0, -1] == 0 and np.all(out[0, 0, :-1] == 1)


def test_the_shape_rules_give_the_output_shapes():
    ceil = dict(strides="2", pads_begin="1", pads_end="1", kernel="2", rounding_type="ceil")
    [info] = infer("AvgPool", [TensorInfo("f32", (1, 3, 9))], {**ceil, "exclude-pad": "true"},
                   [None], 1, version="opset1")
    assert info == TensorInfo("f32", (1, 3, 6))
    torch = dict(ceil, rounding_type="ceil_torch", dilations="1")
    values, indices = infer("MaxPool", [TensorInfo("f32", (1, 3, 9))],
                            {**torch, "index_element_type": "i32"}, [None], 2, version="opset14")
    assert values == TensorInfo("f32", (1, 3, 5)) and indices == TensorInfo("i32", (1, 3, 5))
    [info] = infer("MaxPool", [TensorInfo("f16", (2, 4, -1, 8))],
                   dict(_ATTRS, auto_pad="same_upper"), [None], 1, version="opset1")
    assert info == TensorInfo("f16", (2, 4, -1, 4))


def test_adaptive_max_pool_ties_go_to_the_first_element_in_row_major_order():
    x = np.zeros((1, 1, 4, 4), dtype=np.float32)
    x[0, 0, 1, 3] = x[0, 0, 3, 0] = 5.0
    kernel, n_out = make_kernel(_layer("AdaptiveMaxPool", "opset8", index_element_type="i32"))
    values, indices = kernel(x, np.array([1, 1]))
    assert n_out == 2 and values[0, 0, 0, 0] == 5 and indices[0, 0, 0, 0] == 7
    values, indices = kernel(np.zeros((1, 1, 3, 3), np.float32), np.array([2, 2]))
    np.testing.assert_array_equal(indices[0, 0], [[0, 1], [3, 4]])
    kernel, _ = make_kernel(_layer("AdaptiveMaxPool", "opset8", index_element_type="i64"))
    assert kernel(x, np.array([2, 2]))[1].dtype == np.int64
    avg, _ = make_kernel(_layer("AdaptiveAvgPool", "opset8"))
    np.testing.assert_allclose(avg(np.arange(5.0).reshape(1, 1, 5), np.array([2])),
                               [[[1.0, 3.0]]])                  # bins [0, 3) and [2, 5)
    with pytest.raises(ValueError, match="does not give one size per spatial axis"):
        avg(np.zeros((1, 1, 5), np.float32), np.array([2, 2]))


def test_bad_attributes_are_one_sentence():
    with pytest.raises(UnsupportedOperation, match="rounding_type='ceil_torch' is not one of"):
        make_kernel(_layer("MaxPool", "opset8", rounding_type="ceil_torch", dilations="1,1",
                           **_ATTRS))
    with pytest.raises(UnsupportedOperation, match="index_element_type='f32' must be one of"):
        make_kernel(_layer("MaxPool", "opset8", index_element_type="f32", dilations="1,1",
                           **_ATTRS))
    with pytest.raises(UnsupportedOperation, match="'exclude-pad' is missing"):
        make_kernel(_layer("AvgPool", "opset1", **_ATTRS))
    kernel, _ = make_kernel(_layer("MaxPool", "opset1", **_ATTRS))
    with pytest.raises(ValueError, match="kernel has 2 values for 1 spatial axes"):
        kernel(_f32(1, 1, 5))
