"""Element-wise kernels: arithmetic, comparisons, logic, activations, Softmax, MatMul, PRelu.

Where numpy already has the exact semantics the factory returns the ufunc itself (``np.add`` for
Add with numpy broadcasting), so the per-call path is one C call. Results keep the inputs' element
type as OpenVINO does: constants inside formulas are Python floats, which numpy treats as "weak" and
never widen a float32 array to float64.

Traps handled here (``loop_semantics.md`` §6, checked against the 2026.4 wheel):

* Divide on integers floors when ``m_pythondiv`` is true (the default; REF: 7 / −2 → −4) and
  truncates when false; dividing an integer by zero is an error, as in REF.
* FloorMod takes the divisor's sign (``np.mod``), Mod the dividend's (``np.fmod``).
* Integer Power with a negative exponent truncates 1/aⁿ toward zero (numpy would raise).
* Float functions given integers (Sigmoid of an i32) round the result back to the integer type.
* Clamp on integers clamps to ``ceil(min)`` and ``floor(max)``.
* MatMul ignores transpose_a/transpose_b for 1-D operands, which numpy's matmul then treats as
  row/column vectors; its products are shaped for BLAS by ``loopdbg.ops.gemm``.
* PRelu applies a 1-D slope whose length matches dimension 1 per channel, otherwise broadcasts it.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import choice, const_input, flag, float_attr, int_attr
from loopdbg.ops.erf import erf, gelu_erf
from loopdbg.ops import gemm
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo, broadcast, same

# ---- broadcasting ----------------------------------------------------------------------------


def _same_shape(name: str, fn: Callable) -> Callable:
    def kernel(*args):
        first = np.shape(args[0])
        for other in args[1:]:
            if np.shape(other) != first:
                raise ValueError(f"{name} with auto_broadcast='none' needs equal shapes, got "
                                 + " and ".join(str(np.shape(a)) for a in args))
        return fn(*args)

    return kernel


def _pdpd(fn: Callable, axis: int) -> Callable:
    """PaddlePaddle broadcasting: B's dims line up with A's starting at ``axis`` (−1: trailing)."""

    def kernel(a, b):
        b = np.asarray(b)
        start = np.ndim(a) - b.ndim if axis == -1 else axis
        tail = np.ndim(a) - start - b.ndim
        if start < 0 or tail < 0:
            raise ValueError(f"cannot pdpd-broadcast shape {b.shape} into {np.shape(a)} "
                             f"at axis {axis}")
        return fn(a, b.reshape((1,) * start + b.shape + (1,) * tail))

    return kernel


def broadcasting(layer: Layer, fn: Callable, default: str = "numpy") -> Callable:
    """``fn`` wrapped for the layer's ``auto_broadcast``: numpy (``fn`` itself), none, pdpd."""
    mode = choice(layer, "auto_broadcast", ("numpy", "none", "pdpd"), default)
    if mode == "numpy":
        return fn
    if mode == "none":
        return _same_shape(layer.type, fn)
    return _pdpd(fn, int_attr(layer, "axis", -1))


def _broadcast_shape(layer: Layer, ins) -> tuple[int, ...] | None:
    mode = choice(layer, "auto_broadcast", ("numpy", "none", "pdpd"), "numpy")
    if mode == "numpy":
        return broadcast(*(i.shape for i in ins))
    return next((i.shape for i in ins if i.shape is not None), None) if mode == "none" \
        else ins[0].shape


def arithmetic_shape(layer: Layer, ins, consts) -> TensorInfo:
    """Two inputs broadcast; the result has their element type."""
    return TensorInfo(ins[0].type or ins[1].type, _broadcast_shape(layer, ins[:2]))


def comparison_shape(layer: Layer, ins, consts) -> TensorInfo:
    """Two inputs broadcast; the result is boolean."""
    return TensorInfo("boolean", _broadcast_shape(layer, ins[:2]))


def predicate_shape(layer: Layer, ins, consts) -> TensorInfo:
    """One input; the result is boolean, of its shape."""
    return TensorInfo("boolean", ins[0].shape)


