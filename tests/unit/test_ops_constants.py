"""Kernels specialised on their constant inputs give exactly what the general kernels give.

A factory registered with ``constants=True`` receives the constant inputs at plan time and may
resolve them once (registry docstring). For every case here the same layer is built twice, once
knowing which inputs are constants and once not, and both kernels run on the same arrays: same
values, dtype and shape, or the same error sentence.
"""

from __future__ import annotations

import numpy as np
import pytest

from loopdbg.ir.model import Layer, Port
from loopdbg.ops.registry import lookup, make_kernel


def _layer(type_, version, n_in, n_out=1, **data):
    return Layer(id=1, name="x", type=type_, version=version, data=data,
                 inputs=tuple(Port(i, i) for i in range(n_in)),
                 outputs=tuple(Port(n_in + j, j) for j in range(n_out)))


def _outcome(fn, args):
    try:
        return "ok", fn(*args)
    except (ValueError, IndexError, TypeError) as exc:
        return "error", f"{type(exc).__name__}: {exc}"


def check(type_, version, args, const_at, n_out=1, **data):
    """Run the general and the specialised kernel on ``args``; inputs ``const_at`` are the
    Constants. Returns the specialised kernel's result."""
    layer = _layer(type_, version, len(args), n_out, **data)
    assert lookup(type_, version).constants, f"{type_} {version} does not specialise"
    general, _ = make_kernel(layer)
    consts = tuple(np.asarray(a) if k in const_at else None for k, a in enumerate(args))
    for c in consts:
        if c is not None:
            c.flags.writeable = False
    special, _ = make_kernel(layer, consts=consts)
    kind, want = _outcome(general, args)
    kind2, got = _outcome(special, args)
    assert kind2 == kind, (kind, want, kind2, got)
    if kind == "error":
        assert got == want
        return got
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) else (got,)
    assert len(gots) == len(wants)
    for g, w in zip(gots, wants):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_array_equal(g, w)
    return got


pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # the general kernels on wild values

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
V = np.arange(5, dtype=np.int64)
i64 = np.int64


# ---- Gather --------------------------------------------------------------------------------

INDICES = [i64(2), np.int32(1), i64(-1), i64(-3), i64(-4), i64(3), i64(7), np.array(1),
           np.array(-1), np.array([0, 2]), np.array([[1], [-2]]), np.array([2, 5]),
           np.array([], np.int64), np.array([True, False]), np.array(1.0)]


@pytest.mark.parametrize("version", ["opset1", "opset7", "opset8"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, 3])
@pytest.mark.parametrize("k", range(len(INDICES)))
def test_gather_constant_axis(version, axis, k):
    check("Gather", version, (X, INDICES[k], np.array(axis)), {2})


@pytest.mark.parametrize("version", ["opset1", "opset7", "opset8"])
@pytest.mark.parametrize("k", range(len(INDICES)))
def test_gather_constant_indices(version, k):
    for data in (X, V, np.array(3.0)):
        check("Gather", version, (data, INDICES[k], np.array(0)), {1, 2})
        check("Gather", version, (data, INDICES[k], np.array(-1)), {1, 2})


def test_gather_scalar_index_is_an_array_view():
    got = check("Gather", "opset8", (V, i64(3), np.array(0)), {2})
    assert isinstance(got, np.ndarray) and got.shape == () and got == 3
    got = check("Gather", "opset8", (V, np.array(-1), np.array(0)), {1, 2})
    assert isinstance(got, np.ndarray) and got == 4


def test_gather_batch_dims_stays_general():
    data = np.arange(24).reshape(2, 3, 4)
    idx = np.array([[0, 2], [1, 1]])
    check("Gather", "opset8", (data, idx, np.array(2)), {2}, batch_dims="1")
    check("Gather", "opset8", (data, idx, np.array(2)), {1, 2}, batch_dims="1")


# ---- Unsqueeze, Squeeze, Reshape, Transpose ---------------------------------------------------

