"""DeformableConvolution-1/8 and BinaryConvolution-1.

DeformableConvolution against OpenVINO's CPU plugin (its reference cannot be evaluated through
``Node.evaluate``): groups, deformable groups, strides, dilations, pads, auto_pad, the mask and
``bilinear_interpolation_pad``, with offsets that move taps off the image. BinaryConvolution
against a direct sum over each window as the specification words it; the CPU plugin departs
from the specification (see the last oracle test). Plain tests need no OpenVINO.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from loopdbg.errors import UnsupportedOperation
from loopdbg.ir.model import Layer
from loopdbg.ops.registry import make_kernel
from loopdbg.ops.shape_rules import TensorInfo, infer

RNG = np.random.default_rng(20260420)
oracle = pytest.mark.oracle
GROUPS = [(1, 1), (2, 1), (1, 2), (2, 2), (4, 2)]
WINDOWS = [([1, 1], [1, 1], [1, 1], [1, 1], "explicit"),
           ([2, 1], [1, 2], [0, 1], [1, 0], "explicit"),
           ([2, 2], [1, 1], [0, 0], [0, 0], "same_upper"),
           ([1, 2], [2, 1], [0, 0], [0, 0], "valid")]


def _f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _out(size, k, s, d, b, e, auto_pad):
    if auto_pad == "same_upper":
        return -(-size // s)
    if auto_pad == "valid":
        b = e = 0
    return (size + b + e - (k - 1) * d - 1) // s + 1


CASES = list(itertools.product(GROUPS, range(len(WINDOWS))))


@oracle
@pytest.mark.parametrize("groups,window", CASES, ids=[f"g{g}dg{d}-w{w}" for (g, d), w in CASES])
def test_deformable_convolution_matches_openvino(tmp_path, groups, window):
    import openvino.opset1 as o1
    import openvino.opset8 as o8
    from _ov_single_op import C, P, check
    g, dg = groups
    st, di, pb, pe, auto_pad = WINDOWS[window]
    x, w = _f32(2, 4, 6, 7), _f32(4, 4 // g, 3, 3)
    outs = [_out(n, 3, s, d, b, e, auto_pad) for n, s, d, b, e in zip((6, 7), st, di, pb, pe)]
    off = _f32(2, dg * 18, *outs, scale=2.0)          # moves some taps off the image
    mask = RNG.random((2, dg * 9, *outs)).astype(np.float32)
    check(tmp_path, lambda a, b, c: o1.deformable_convolution(a, b, c, st, pb, pe, di, auto_pad,
                                                              g, dg),
          [P(x), P(off), C(w)], version="opset1")
    for pad in (False, True):
        check(tmp_path, lambda a, b, c, pad=pad: o8.deformable_convolution(
            a, b, c, st, pb, pe, di, None, auto_pad, g, dg, pad),
            [P(x), P(off), C(w)], version="opset8")
        check(tmp_path, lambda a, b, c, m, pad=pad: o8.deformable_convolution(
            a, b, c, st, pb, pe, di, m, auto_pad, g, dg, pad),
            [P(x), P(off), C(w), P(mask)], version="opset8")


@oracle
@pytest.mark.parametrize("window", range(3))
def test_binary_convolution_agrees_with_the_cpu_plugin_where_it_keeps_the_specification(
        tmp_path, window):
    """The CPU plugin reads each byte of u1 filter bits least significant bit first (OpenVINO's
    u1 layout and its reference read the most significant first) and handles only 0/1 data,
    a pad_value of 1 and channel counts that are multiples of 8 as the specification says. Under
    those conditions, with each byte's bits reversed for it, it agrees with loopdbg."""
    import openvino as ov
    import openvino.opset1 as o1
    from _ov_single_op import C, P, check
    st, di, pb, pe, auto_pad = WINDOWS[window]
    x = RNG.integers(0, 2, (2, 8, 6, 7)).astype(np.float32)
    w = RNG.integers(0, 2, (4, 8, 3, 3)).astype(np.uint8)

    def build(a, _):
        bits = w.reshape(-1, 8)[:, ::-1].reshape(-1).tolist()
        c = ov.op.Constant(ov.Type.u1, ov.Shape(list(w.shape)), bits)
        return o1.binary_convolution(a, c, st, pb, pe, di, "xnor-popcount", 1.0, auto_pad)

    check(tmp_path, build, [P(x), C(w)], version="opset1")


# ---- without OpenVINO -------------------------------------------------------------------------


def _kernel(type_, version="opset1", **data):
    layer = Layer(id=1, name="c", type=type_, version=version,
                  data={k: str(v) for k, v in data.items()})
    return make_kernel(layer)[0]


