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
  row/column vectors.
* PRelu applies a 1-D slope whose length matches dimension 1 per channel, otherwise broadcasts it.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.convert import choice, flag, float_attr, int_attr
from loopdbg.ops.registry import register

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


def _binary(type_: str, fn: Callable, *versions: str) -> None:
    register(type_, *(versions or ("opset1",)))(lambda layer: broadcasting(layer, fn))


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


for _name, _fn in {
    "Add": np.add, "Subtract": np.subtract, "Multiply": np.multiply,
    "Maximum": np.maximum, "Minimum": np.minimum, "Power": _power,
    "SquaredDifference": _squared_difference, "FloorMod": np.mod, "Mod": np.fmod,
    "Less": np.less, "Greater": np.greater, "Equal": np.equal, "NotEqual": np.not_equal,
    "LessEqual": np.less_equal, "GreaterEqual": np.greater_equal,
    "LogicalAnd": np.logical_and, "LogicalOr": np.logical_or, "LogicalXor": np.logical_xor,
}.items():
    _binary(_name, _fn)
for _name, _fn in {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or,
                   "BitwiseXor": np.bitwise_xor}.items():
    _binary(_name, _fn, "opset13")


@register("Divide", "opset1")
def _divide(layer: Layer):
    return broadcasting(layer, _floor_div if flag(layer, "m_pythondiv", True) else _trunc_div)


@register("Select", "opset1")
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


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    s = e / (1 + e)
    return np.where(x >= 0, 1 - s, s)


def _erf_approx(x):
    # Abramowitz & Stegun 7.1.26, |error| < 1.5e-7: only used when scipy is missing.
    t = 1 / (1 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741
                                                         + t * (-1.453152027 + t * 1.061405429))))
    return np.sign(x) * (1 - poly * np.exp(-x * x))


_ERF: Callable | None = None


def erf(x):
    """scipy's erf when installed (imported on first use: it costs half a second), else A&S."""
    global _ERF
    if _ERF is None:
        try:
            from scipy.special import erf as _ERF
        except ImportError:  # pragma: no cover - scipy is optional
            _ERF = _erf_approx
    return _ERF(x)
_SQRT_HALF = math.sqrt(0.5)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _gelu_erf(x):
    return 0.5 * x * (1 + erf(x * _SQRT_HALF))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


def _hsigmoid(x):
    return np.clip(x + 3, 0, 6) / 6


def _round_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) == 0.5, t + np.sign(x), np.rint(x))


_UNARY_V1 = {
    "Tanh": _float_unary(np.tanh), "Sigmoid": _float_unary(_sigmoid),
    "Exp": _float_unary(np.exp), "Log": _float_unary(np.log), "Sqrt": _float_unary(np.sqrt),
    "Sin": _float_unary(np.sin), "Cos": _float_unary(np.cos), "Tan": _float_unary(np.tan),
    "Sinh": _float_unary(np.sinh), "Cosh": _float_unary(np.cosh),
    "Asin": _float_unary(np.arcsin), "Acos": _float_unary(np.arccos),
    "Atan": _float_unary(np.arctan), "Erf": _float_unary(erf),
    "Relu": lambda x: np.maximum(x, 0), "Abs": np.abs, "Negative": np.negative, "Sign": np.sign,
    "Floor": _int_identity(np.floor), "Ceiling": _int_identity(np.ceil),
    "LogicalNot": np.logical_not,
}
for _name, _fn in _UNARY_V1.items():
    register(_name, "opset1")(lambda layer, fn=_fn: fn)
for _name, _fn in {"Asinh": np.arcsinh, "Acosh": np.arccosh, "Atanh": np.arctanh}.items():
    register(_name, "opset4")(lambda layer, fn=_float_unary(_fn): fn)
register("Gelu", "opset2")(lambda layer: _float_unary(_gelu_erf))
register("HSigmoid", "opset5")(lambda layer: _float_unary(_hsigmoid))
register("HSwish", "opset4")(lambda layer: _float_unary(lambda x: x * _hsigmoid(x)))
register("SoftPlus", "opset4")(lambda layer: _float_unary(lambda x: np.logaddexp(0, x)))
register("Mish", "opset4")(
    lambda layer: _float_unary(lambda x: x * np.tanh(np.logaddexp(0, x))))
register("BitwiseNot", "opset13")(lambda layer: np.invert)
register("IsNaN", "opset10")(lambda layer: np.isnan)
register("IsFinite", "opset10")(lambda layer: np.isfinite)


@register("IsInf", "opset10")
def _is_inf(layer: Layer):
    neg, pos = flag(layer, "detect_negative", True), flag(layer, "detect_positive", True)
    return lambda x: np.isinf(x) & (((x < 0) & neg) | ((x > 0) & pos))


@register("Gelu", "opset7")
def _gelu7(layer: Layer):
    mode = choice(layer, "approximation_mode", ("erf", "tanh"), "erf")
    return _float_unary(_gelu_erf if mode == "erf" else _gelu_tanh)


@register("Round", "opset5")
def _round(layer: Layer):
    mode = choice(layer, "mode", ("half_to_even", "half_away_from_zero"), "half_to_even")
    return _int_identity(np.rint if mode == "half_to_even" else _round_away)


@register("Elu", "opset1")
def _elu(layer: Layer):
    alpha = float_attr(layer, "alpha")
    return _float_unary(lambda x: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))))


@register("Swish", "opset4")
def _swish(layer: Layer):
    def swish(x, beta=None):
        return x * _sigmoid(x if beta is None else x * beta)

    return swish


@register("Clamp", "opset1")
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


@register("Softmax", "opset1")
def _softmax1(layer: Layer):
    axis = int_attr(layer, "axis", 1)
    if axis < 0:
        raise ValueError(f"Softmax-1 needs a non-negative axis, got {axis}")
    return _softmax_kernel(axis)


@register("Softmax", "opset8")
def _softmax8(layer: Layer):
    return _softmax_kernel(int_attr(layer, "axis", 1))


@register("LogSoftmax", "opset5")
def _log_softmax(layer: Layer):
    axis = int_attr(layer, "axis", 1)

    def log_softmax(x):
        shifted = x - np.maximum.reduce(x, axis=axis, keepdims=True)
        return shifted - np.log(np.add.reduce(np.exp(shifted), axis=axis, keepdims=True))

    return log_softmax


# ---- MatMul, PRelu ---------------------------------------------------------------------------


@register("MatMul", "opset1")
def _matmul(layer: Layer):
    ta, tb = flag(layer, "transpose_a"), flag(layer, "transpose_b")
    if not (ta or tb):
        return np.matmul

    def matmul(a, b):
        if ta and a.ndim > 1:
            a = np.swapaxes(a, -1, -2)
        if tb and b.ndim > 1:
            b = np.swapaxes(b, -1, -2)
        return np.matmul(a, b)

    return matmul


@register("PRelu", "opset1")
def _prelu(layer: Layer):
    def prelu(x, slope):
        if slope.ndim == 1 and x.ndim >= 2 and slope.shape[0] == x.shape[1]:
            slope = slope.reshape((-1,) + (1,) * (x.ndim - 2))
        return np.where(x < 0, x * slope, x)

    return prelu