# ---- arithmetic ------------------------------------------------------------------------------


def _check_int_divisor(b) -> None:
    if not np.all(b):
        raise ValueError("integer division by zero")


def _floor_div(a, b):
    if a.dtype.kind in "iu":
        _check_int_divisor(b)
        return np.floor_divide(a, b)
    return np.true_divide(a, b)


def _trunc_div(a, b):
    if a.dtype.kind == "i":
        _check_int_divisor(b)
        q = np.floor_divide(a, b)
        return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))
    return _floor_div(a, b)


def _power(a, b):
    if a.dtype.kind not in "iu" or b.dtype.kind != "i":
        return np.power(a, b)
    negative = b < 0
    if not negative.any():
        return np.power(a, b)
    pos = np.power(a, np.where(negative, 0, b).astype(b.dtype))
    # 1/a**n truncated toward zero: ±1 for a = ±1, 0 otherwise.
    inv = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(negative, inv, pos).astype(pos.dtype)


def _squared_difference(a, b):
    d = np.subtract(a, b)
    return np.multiply(d, d)


# (type, first opset, numpy function, shape rule) of the binary ops numpy computes directly.
_BINARY = [
    ("Add", 1, np.add, arithmetic_shape), ("Subtract", 1, np.subtract, arithmetic_shape),
    ("Multiply", 1, np.multiply, arithmetic_shape), ("Maximum", 1, np.maximum, arithmetic_shape),
    ("Minimum", 1, np.minimum, arithmetic_shape), ("Power", 1, _power, arithmetic_shape),
    ("SquaredDifference", 1, _squared_difference, arithmetic_shape),
    ("FloorMod", 1, np.mod, arithmetic_shape), ("Mod", 1, np.fmod, arithmetic_shape),
    ("Less", 1, np.less, comparison_shape), ("Greater", 1, np.greater, comparison_shape),
    ("Equal", 1, np.equal, comparison_shape), ("NotEqual", 1, np.not_equal, comparison_shape),
    ("LessEqual", 1, np.less_equal, comparison_shape),
    ("GreaterEqual", 1, np.greater_equal, comparison_shape),
    ("LogicalAnd", 1, np.logical_and, comparison_shape),
    ("LogicalOr", 1, np.logical_or, comparison_shape),
    ("LogicalXor", 1, np.logical_xor, comparison_shape),
    ("BitwiseAnd", 13, np.bitwise_and, arithmetic_shape),
    ("BitwiseOr", 13, np.bitwise_or, arithmetic_shape),
    ("BitwiseXor", 13, np.bitwise_xor, arithmetic_shape),
]
for _name, _since, _fn, _shape in _BINARY:
    op(_name, versions=(_since,), shape=_shape)(lambda layer, fn=_fn: broadcasting(layer, fn))


@op("Divide", shape=arithmetic_shape)
def _divide(layer: Layer):
    return broadcasting(layer, _floor_div if flag(layer, "m_pythondiv", True) else _trunc_div)


def _select_shape(layer: Layer, ins, consts) -> TensorInfo:
    return TensorInfo(ins[1].type or ins[2].type, broadcast(*(i.shape for i in ins[:3])))


@op("Select", shape=_select_shape)
def _select(layer: Layer):
    mode = choice(layer, "auto_broadcast", ("numpy", "none"), "numpy")
    return np.where if mode == "numpy" else _same_shape("Select", np.where)


# ---- unary -----------------------------------------------------------------------------------


def _float_unary(fn: Callable) -> Callable:
    """``fn`` for float inputs; integers are computed in float64 and rounded back (as CPU does)."""

    def kernel(x):
        if x.dtype.kind == "f":
            return fn(x)
        return np.rint(fn(x.astype(np.float64))).astype(x.dtype)

    return kernel


def _int_identity(fn: Callable) -> Callable:
    """Floor/Ceiling/Round: integers are already whole (numpy would return float64)."""
    return lambda x: x if x.dtype.kind in "iub" else fn(x)


# The largest argument (a little under it) for which exp stays finite, per float type.
_EXP_MAX = {np.dtype(np.float16): 11.0, np.dtype(np.float32): 88.0, np.dtype(np.float64): 709.0}