@pytest.mark.parametrize("axes", [[0], [1], [-1], [3], [0, 2], [0, 0], [1, -2], [-4], [4], [],
                                  [0, 1, 2, 3, 4]])
def test_unsqueeze(axes):
    for data in (X, V, np.array(2.0), np.float32(2.0), X[:, 1]):
        check("Unsqueeze", "opset1", (data, np.array(axes, np.int64)), {1})


@pytest.mark.parametrize("version", ["opset1", "opset15"])
@pytest.mark.parametrize("axes", [[0], [1], [-1], [0, 2], [3], [-4], [], None])
def test_squeeze(version, axes):
    for data in (X, X[:1, :, :1], np.ones((1, 1, 1)), np.array(5.0), V[None]):
        args = (data,) if axes is None else (data, np.array(axes, np.int64))
        check("Squeeze", version, args, {1})


@pytest.mark.parametrize("special_zero", ["false", "true"])
@pytest.mark.parametrize("target", [[60], [-1], [0, -1], [3, 0, 5], [2, -1], [7, -1], [-1, -1],
                                    [3, 4, 5, 1], [0, 0, 0], [], [-2, 30]])
def test_reshape(special_zero, target):
    for data in (X, X[:, :, 1], np.zeros((0, 4))):
        check("Reshape", "opset1", (data, np.array(target, np.int64)), {1},
              special_zero=special_zero)


@pytest.mark.parametrize("order", [[2, 0, 1], [], [0, 1, 2], [1, 0], [0, 0, 1]])
def test_transpose(order):
    check("Transpose", "opset1", (X, np.array(order, np.int64)), {1})


# ---- MatMul ----------------------------------------------------------------------------------

@pytest.mark.parametrize("ta", ["false", "true"])
@pytest.mark.parametrize("tb", ["false", "true"])
def test_matmul_constant_weights(ta, tb):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    for b in (rng.standard_normal((6, 6)).astype(np.float32),
              rng.standard_normal((2, 6, 6)).astype(np.float32),
              rng.standard_normal(6).astype(np.float32)):
        check("MatMul", "opset1", (a, b), {1}, transpose_a=ta, transpose_b=tb)


# ---- Split, VariadicSplit --------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3, 3])
@pytest.mark.parametrize("n", [1, 2, 4, 5])
def test_split(axis, n):
    check("Split", "opset1", (X, np.array(axis, np.int64)), {1}, n_out=n, num_splits=str(n))


@pytest.mark.parametrize("axis", [0, 1, -1, 2, 5])
@pytest.mark.parametrize("lengths", [[1, 3], [2, -1], [-1, 2, 2], [4], [1, 1, 1, 1], [5, 0, -1],
                                     [2, 2], [-1, -1], [3, -2]])
def test_variadic_split(axis, lengths):
    check("VariadicSplit", "opset1", (X, np.array(axis, np.int64), np.array(lengths, np.int64)),
          {1, 2}, n_out=len(lengths))
    check("VariadicSplit", "opset1", (X, np.array(axis, np.int64), np.array(lengths, np.int64)),
          {2}, n_out=len(lengths))


# ---- MVN -------------------------------------------------------------------------------------


@pytest.mark.parametrize("axes", [[-1], [1, 2], [2, 1, -1], [3], [0, -4]])
@pytest.mark.parametrize("mode", ["inside_sqrt", "outside_sqrt"])
def test_mvn_constant_axes(axes, mode):
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    for arg in (x, x[0]):                       # the axes normalised for each rank they meet
        check("MVN", "opset6", (arg, np.array(axes, np.int64)), {1}, normalize_variance="true",
              eps="1e-5", eps_mode=mode)


