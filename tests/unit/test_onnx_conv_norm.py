"""ONNX Conv, ConvTranspose and LayerNormalization on loopdbg's own kernels give onnx.reference's
values, over the attributes (groups, dilations, strides, pads, auto_pad, output_shape, axis)
and float types."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import _onnx_models as om  # noqa: E402
from loopdbg.engine import Engine  # noqa: E402
from loopdbg.ir.onnx_reader import from_proto  # noqa: E402
from loopdbg.ops.registry import lookup  # noqa: E402

TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
         np.float16: TensorProto.FLOAT16}


def _check(op_type, x, inits, attrs, dtype, rtol=1e-5, opset=17):
    names = ["x"] + [n for n, _ in inits]
    node = helper.make_node(op_type, names, ["y"], **attrs)
    m = om.model([node], [om.vi("x", TYPES[dtype], list(x.shape))],
                 [om.vi("y", TYPES[dtype], None)], opset=opset,
                 inits=[onnx.numpy_helper.from_array(v, n) for n, v in inits])
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    got = Engine(from_proto(m)).run_to_end({"x": x}).outputs["y"]
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 2e-2 if dtype == np.float16 else rtol
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


def test_the_kernels_are_loopdbgs_own():
    for t in ("onnx.Conv", "onnx.ConvTranspose", "onnx.LayerNormalization"):
        assert lookup(t, "opset17").factory.__module__ != "loopdbg.ops.onnx_reference"


CONV_CASES = [
    dict(),
    dict(pads=[1, 1, 1, 1]),
    dict(pads=[0, 1, 2, 1], strides=[2, 1]),
    dict(dilations=[2, 2], pads=[2, 2, 2, 2]),
    dict(group=2, pads=[1, 1, 1, 1]),
    dict(group=4, strides=[2, 2]),                     # depthwise
    dict(auto_pad="SAME_UPPER", strides=[2, 2]),
    dict(auto_pad="SAME_LOWER", strides=[2, 2]),
    dict(auto_pad="VALID", dilations=[1, 2]),
    dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("attrs", CONV_CASES, ids=lambda a: ",".join(map(str, a.items())) or "-")
@pytest.mark.parametrize("bias", [False, True])
def test_conv_2d(dtype, attrs, bias):
    rng = np.random.default_rng(0)
    g = attrs.get("group", 1)
    x = rng.standard_normal((2, 4, 7, 6)).astype(dtype)
    w = rng.standard_normal((6 if g != 4 else 4, 4 // g, 3, 3)).astype(dtype)
    inits = [("w", w)] + ([("b", rng.standard_normal(w.shape[0]).astype(dtype))] if bias else [])
    _check("Conv", x, inits, attrs, dtype)


@pytest.mark.parametrize("shape, kernel, attrs", [
    ((1, 3, 10), (2, 3, 3), dict(pads=[1, 2], strides=[2])),
    ((1, 2, 4, 5, 3), (3, 2, 2, 3, 2), dict(pads=[1, 0, 1, 0, 1, 1], dilations=[1, 2, 1])),
])
def test_conv_1d_and_3d(shape, kernel, attrs):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    _check("Conv", x, [("w", rng.standard_normal(kernel).astype(np.float32))], attrs, np.float32)


@pytest.mark.parametrize("attrs", [
    dict(),
    dict(strides=[2, 2]),
    dict(strides=[2, 2], pads=[1, 1, 1, 1]),
    dict(strides=[2, 2], output_padding=[1, 1]),
    dict(strides=[3, 2], output_shape=[12, 7]),
    dict(auto_pad="SAME_UPPER", strides=[3, 2], output_shape=[10, 6]),
    dict(auto_pad="SAME_LOWER", strides=[3, 2], output_shape=[10, 6]),
    dict(dilations=[2, 2]),
    dict(auto_pad="SAME_UPPER", strides=[2, 2]),
    dict(auto_pad="SAME_LOWER", strides=[2, 2]),
], ids=lambda a: ",".join(map(str, a.items())) or "-")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_transpose_2d(attrs, dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4, 3)).astype(dtype)
    w = rng.standard_normal((3, 2, 3, 3)).astype(dtype)
    b = rng.standard_normal(2).astype(dtype)
    _check("ConvTranspose", x, [("w", w), ("b", b)], attrs, dtype)


@pytest.mark.parametrize("axis", [-1, -2, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_normalization(axis, dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 5)).astype(dtype)
    shape = x.shape[axis:] if axis < 0 else x.shape[axis:]
    inits = [("s", rng.standard_normal(shape).astype(dtype)),
             ("b", rng.standard_normal(shape).astype(dtype))]
    _check("LayerNormalization", x, inits, dict(axis=axis, epsilon=1e-3), dtype, rtol=1e-6)


def test_layer_normalization_gives_mean_and_inverse_deviation():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    node = helper.make_node("LayerNormalization", ["x", "s"], ["y", "mean", "inv"], axis=1)
    m = om.model([node], [om.vi("x", TensorProto.FLOAT, [3, 4])],
                 [om.vi(n, TensorProto.FLOAT, None) for n in ("y", "mean", "inv")],
                 inits=[onnx.numpy_helper.from_array(np.ones(4, np.float32), "s")])
    want = ReferenceEvaluator(m).run(None, {"x": x})
    got = Engine(from_proto(m)).run_to_end({"x": x}).outputs
    for name, w in zip(("y", "mean", "inv"), want):
        np.testing.assert_allclose(got[name], w, rtol=1e-6, atol=1e-6)
        assert got[name].shape == w.shape


def test_one_layer_normalization_kernel_over_changing_shapes_and_types():
    """A loop body's LayerNormalization sees a new sequence length at each iteration: what the
    kernel keeps per (shape, dtype) gives each the values a fresh kernel gives, and an axis out
    of X's rank is refused every time, not kept."""
    from loopdbg.ir.model import Layer
    from loopdbg.ops.registry import make_kernel

    def kernel():
        layer = Layer(1, "ln", "onnx.LayerNormalization", "opset17",
                      data={"axis": -2, "epsilon": 1e-3}, outputs=(None, None, None))
        return make_kernel(layer)[0]

    rng = np.random.default_rng(5)
    kept = kernel()
    scale, bias = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    for t in (3, 5, 3, 1, 5):
        for dtype in (np.float32, np.float64, np.float32):
            x = rng.standard_normal((2, t, 4, 6)).astype(dtype)
            s, b = scale.astype(dtype), bias.astype(dtype)
            for got, want in zip(kept(x, s, b), kernel()(x, s, b)):
                assert got.dtype == want.dtype and got.shape == want.shape
                assert np.array_equal(got, want)
        with pytest.raises(ValueError, match="axis=-2 is out of range for X of rank 1"):
            kept(np.ones(t, np.float32), np.ones(t, np.float32))