def _sigmoid(x):
    limit = _EXP_MAX.get(x.dtype)
    if limit is not None:               # 1/(1+e^-x) is exact to rounding; the clamp only keeps
        return 1 / (1 + np.exp(np.minimum(-x, limit)))   # exp finite below about -88 (f32)
    e = np.exp(-np.abs(x))
    s = e / (1 + e)
    return np.where(x >= 0, 1 - s, s)


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


def _hsigmoid(x):
    return np.clip(x + 3, 0, 6) / 6


def _round_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) == 0.5, t + np.sign(x), np.rint(x))


# (type, first opset, function, shape rule) of the unary ops without attributes.
_UNARY = [
    ("Tanh", 1, _float_unary(np.tanh), same), ("Sigmoid", 1, _float_unary(_sigmoid), same),
    ("Exp", 1, _float_unary(np.exp), same), ("Log", 1, _float_unary(np.log), same),
    ("Sqrt", 1, _float_unary(np.sqrt), same), ("Sin", 1, _float_unary(np.sin), same),
    ("Cos", 1, _float_unary(np.cos), same), ("Tan", 1, _float_unary(np.tan), same),
    ("Sinh", 1, _float_unary(np.sinh), same), ("Cosh", 1, _float_unary(np.cosh), same),
    ("Asin", 1, _float_unary(np.arcsin), same), ("Acos", 1, _float_unary(np.arccos), same),
    ("Atan", 1, _float_unary(np.arctan), same), ("Erf", 1, _float_unary(erf), same),
    ("Asinh", 4, _float_unary(np.arcsinh), same), ("Acosh", 4, _float_unary(np.arccosh), same),
    ("Atanh", 4, _float_unary(np.arctanh), same),
    ("Relu", 1, lambda x: np.maximum(x, 0), same), ("Abs", 1, np.abs, same),
    ("Negative", 1, np.negative, same), ("Sign", 1, np.sign, same),
    ("Floor", 1, _int_identity(np.floor), same), ("Ceiling", 1, _int_identity(np.ceil), same),
    ("Gelu", 2, _float_unary(gelu_erf), same), ("HSigmoid", 5, _float_unary(_hsigmoid), same),
    ("HSwish", 4, _float_unary(lambda x: x * _hsigmoid(x)), same),
    ("SoftPlus", 4, _float_unary(lambda x: np.logaddexp(0, x)), same),
    ("Mish", 4, _float_unary(lambda x: x * np.tanh(np.logaddexp(0, x))), same),
    ("BitwiseNot", 13, np.invert, same),
    ("LogicalNot", 1, np.logical_not, predicate_shape),
    ("IsNaN", 10, np.isnan, predicate_shape), ("IsFinite", 10, np.isfinite, predicate_shape),
]
for _name, _since, _fn, _shape in _UNARY:
    op(_name, versions=(_since,), shape=_shape)(lambda layer, fn=_fn: fn)


@op("IsInf", versions=(10,), shape=predicate_shape)
def _is_inf(layer: Layer):
    neg, pos = flag(layer, "detect_negative", True), flag(layer, "detect_positive", True)
    return lambda x: np.isinf(x) & (((x < 0) & neg) | ((x > 0) & pos))


@op("Gelu", versions=(7,), shape=same)
def _gelu7(layer: Layer):
    mode = choice(layer, "approximation_mode", ("erf", "tanh"), "erf")
    return _float_unary(gelu_erf if mode == "erf" else _gelu_tanh)


@op("Round", versions=(5,), shape=same)
def _round(layer: Layer):
    mode = choice(layer, "mode", ("half_to_even", "half_away_from_zero"), "half_to_even")
    return _int_identity(np.rint if mode == "half_to_even" else _round_away)


@op("Elu", shape=same)
def _elu(layer: Layer):
    alpha = float_attr(layer, "alpha")
    return _float_unary(lambda x: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))))


@op("Swish", versions=(4,), shape=same)
def _swish(layer: Layer):
    def swish(x, beta=None):
        return x * _sigmoid(x if beta is None else x * beta)

    return swish