def _direct_binary(x, w, st, di, pb, pe, pad_value):
    """The specification, one window at a time: +1 per equal (input, bit) pair, -1 otherwise."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.full((n, c, h + pb[0] + pe[0], wd + pb[1] + pe[1]), pad_value, x.dtype)
    xp[:, :, pb[0]:pb[0] + h, pb[1]:pb[1] + wd] = x
    oh = (xp.shape[2] - (kh - 1) * di[0] - 1) // st[0] + 1
    ow = (xp.shape[3] - (kw - 1) * di[1] - 1) // st[1] + 1
    y = np.zeros((n, o, oh, ow), x.dtype)
    for i, j in itertools.product(range(oh), range(ow)):
        patch = xp[:, :, i * st[0]:i * st[0] + (kh - 1) * di[0] + 1:di[0],
                   j * st[1]:j * st[1] + (kw - 1) * di[1] + 1:di[1]]
        same = patch[:, None] == w[None].astype(x.dtype)
        y[:, :, i, j] = np.where(same, 1, -1).sum(axis=(2, 3, 4))
    return y


@pytest.mark.parametrize("pad_value", [0.0, 1.0, 0.5])
def test_binary_convolution_is_the_specification_window_by_window(pad_value):
    x = RNG.integers(0, 2, (2, 3, 6, 7)).astype(np.float32)
    x[0, 0, 0, :3] = [0.5, -1.0, 2.0]                 # values that match no bit
    w = RNG.integers(0, 2, (4, 3, 3, 2)).astype(np.uint8)
    kernel = _kernel("BinaryConvolution", strides="2,1", dilations="1,2", pads_begin="1,0",
                     pads_end="0,1", mode="xnor-popcount", pad_value=pad_value)
    np.testing.assert_array_equal(kernel(x, w), _direct_binary(x, w, [2, 1], [1, 2], [1, 0],
                                                               [0, 1], pad_value))


def test_deformable_convolution_without_offsets_is_a_convolution():
    x, w = _f32(1, 4, 6, 7), _f32(6, 2, 3, 3)
    attrs = {"strides": "1,2", "dilations": "2,1", "pads_begin": "1,1", "pads_end": "2,0"}
    deform = _kernel("DeformableConvolution", "opset8", group=2, deformable_group=2, **attrs)
    plain = _kernel("GroupConvolution", **attrs)
    expected = plain(x, w.reshape(2, 3, 2, 3, 3))
    offsets = np.zeros((1, 2 * 18, *expected.shape[2:]), np.float32)
    np.testing.assert_allclose(deform(x, offsets, w), expected, rtol=1e-5, atol=1e-5)
    half = np.full((1, 18, *expected.shape[2:]), 0.5, np.float32)
    np.testing.assert_allclose(deform(x, offsets, w, half), expected * 0.5, rtol=1e-5,
                               atol=1e-5)


def test_the_shape_rules_give_the_output_shapes():
    attrs = {"strides": "2,2", "dilations": "1,1", "pads_begin": "1,1", "pads_end": "1,1",
             "group": "1", "deformable_group": "1"}
    [info] = infer("DeformableConvolution", [TensorInfo("f32", (1, 4, 9, 8)),
                                             TensorInfo("f32", (1, 18, 5, 4)),
                                             TensorInfo("f32", (6, 4, 3, 3))], attrs,
                   [None, None, None], 1)
    assert info == TensorInfo("f32", (1, 6, 5, 4))
    [info] = infer("BinaryConvolution", [TensorInfo("f32", (1, 8, 9, 8)),
                                         TensorInfo("u1", (4, 8, 3, 3))],
                   {"strides": "1,1", "dilations": "1,1", "pads_begin": "0,0",
                    "pads_end": "0,0", "mode": "xnor-popcount", "pad_value": "1",
                    "auto_pad": "same_upper"}, [None, None], 1)
    assert info == TensorInfo("f32", (1, 4, 9, 8))


def test_bad_inputs_are_one_sentence():
    with pytest.raises(UnsupportedOperation, match="mode='popcount' is not one of"):
        _kernel("BinaryConvolution", strides="1,1", dilations="1,1", mode="popcount",
                pad_value=0)
    deform = _kernel("DeformableConvolution", strides="1,1", dilations="1,1", pads_begin="0,0",
                     pads_end="0,0", group=1, deformable_group=1)
    with pytest.raises(ValueError, match="offsets of 9 channels do not fit 1 deformable groups"):
        deform(_f32(1, 2, 5, 5), _f32(1, 9, 3, 3), _f32(3, 2, 3, 3))