def test_layer_normalizations_of_the_same_attributes_share_their_layout(monkeypatch):
    """A decoder's blocks each see a new sequence length at each iteration: the first block's
    LayerNormalization works out what follows from the shape, the others of the same axis and
    epsilon find it (args.SHAPES); another epsilon works out its own. A Scale or B broadcast from
    fewer dimensions than the normalized ones gives the formula's values all the same."""
    from loopdbg.ir.model import Layer
    from loopdbg.ops import args, onnx_norm
    from loopdbg.ops.registry import make_kernel

    calls = []
    layout = onnx_norm._layout
    monkeypatch.setattr(onnx_norm, "_layout", lambda *a: calls.append(a[0]) or layout(*a))
    monkeypatch.setattr(args, "SHAPES", args.SharedMemo())
    monkeypatch.setattr(onnx_norm, "SHAPES", args.SHAPES)

    def kernel(epsilon):
        layer = Layer(1, "ln", "onnx.LayerNormalization", "opset17",
                      data={"axis": -2, "epsilon": epsilon})
        return make_kernel(layer)[0]

    rng = np.random.default_rng(6)
    blocks = [kernel(1e-3) for _ in range(4)]
    scale, bias = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal(6)
    for t in (2, 3, 4):
        x = rng.standard_normal((1, t, 4, 6)).astype(np.float32)
        for k in blocks:
            y = k(x, scale, bias.astype(np.float32))
            mean = x.mean(axis=(2, 3), keepdims=True)
            var = ((x - mean) ** 2).mean(axis=(2, 3), keepdims=True)
            np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3) * scale + bias,
                                       rtol=1e-5, atol=1e-5)
    assert calls == [(1, 2, 4, 6), (1, 3, 4, 6), (1, 4, 4, 6)]
    kernel(1e-5)(x, scale)
    assert calls[-1] == (1, 4, 4, 6) and len(calls) == 4


