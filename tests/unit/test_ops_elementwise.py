"""Element-wise kernels against numpy formulas, with every trap of loop_semantics.md §6."""

import math

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


RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 1)).astype(np.float32)


@pytest.mark.parametrize("type_, ref", [
    ("Add", np.add), ("Subtract", np.subtract), ("Multiply", np.multiply),
    ("Maximum", np.maximum), ("Minimum", np.minimum),
    ("SquaredDifference", lambda a, b: (a - b) ** 2),
    ("Less", np.less), ("Greater", np.greater), ("Equal", np.equal),
    ("NotEqual", np.not_equal), ("LessEqual", np.less_equal),
    ("GreaterEqual", np.greater_equal),
])
def test_binary_numpy_broadcast(type_, ref):
    out = kernel(type_, auto_broadcast="numpy")(A, B)
    expected = ref(A, B)
    assert out.shape == (2, 3, 4) and out.dtype == expected.dtype
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_comparisons_return_bool():
    for t in ("Less", "Greater", "Equal", "NotEqual", "LessEqual", "GreaterEqual"):
        assert kernel(t)(np.array([1, 2], np.int32), np.array([2], np.int32)).dtype == np.bool_


def test_add_with_numpy_broadcast_is_the_ufunc_itself():
    assert kernel("Add", auto_broadcast="numpy") is np.add
    assert kernel("Add") is np.add


def test_auto_broadcast_none_needs_equal_shapes():
    fn = kernel("Add", auto_broadcast="none")
    np.testing.assert_array_equal(fn(A, A), A + A)
    with pytest.raises(ValueError, match=r"equal shapes.*\(2, 3, 4\) and \(3, 1\)"):
        fn(A, B)


