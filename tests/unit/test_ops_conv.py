"""Convolution-1, GroupConvolution-1, ConvolutionBackpropData-1, GroupConvolutionBackpropData-1.

Differential tests against OpenVINO's CPU plugin (``_ov_single_op``; OpenVINO's reference cannot
evaluate these ops through ``Node.evaluate``) over 1-D/2-D/3-D data, every ``auto_pad``, pads,
strides, dilations, output_padding and output_shape, f32 and integer types; and plain tests
against a direct sum over output pixels, which need no OpenVINO.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel
from loopdbg.ops.shape_rules import TensorInfo, infer

RNG = np.random.default_rng(20260416)
AUTO_PADS = ("explicit", "same_upper", "same_lower", "valid")
# (strides, dilations, pads_begin, pads_end, kernel) per spatial axis
WINDOWS = [(1, 1, 0, 0, 3), (2, 1, 1, 0, 2), (2, 2, 0, 1, 3), (3, 1, 2, 2, 1)]
SPATIAL = {1: (9,), 2: (7, 6), 3: (5, 6, 7)}


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _window(n, w):
    return [[v] * n for v in w]


def _layer(type_, **data):
    return Layer(id=1, name="c", type=type_, version="opset1",
                 data={k: str(v) for k, v in data.items()})


# ---- against OpenVINO -------------------------------------------------------------------------

oracle = pytest.mark.oracle
pytestmark = pytest.mark.ov_batch
CASES = list(itertools.product(SPATIAL, AUTO_PADS, WINDOWS))


def _ids(cases):
    return [f"{c[0]}d-{c[1]}-s{c[2][0]}d{c[2][1]}p{c[2][2]}{c[2][3]}k{c[2][4]}" for c in cases]


@oracle
@pytest.mark.parametrize("n,auto_pad,window", CASES, ids=_ids(CASES))
def test_convolution_matches_openvino(tmp_path, n, auto_pad, window):
    import openvino.opset1 as o1
    from _ov_single_op import C, P, check
    st, di, pb, pe, k = _window(n, window)
    x, w = _f32(2, 4, *SPATIAL[n]), _f32(3, 4, *k)
    check(tmp_path, lambda a, b: o1.convolution(a, b, st, pb, pe, di, auto_pad), [P(x), C(w)],
          version="opset1")


@oracle
@pytest.mark.parametrize("n,auto_pad,window", CASES, ids=_ids(CASES))
def test_group_convolution_matches_openvino(tmp_path, n, auto_pad, window):
    import openvino.opset1 as o1
    from _ov_single_op import C, P, check
    st, di, pb, pe, k = _window(n, window)
    x, w = _f32(2, 4, *SPATIAL[n]), _f32(2, 3, 2, *k)
    check(tmp_path, lambda a, b: o1.group_convolution(a, b, st, pb, pe, di, auto_pad),
          [P(x), C(w)])


@oracle
def test_depthwise_convolution_with_filters_fed_at_run_time(tmp_path):
    import openvino.opset1 as o1
    from _ov_single_op import P, check
    x, w = _f32(1, 6, 11, 9), _f32(6, 1, 1, 3, 3)
    check(tmp_path, lambda a, b: o1.group_convolution(a, b, [1, 2], [1, 1], [1, 1], [1, 1]),
          [P(x), P(w)])


@oracle
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64, np.float16])
def test_convolutions_keep_the_element_type(tmp_path, dtype):
    import openvino.opset1 as o1
    from _ov_single_op import C, P, check
    # values whose sums of 18 products fit the narrowest type (int8: |sum| <= 18 * 2 * 2 < 128),
    # drawn from a generator of the test's own: under xdist the module's RNG is shared by tests
    # in another order, and an int8 sum that overflows is the runtime's choice, not a value
    rng = np.random.default_rng(85)
    narrow = np.dtype(dtype).itemsize == 1
    low = 0 if dtype == np.uint8 else (-2 if narrow else -4)
    x = rng.integers(low, 3 if narrow else 5, (1, 2, 6, 5)).astype(dtype)
    w = rng.integers(low, 3, (2, 2, 3, 3)).astype(dtype)
    tol = dict(rtol=1e-3, atol=1e-2)
    check(tmp_path, lambda a, b: o1.convolution(a, b, [1, 1], [1, 1], [0, 1], [1, 1]),
          [P(x), C(w)], **tol)
    check(tmp_path, lambda a, b: o1.group_convolution(a, b, [2, 1], [0, 0], [0, 0], [1, 1]),
          [P(x), C(w[:, :1, None])], **tol)
    check(tmp_path, lambda a, b: o1.convolution_backprop_data(a, b, [2, 2]), [P(x), C(w)],
          **tol)


BACKPROP = [(n, ap, w, op) for n, ap, w in CASES for op in (0, 1)
            if op == 0 or (w[0] > 1 and ap == "explicit")]


@oracle
@pytest.mark.parametrize("n,auto_pad,window,out_pad", BACKPROP,
                         ids=[f"{i}-op{c[3]}" for i, c in zip(_ids(BACKPROP), BACKPROP)])
def test_convolution_backprop_data_matches_openvino(tmp_path, n, auto_pad, window, out_pad):
    import openvino.opset1 as o1
    from _ov_single_op import C, P, check
    st, di, pb, pe, k = _window(n, window)
    x, w, wg = _f32(2, 4, *SPATIAL[n]), _f32(4, 3, *k), _f32(2, 2, 3, *k)
    op_ = [out_pad] * n
    check(tmp_path, lambda a, b: o1.convolution_backprop_data(a, b, st, None, pb, pe, di,
                                                                 auto_pad, op_), [P(x), C(w)])
    check(tmp_path, lambda a, b: o1.group_convolution_backprop_data(a, b, st, None, pb, pe, di,
                                                                       auto_pad, op_),
          [P(x), C(wg)])


OUTPUT_SHAPES = [(n, ap, w, grow) for n, ap, w in CASES[::2] for grow in (0, 1, 3)]


@oracle
@pytest.mark.parametrize("n,auto_pad,window,grow", OUTPUT_SHAPES,
                         ids=[f"{i}-g{c[3]}" for i, c in zip(_ids(OUTPUT_SHAPES), OUTPUT_SHAPES)])
def test_backprop_data_with_an_output_shape_matches_openvino(tmp_path, n, auto_pad, window,
                                                             grow):
    """output_shape smaller than, equal to and larger than the full result; with explicit pads
    the output begins at pads_begin (OpenVINO's behaviour, noted in the op table)."""
    import openvino.opset1 as o1
    from _ov_single_op import C, P, check
    st, di, pb, pe, k = _window(n, window)
    sizes = SPATIAL[n]
    full = [s * (z - 1) + (kk - 1) * d + 1 for s, z, kk, d in zip(st, sizes, k, di)]
    shape = np.array([f - 2 + grow for f in full], dtype=np.int64)
    x, w, wg = _f32(1, 4, *sizes), _f32(4, 2, *k), _f32(2, 2, 1, *k)
    check(tmp_path, lambda a, b, c: o1.convolution_backprop_data(a, b, st, c, pb, pe, di,
                                                                    auto_pad),
          [P(x), C(w), C(shape)])
    check(tmp_path, lambda a, b, c: o1.group_convolution_backprop_data(a, b, st, c, pb, pe, di,
                                                                          auto_pad),
          [P(x), C(wg), C(shape.astype(np.int32))])


# ---- without OpenVINO -------------------------------------------------------------------------


def _direct_conv(x, w, st, di, pb, pe):
    """A 2-D convolution as the definition reads: one sum per output pixel."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.zeros((n, c, h + pb[0] + pe[0], wd + pb[1] + pe[1]), x.dtype)
    xp[:, :, pb[0]:pb[0] + h, pb[1]:pb[1] + wd] = x
    oh = (xp.shape[2] - (kh - 1) * di[0] - 1) // st[0] + 1
    ow = (xp.shape[3] - (kw - 1) * di[1] - 1) // st[1] + 1
    y = np.zeros((n, o, oh, ow), np.float64)
    for i, j in itertools.product(range(oh), range(ow)):
        patch = xp[:, :, i * st[0]:i * st[0] + (kh - 1) * di[0] + 1:di[0],
                   j * st[1]:j * st[1] + (kw - 1) * di[1] + 1:di[1]]
        y[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w)
    return y


@pytest.mark.parametrize("st,di,pb,pe", [([1, 1], [1, 1], [0, 0], [0, 0]),
                                         ([2, 3], [2, 1], [1, 0], [2, 1])])
def test_convolution_is_the_sum_over_each_window(st, di, pb, pe):
    x, w = _f32(2, 3, 9, 8), _f32(4, 3, 3, 2)
    text = {name: ",".join(map(str, v)) for name, v in
            (("strides", st), ("dilations", di), ("pads_begin", pb), ("pads_end", pe))}
    kernel, _ = make_kernel(_layer("Convolution", **text))
    np.testing.assert_allclose(kernel(x, w), _direct_conv(x, w, st, di, pb, pe), rtol=1e-5,
                               atol=1e-5)


def test_an_int8_convolution_is_the_exact_sum_over_each_window():
    """int8 against the sums themselves: OpenVINO's CPU plugin answers an int8 Convolution
    through its quantized path, which differs from the sums on small values (e.g. -4 where
    the window's sum is -1), so it is no oracle for this type."""
    rng = np.random.default_rng(85)
    x = rng.integers(-2, 3, (1, 2, 6, 5)).astype(np.int8)
    w = rng.integers(-2, 3, (2, 2, 3, 3)).astype(np.int8)
    st, di, pb, pe = [1, 1], [1, 1], [1, 1], [0, 1]
    text = {name: ",".join(map(str, v)) for name, v in
            (("strides", st), ("dilations", di), ("pads_begin", pb), ("pads_end", pe))}
    kernel, _ = make_kernel(_layer("Convolution", **text))
    got = kernel(x, w)
    assert got.dtype == np.int8
    want = _direct_conv(x.astype(np.float64), w.astype(np.float64), st, di, pb, pe)
    np.testing.assert_array_equal(got, want.astype(np.int8))
    assert got[0, 0, 0, :5].tolist() == [-1, 2, 0, 2, -5]


def test_group_convolution_is_one_convolution_per_group():
    x, w = _f32(1, 6, 7, 7), _f32(3, 4, 2, 3, 3)
    attrs = dict(strides="1,1", dilations="1,1", pads_begin="1,1", pads_end="1,1")
    grouped, _ = make_kernel(_layer("GroupConvolution", **attrs))
    plain, _ = make_kernel(_layer("Convolution", **attrs))
    expected = np.concatenate([plain(x[:, 2 * g:2 * g + 2], w[g]) for g in range(3)], axis=1)
    np.testing.assert_allclose(grouped(x, w), expected, rtol=1e-6, atol=1e-6)


def test_backprop_data_is_the_adjoint_of_convolution():
    """<conv(x), y> == <x, backprop(y)>: the transposed convolution is the adjoint."""
    attrs = dict(strides="2,1", dilations="1,2", pads_begin="1,0", pads_end="0,1")
    x, w = RNG.standard_normal((1, 3, 9, 8)), RNG.standard_normal((4, 3, 3, 2))
    conv, _ = make_kernel(_layer("Convolution", **attrs))
    back, _ = make_kernel(_layer("ConvolutionBackpropData", **attrs))
    y = conv(x, w)
    dy = RNG.standard_normal(y.shape)
    dx = back(dy, w, np.array(x.shape[2:]))          # the filter layout is [C_in, C_out, ...]
    assert dx.shape == x.shape
    np.testing.assert_allclose(np.vdot(y, dy), np.vdot(x, dx), rtol=1e-10)


def test_a_crnn_sized_convolution_is_fast():
    conv, _ = make_kernel(_layer("Convolution", strides="1,1", dilations="1,1",
                                 pads_begin="1,1", pads_end="1,1"))
    x, w = _f32(1, 64, 32, 100), _f32(128, 64, 3, 3)
    start = time.perf_counter()
    assert conv(x, w).shape == (1, 128, 32, 100)
    assert time.perf_counter() - start < 2.0


def test_the_shape_rules_give_the_output_shapes():
    f32 = "f32"
    [info] = infer("Convolution", [TensorInfo(f32, (1, 3, 10, 9)), TensorInfo(f32, (5, 3, 3, 3))],
                   {"strides": "2,2", "dilations": "1,1", "pads_begin": "0,0",
                    "pads_end": "0,0", "auto_pad": "same_upper"}, [None, None], 1)
    assert info == TensorInfo(f32, (1, 5, 5, 5))
    [info] = infer("GroupConvolution", [TensorInfo(f32, (2, 4, -1)), TensorInfo(f32, (2, 3, 2, 3))],
                   {"strides": "1", "dilations": "1", "pads_begin": "1", "pads_end": "1"},
                   [None, None], 1)
    assert info == TensorInfo(f32, (2, 6, -1))
    [info] = infer("ConvolutionBackpropData",
                   [TensorInfo(f32, (1, 4, 5, 5)), TensorInfo(f32, (4, 2, 3, 3))],
                   {"strides": "2,2", "dilations": "1,1", "pads_begin": "1,1",
                    "pads_end": "1,1", "output_padding": "1,1"}, [None, None], 1)
    assert info == TensorInfo(f32, (1, 2, 10, 10))
    [info] = infer("GroupConvolutionBackpropData",
                   [TensorInfo(f32, (1, 4, 5, 5)), TensorInfo(f32, (2, 2, 3, 3, 3)),
                    TensorInfo("i64", (2,))],
                   {"strides": "2,2", "dilations": "1,1", "pads_begin": "1,1",
                    "pads_end": "1,1"}, [None, None, np.array([12, 11])], 1)
    assert info == TensorInfo(f32, (1, 6, 12, 11))


def test_bad_attributes_and_inputs_are_one_sentence():
    with pytest.raises(UnsupportedOperation, match="auto_pad='sideways' is not one of"):
        make_kernel(_layer("Convolution", strides="1", dilations="1", auto_pad="sideways"))
    with pytest.raises(UnsupportedOperation, match="strides='0' must hold positive integers"):
        make_kernel(_layer("Convolution", strides="0", dilations="1"))
    conv, _ = make_kernel(_layer("Convolution", strides="1,1", dilations="1,1",
                                 pads_begin="0,0", pads_end="0,0"))
    with pytest.raises(ValueError, match="expect 3 input channels, the data has 2"):
        conv(_f32(1, 2, 5, 5), _f32(4, 3, 3, 3))
    with pytest.raises(ValueError, match="longer than the padded input"):
        conv(_f32(1, 3, 2, 5), _f32(4, 3, 3, 3))
    with pytest.raises(ValueError, match="strides has 2 values for 1 spatial axes"):
        conv(_f32(1, 3, 5), _f32(4, 3, 3))