def _layer_norm_formula(x, scale, b, epsilon):
    """LayerNormalization over the last axis, operation for operation as the kernel computes
    it, with Scale and B broadcast by numpy: the values, bit for bit."""
    mat = x.reshape(-1, x.shape[-1])
    n, eps = np.array(mat.shape[1], x.dtype), np.array(epsilon, x.dtype)
    mean = np.add.reduce(mat, axis=1, keepdims=True) / n
    diff = mat - mean
    inv = np.reciprocal(np.sqrt(np.add.reduce(diff * diff, axis=1, keepdims=True) / n + eps))
    return ((diff * inv).reshape(x.shape) * scale + b).astype(x.dtype)


def test_layer_normalization_of_constant_parameters_on_rows(monkeypatch):
    """A constant (read-only) Scale and B are kept repeated on rows, grown as a decoder's
    sequence grows, and give numpy's broadcast values bit for bit; a writable one, or a
    read-only view of a writable one, is read afresh at every call (it may have changed); past
    ``ROWS_KEPT`` elements nothing is kept."""
    from loopdbg.ir.model import Layer
    from loopdbg.ops import onnx_norm
    from loopdbg.ops.registry import make_kernel

    built = []
    on_rows = onnx_norm._on_rows
    monkeypatch.setattr(onnx_norm, "_on_rows", lambda *a: built.append(a[2]) or on_rows(*a))
    layer = Layer(1, "ln", "onnx.LayerNormalization", "opset17", data={"epsilon": 1e-5})
    kernel = make_kernel(layer)[0]
    rng = np.random.default_rng(7)
    scale, bias = rng.standard_normal(48).astype(np.float32), rng.standard_normal(48)
    bias = bias.astype(np.float32)
    scale.setflags(write=False)
    bias.setflags(write=False)
    for t in (5, 6, 7, 11, 12, 3, 24, 24, 1):
        x = rng.standard_normal((1, t, 48)).astype(np.float32)
        y = kernel(x, scale, bias)
        assert y.shape == x.shape and y.dtype == x.dtype and y.flags.c_contiguous
        assert np.array_equal(y, _layer_norm_formula(x, scale, bias, 1e-5))
    # made for 5 rows (10 kept), then 11 (22), then 24 (48): a few copies for a whole decode
    assert [shape[0] for shape in built] == [5, 5, 11, 11, 24, 24]
    assert np.array_equal(kernel(x, scale), _layer_norm_formula(x, scale, np.float32(0), 1e-5))

    writable = scale.copy()
    base = bias.copy()
    view = base[:]
    view.setflags(write=False)
    x = rng.standard_normal((1, 9, 48)).astype(np.float32)
    for step in range(3):
        y = kernel(x, writable, view)
        assert np.array_equal(y, _layer_norm_formula(x, writable, view, 1e-5))
        writable *= 2                       # the same objects, new values
        base += 1

    x = rng.standard_normal((1000, 48)).astype(np.float32)     # 48,000 elements: not kept
    assert np.array_equal(kernel(x, scale, bias), _layer_norm_formula(x, scale, bias, 1e-5))