def test_auto_broadcast_pdpd_aligns_at_axis():
    a = np.zeros((2, 3, 4), np.float32)
    b = np.arange(3, dtype=np.float32)
    out = kernel("Add", auto_broadcast="pdpd", axis="1")(a, b)
    np.testing.assert_array_equal(out, np.broadcast_to(b[None, :, None], (2, 3, 4)))
    out = kernel("Add", auto_broadcast="pdpd")(a, np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(out[1, 2], np.arange(4))


def test_unknown_auto_broadcast_is_a_user_error():
    with pytest.raises(UnsupportedOperation, match="auto_broadcast='explicit'"):
        kernel("Add", auto_broadcast="explicit")


def test_float32_stays_float32():
    x = np.array([0.5, 1.5], np.float32)
    for t in ("Add", "Multiply", "Divide", "Power", "FloorMod", "Mod"):
        assert kernel(t)(x, x).dtype == np.float32, t
    for t in ("Tanh", "Sigmoid", "Exp", "Erf", "Sin", "Cos"):
        assert kernel(t, n_in=1)(x).dtype == np.float32, t
    assert kernel("Gelu", "opset7", n_in=1)(x).dtype == np.float32
    assert kernel("Clamp", n_in=1, min="-1", max="1")(x).dtype == np.float32


# ---- Divide, FloorMod, Mod, Power -----------------------------------------------------------

I7 = np.array([7, -7, 7, -7, 6], np.int32)
I2 = np.array([-2, 2, 2, -2, 3], np.int32)


def test_divide_pythondiv_floors_integers():
    out = kernel("Divide", m_pythondiv="true")(I7, I2)
    assert out.dtype == np.int32 and out.tolist() == [-4, -4, 3, 3, 2]
    assert kernel("Divide")(I7, I2).tolist() == [-4, -4, 3, 3, 2]  # default is true


def test_divide_without_pythondiv_truncates_integers():
    out = kernel("Divide", m_pythondiv="false")(I7, I2)
    assert out.dtype == np.int32 and out.tolist() == [-3, -3, 3, 3, 2]


def test_divide_floats_is_true_division_either_way():
    a, b = np.array([7.0, -7.0], np.float32), np.array([-2.0, 2.0], np.float32)
    for m in ("true", "false"):
        assert kernel("Divide", m_pythondiv=m)(a, b).tolist() == [-3.5, -3.5]


def test_divide_unsigned_and_by_zero():
    u = kernel("Divide")(np.array([7, 9], np.uint8), np.array([2, 3], np.uint8))
    assert u.dtype == np.uint8 and u.tolist() == [3, 3]
    with pytest.raises(ValueError, match="division by zero"):
        kernel("Divide")(I7, np.zeros(5, np.int32))


def test_floor_mod_follows_divisor_and_mod_follows_dividend():
    assert kernel("FloorMod")(I7, I2).tolist() == [-1, 1, 1, -1, 0]
    assert kernel("Mod")(I7, I2).tolist() == [1, -1, 1, -1, 0]
    f = np.array([7.5, -7.5], np.float32), np.array([-2.0, 2.0], np.float32)
    assert kernel("FloorMod")(*f).tolist() == [-0.5, 0.5]
    assert kernel("Mod")(*f).tolist() == [1.5, -1.5]


def test_power_integers_with_negative_exponent_truncate():
    a = np.array([2, 1, -1, -1, 3, 0, 2], np.int32)
    b = np.array([-1, -3, -3, -2, 2, 3, 31], np.int32)
    out = kernel("Power")(a, b)
    assert out.dtype == np.int32 and out.tolist() == [0, 1, -1, 1, 9, 0, -2 ** 31]
    assert kernel("Power")(np.array([2.0], np.float32), np.array([-1.0], np.float32)) == 0.5


# ---- logic, Select ---------------------------------------------------------------------------


def test_logical_ops():
    p = np.array([True, True, False, False])
    q = np.array([True, False, True, False])
    assert kernel("LogicalAnd")(p, q).tolist() == [True, False, False, False]
    assert kernel("LogicalOr")(p, q).tolist() == [True, True, True, False]
    assert kernel("LogicalXor")(p, q).tolist() == [False, True, True, False]
    assert kernel("LogicalNot", n_in=1)(p).tolist() == [False, False, True, True]


def test_select_broadcasts_and_none_checks():
    c = np.array([[True], [False]])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = kernel("Select", n_in=3)(c, a, np.float32(-1))
    np.testing.assert_array_equal(out, [[0, 1, 2], [-1, -1, -1]])
    with pytest.raises(ValueError, match="equal shapes"):
        kernel("Select", n_in=3, auto_broadcast="none")(c, a, a)


# ---- unary -----------------------------------------------------------------------------------

X = np.linspace(-4, 4, 17).astype(np.float32)


def _erf(v):
    return np.array([math.erf(t) for t in v.astype(np.float64)])


@pytest.mark.parametrize("type_, version, data, ref", [
    ("Tanh", "opset1", {}, np.tanh),
    ("Sigmoid", "opset1", {}, lambda x: 1 / (1 + np.exp(-x))),
    ("Relu", "opset1", {}, lambda x: np.maximum(x, 0)),
    ("Exp", "opset1", {}, np.exp),
    ("Abs", "opset1", {}, np.abs),
    ("Negative", "opset1", {}, np.negative),
    ("Sign", "opset1", {}, np.sign),
    ("Floor", "opset1", {}, np.floor),
    ("Ceiling", "opset1", {}, np.ceil),
    ("Sin", "opset1", {}, np.sin),
    ("Cos", "opset1", {}, np.cos),
    ("Erf", "opset1", {}, _erf),
    ("Gelu", "opset2", {}, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    ("Gelu", "opset7", {"approximation_mode": "ERF"},
     lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    ("Gelu", "opset7", {"approximation_mode": "tanh"},
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    ("Elu", "opset1", {"alpha": "0.5"}, lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1))),
    ("SoftPlus", "opset4", {}, lambda x: np.log1p(np.exp(x))),
    ("HSigmoid", "opset5", {}, lambda x: np.minimum(np.maximum(x + 3, 0), 6) / 6),
    ("HSwish", "opset4", {}, lambda x: x * np.minimum(np.maximum(x + 3, 0), 6) / 6),
    ("Mish", "opset4", {}, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    ("Clamp", "opset1", {"min": "-1.5", "max": "2"}, lambda x: np.clip(x, -1.5, 2)),
    ("Round", "opset5", {"mode": "half_to_even"}, np.round),
])
def test_unary_float(type_, version, data, ref):
    out = kernel(type_, version, n_in=1, **data)(X)
    assert out.shape == X.shape and out.dtype == np.float32
    np.testing.assert_allclose(out, ref(X.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_log_and_sqrt_of_positive():
    x = np.array([0.25, 1.0, 9.0], np.float32)
    np.testing.assert_allclose(kernel("Log", n_in=1)(x), np.log(x))
    np.testing.assert_allclose(kernel("Sqrt", n_in=1)(x), [0.5, 1, 3])


def test_round_half_away_from_zero():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, 2.4], np.float32)
    out = kernel("Round", "opset5", n_in=1, mode="half_away_from_zero")(x)
    assert out.tolist() == [1, 2, 3, -1, -3, 0, 2]


def test_sigmoid_is_stable_for_large_inputs():
    # Below -88 (f32) the argument of exp is clamped: the result is sigmoid(-88) = 6.1e-39,
    # within 6.1e-39 of the true value, and no overflow is ever raised.
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out = kernel("Sigmoid", n_in=1)(np.array([-1000, 1000, 0, -88], np.float32))
    assert out[1:3].tolist() == [1.0, 0.5]
    assert 0 <= out[0] < 6.1e-39 and out[0] == out[3]


def test_float_functions_on_integers_round_back():
    x = np.array([-3, -1, 0, 1, 2, 5], np.int32)
    assert kernel("Sigmoid", n_in=1)(x).tolist() == [0, 0, 0, 1, 1, 1]
    assert kernel("Tanh", n_in=1)(x).tolist() == [-1, -1, 0, 1, 1, 1]
    out = kernel("Sqrt", n_in=1)(np.array([2, 3, 8], np.int32))
    assert out.dtype == np.int32 and out.tolist() == [1, 2, 3]
    assert kernel("Floor", n_in=1)(x).dtype == np.int32
    assert kernel("Relu", n_in=1)(x).tolist() == [0, 0, 0, 1, 2, 5]


def test_clamp_integers_uses_ceil_min_and_floor_max():
    out = kernel("Clamp", n_in=1, min="-1.5", max="2.5")(np.array([-3, -1, 0, 2, 3], np.int32))
    assert out.dtype == np.int32 and out.tolist() == [-1, -1, 0, 2, 2]
    u = kernel("Clamp", n_in=1, min="-1.5", max="300")(np.array([0, 255], np.uint8))
    assert u.dtype == np.uint8 and u.tolist() == [0, 255]
    with pytest.raises(UnsupportedOperation, match="greater than max"):
        kernel("Clamp", n_in=1, min="2", max="1")


def test_swish_with_and_without_beta():
    fn = kernel("Swish", "opset4")
    np.testing.assert_allclose(fn(X), X / (1 + np.exp(-X)), rtol=1e-5, atol=1e-6)
    beta = np.array(2.0, np.float32)
    np.testing.assert_allclose(fn(X, beta), X / (1 + np.exp(-2 * X)), rtol=1e-5, atol=1e-6)


def test_is_inf_and_friends():
    x = np.array([1.0, np.inf, -np.inf, np.nan], np.float32)
    assert kernel("IsInf", "opset10", n_in=1)(x).tolist() == [False, True, True, False]
    assert kernel("IsInf", "opset10", n_in=1, detect_negative="false")(x).tolist() == [
        False, True, False, False]
    assert kernel("IsNaN", "opset10", n_in=1)(x).tolist() == [False, False, False, True]
    assert kernel("IsFinite", "opset10", n_in=1)(x).tolist() == [True, False, False, False]


def test_bitwise_ops():
    a, b = np.array([12, 5], np.int32), np.array([10, 3], np.int32)
    assert kernel("BitwiseAnd", "opset13")(a, b).tolist() == [8, 1]
    assert kernel("BitwiseOr", "opset13")(a, b).tolist() == [14, 7]
    assert kernel("BitwiseXor", "opset13")(a, b).tolist() == [6, 6]
    assert kernel("BitwiseNot", "opset13", n_in=1)(a).tolist() == [-13, -6]


def test_gelu_bad_mode():
    with pytest.raises(UnsupportedOperation, match="approximation_mode"):
        kernel("Gelu", "opset7", n_in=1, approximation_mode="cubic")


# ---- Softmax, LogSoftmax ---------------------------------------------------------------------


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_v1_and_v8():
    np.testing.assert_allclose(kernel("Softmax", n_in=1, axis="1")(A), _softmax(A, 1), rtol=1e-6)
    np.testing.assert_allclose(kernel("Softmax", n_in=1)(A), _softmax(A, 1), rtol=1e-6)
    np.testing.assert_allclose(kernel("Softmax", "opset8", n_in=1, axis="-1")(A),
                               _softmax(A, -1), rtol=1e-6)
    with pytest.raises(UnsupportedOperation, match="non-negative"):
        kernel("Softmax", "opset1", n_in=1, axis="-1")


def test_softmax_large_values_do_not_overflow():
    out = kernel("Softmax", "opset8", n_in=1, axis="0")(np.array([1000.0, 1000.0], np.float32))
    assert out.tolist() == [0.5, 0.5]


def test_log_softmax():
    out = kernel("LogSoftmax", "opset5", n_in=1, axis="-2")(A)
    np.testing.assert_allclose(out, np.log(_softmax(A.astype(np.float64), -2)), rtol=1e-5,
                               atol=1e-6)
    assert out.dtype == np.float32


# ---- MatMul, PRelu ---------------------------------------------------------------------------

M = RNG.standard_normal((2, 3, 4)).astype(np.float32)
N = RNG.standard_normal((2, 4, 5)).astype(np.float32)


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes(ta, tb):
    a = np.swapaxes(M, -1, -2).copy() if ta else M
    b = np.swapaxes(N, -1, -2).copy() if tb else N
    out = kernel("MatMul", transpose_a=str(ta).lower(), transpose_b=str(tb).lower())(a, b)
    np.testing.assert_allclose(out, M @ N, rtol=1e-5, atol=1e-6)


def test_matmul_1d_operands_ignore_transpose():
    v = np.array([1.0, 2.0, 3.0], np.float32)
    m = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert kernel("MatMul", transpose_a="true")(v, m).tolist() == [16, 22]
    assert kernel("MatMul", transpose_b="true")(m.T.copy(), v).tolist() == [16, 22]
    out = kernel("MatMul", transpose_a="true", transpose_b="true")(v, v)
    assert out.shape == () and out == 14


def test_matmul_broadcasts_batch_and_keeps_ints():
    a = np.ones((3, 2, 2), np.int32)
    out = kernel("MatMul")(np.ones((2, 2), np.int32), a)
    assert out.shape == (3, 2, 2) and out.dtype == np.int32 and (out == 2).all()


def test_prelu_channel_slope_and_numpy_slope():
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4)
    channel = np.array([0.1, 0.2, 0.3], np.float32)
    out = kernel("PRelu")(x, channel)
    np.testing.assert_allclose(out, np.where(x < 0, x * channel[:, None], x))
    last = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    np.testing.assert_allclose(kernel("PRelu")(x, last), np.where(x < 0, x * last, x))
    square = x[:, :, :3]
    np.testing.assert_allclose(kernel("PRelu")(square, channel),
                               np.where(square < 0, square * channel[:, None], square))
    np.testing.assert_allclose(kernel("PRelu")(x, np.float32(0.5)), np.where(x < 0, x / 2, x))