@pytest.mark.parametrize("variance", ["true", "false"])
def test_one_mvn_kernel_of_constant_axes_meets_many_shapes(variance):
    """The numbers kept per input shape serve that shape only: one kernel, shapes and types
    in turn, each as the general kernel computes it."""
    layer = _layer("MVN", "opset6", 2, 1, normalize_variance=variance, eps="1e-5",
                   eps_mode="inside_sqrt")
    axes = np.array([-1], np.int64)
    axes.flags.writeable = False
    special, _ = make_kernel(layer, consts=(None, axes))
    general, _ = make_kernel(layer)
    rng = np.random.default_rng(3)
    shapes = [(1, 5, 48), (1, 6, 48), (2, 3), (1, 5, 48), (4,), (1, 6, 48)]
    for shape in shapes:
        for dtype in (np.float32, np.float64, np.float16):
            x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
            got, want = special(x, axes), general(x, axes)
            assert got.dtype == want.dtype == dtype
            np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError):
        special(np.float32(1), axes)                    # rank 0: axis -1 is out of range


# ---- reductions ------------------------------------------------------------------------------

REDUCTIONS = ["ReduceSum", "ReduceProd", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1",
              "ReduceL2"]


@pytest.mark.parametrize("type_", REDUCTIONS)
@pytest.mark.parametrize("axes", [[0], [-1], [0, 2], [1, 1], [], [0, 1, 2], [3], [-4]])
@pytest.mark.parametrize("keep", ["true", "false"])
def test_reductions(type_, axes, keep):
    version = "opset4" if type_ in ("ReduceL1", "ReduceL2") else "opset1"
    for data in (X, X.astype(np.int32) - 20, X.astype(np.float16), np.array(3.0, np.float32),
                 np.zeros((0, 3), np.float32)):
        check(type_, version, (data, np.array(axes, np.int64)), {1}, keep_dims=keep)


def test_logical_reductions():
    data = X > 20
    for type_ in ("ReduceLogicalAnd", "ReduceLogicalOr"):
        check(type_, "opset1", (data, np.array([1], np.int64)), {1}, keep_dims="false")


# ---- Convert and Sigmoid: decided per input dtype ---------------------------------------------

DTYPES = ["f16", "f32", "f64", "i8", "u8", "i32", "i64", "u64", "boolean", "bf16"]


@pytest.mark.parametrize("target", DTYPES)
def test_convert_matches_the_general_rules(target):
    from loopdbg.ir import elements
    from loopdbg.ops.convert import convert

    values = np.array([0, 1, -1, 2.5, -2.7, 300.0, 3e9, 7e4, np.nan, np.inf, -np.inf], np.float64)
    layer = _layer("Convert", "opset1", 1, destination_type=target)
    kernel, _ = make_kernel(layer)
    dtype = elements.numpy_dtype(target)
    for src in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64,
                np.uint64, np.bool_):
        with np.errstate(all="ignore"):
            x = values[np.isfinite(values)].astype(src) if np.dtype(src).kind in "iub" \
                else values.astype(src)
        for arg in (x, x[2], x[:1].reshape(())):
            with np.errstate(all="ignore"):
                want = convert(arg, dtype, target == "bf16")
            got = kernel(arg)
            assert np.asarray(got).dtype == want.dtype and np.shape(got) == want.shape
            np.testing.assert_array_equal(got, want)


def test_sigmoid_is_exact_to_rounding():
    layer = _layer("Sigmoid", "opset1", 1)
    kernel, _ = make_kernel(layer)
    for dtype, rtol in ((np.float32, 3e-7), (np.float64, 1e-15), (np.float16, 2e-3)):
        x = np.linspace(-80 if dtype != np.float16 else -9, 80, 20001).astype(dtype)
        want = 1 / (1 + np.exp(-x.astype(np.longdouble)))
        got = kernel(x)
        assert got.dtype == dtype
        np.testing.assert_allclose(got.astype(np.longdouble), want, rtol=rtol, atol=0)
    far = kernel(np.array([-1e4, -100, 100, 1e4], np.float32))
    assert far[0] < 1e-37 and far[1] < 1e-37 and far[2] == 1 and far[3] == 1
    assert not np.isnan(far).any()