@op("Clamp", shape=same)
def _clamp(layer: Layer):
    lo, hi = float_attr(layer, "min"), float_attr(layer, "max")
    if lo > hi:
        raise ValueError(f"min={lo} is greater than max={hi}")

    def clamp(x):
        if x.dtype.kind == "f":
            return np.clip(x, lo, hi)
        info = np.iinfo(x.dtype) if x.dtype.kind in "iu" else np.iinfo(np.uint8)
        return np.clip(x, max(info.min, math.ceil(lo)), min(info.max, math.floor(hi)))

    return clamp


# ---- along an axis ---------------------------------------------------------------------------


def _softmax_kernel(axis: int) -> Callable:
    def softmax(x):
        e = np.exp(x - np.maximum.reduce(x, axis=axis, keepdims=True))
        return e / np.add.reduce(e, axis=axis, keepdims=True)

    return softmax


@op("Softmax", shape=same)
def _softmax1(layer: Layer):
    axis = int_attr(layer, "axis", 1)
    if axis < 0:
        raise ValueError(f"Softmax-1 needs a non-negative axis, got {axis}")
    return _softmax_kernel(axis)


@op("Softmax", versions=(8,), shape=same)
def _softmax8(layer: Layer):
    return _softmax_kernel(int_attr(layer, "axis", 1))


@op("LogSoftmax", versions=(5,), shape=same)
def _log_softmax(layer: Layer):
    axis = int_attr(layer, "axis", 1)

    def log_softmax(x):
        shifted = x - np.maximum.reduce(x, axis=axis, keepdims=True)
        return shifted - np.log(np.add.reduce(np.exp(shifted), axis=axis, keepdims=True))

    return log_softmax


# ---- MatMul, PRelu ---------------------------------------------------------------------------


def _matmul_shape(layer: Layer, ins, consts) -> TensorInfo:
    a, b = ins[0].shape, ins[1].shape
    if a is None or b is None:
        return TensorInfo(ins[0].type, None)
    a, b = list(a), list(b)
    if len(a) >= 2 and flag(layer, "transpose_a"):
        a[-1], a[-2] = a[-2], a[-1]
    if len(b) >= 2 and flag(layer, "transpose_b"):
        b[-1], b[-2] = b[-2], b[-1]
    a2 = [1] + a if len(a) == 1 else a          # 1-D operands are a row / a column vector
    b2 = b + [1] if len(b) == 1 else b
    out = list(broadcast(tuple(a2[:-2]), tuple(b2[:-2]))) + [a2[-2], b2[-1]]
    if len(b) == 1:
        out.pop(-1)
    if len(a) == 1:
        out.pop(-2 if len(b) != 1 else -1)
    return TensorInfo(ins[0].type, tuple(out))


@op("MatMul", shape=_matmul_shape, constants=True)
def _matmul(layer: Layer, consts=None):
    ta, tb = flag(layer, "transpose_a"), flag(layer, "transpose_b")
    # A transposed constant (converters write weights so): small ones transposed once into C
    # order, big ones read by GEMM as stored (gemm.with_transposed_constant).
    b_c = const_input(consts, 1)
    if not ta and tb and b_c is not None and b_c.ndim > 1:
        return gemm.with_transposed_constant(b_c)
    if not (ta or tb):
        # a first operand declared of rank 1 or 2 is no stack: numpy's matmul itself, one C call
        # (a declaration that lies costs speed only: np.matmul is right for every rank)
        rank = len(layer.inputs[0].dims) if layer.inputs else 0
        return np.matmul if rank in (1, 2) else gemm.matmul
    return lambda a, b: gemm.matmul_t(a, b, ta, tb)


@op("PRelu", shape=same)
def _prelu(layer: Layer):
    def prelu(x, slope):
        if slope.ndim == 1 and x.ndim >= 2 and slope.shape[0] == x.shape[1]:
            slope = slope.reshape((-1,) + (1,) * (x.ndim - 2))
        return np.where(x < 0, x * slope, x)

    return prelu
