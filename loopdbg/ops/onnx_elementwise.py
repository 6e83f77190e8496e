"""ONNX element-wise kernels: arithmetic, comparisons, logic, activations, MatMul, Gemm, Cast.

Registered as ``onnx.<OpType>`` for the opset versions where the operator's signature changed
(see ``loopdbg.ir.onnx_reader``); a layer's ``data`` holds its ONNX attributes as Python values.
Results keep the element type ONNX gives them (numpy would sometimes widen: ``Pow`` of a float32 by
an int64, integer ``ReduceMean``); where ONNX leaves a result undefined the choice is onnxruntime's:

* integer Div truncates toward zero (C), integer division by zero is an error;
* Mod with ``fmod=0`` takes the divisor's sign, ``fmod=1`` the dividend's;
* Cast from float to integer truncates toward zero; to bool is ``x != 0``;
* opset < 7 broadcasting (``broadcast=1`` with ``axis``) aligns B's dimensions at ``axis``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.registry import register

# ---- helpers shared by the onnx_* modules ----------------------------------------------------


def onnx_op(op_type: str, *versions: int, outputs: Any = 1):
    """Register a factory for ``onnx.<op_type>`` at each opset number in ``versions``."""
    return register(f"onnx.{op_type}", *(f"opset{v}" for v in versions or (1,)), outputs=outputs)


def a(layer: Layer, name: str, default: Any = None) -> Any:
    """An ONNX attribute as read by the ONNX reader (int, float, str, list, array)."""
    return layer.data.get(name, default)


def opset(layer: Layer) -> int:
    return int(str(layer.version).removeprefix("opset") or 1)


def n_outputs(layer: Layer) -> int:
    return max(len(layer.outputs), 1)


def ints_of(value) -> list[int]:
    return np.asarray(value).reshape(-1).astype(np.int64).tolist()


# ---- arithmetic ------------------------------------------------------------------------------


def _legacy(layer: Layer, fn: Callable) -> Callable:
    """Opset < 7 broadcasting: ``broadcast=1`` with ``axis`` aligns B at ``axis`` of A."""
    if not a(layer, "broadcast", 0) or a(layer, "axis") is None:
        return fn
    axis = int(a(layer, "axis"))

    def kernel(x, y):
        y = np.asarray(y)
        start = axis + x.ndim if axis < 0 else axis
        tail = x.ndim - start - y.ndim
        if start < 0 or tail < 0:
            raise ValueError(f"cannot broadcast shape {y.shape} into {x.shape} at axis {axis}")
        return fn(x, y.reshape(y.shape + (1,) * tail))

    return kernel


def _keep(fn: Callable) -> Callable:
    """``fn`` with the result in the first input's dtype (ONNX's T for T, T1 operators)."""

    def kernel(x, y):
        out = fn(x, y)
        return out if out.dtype == x.dtype else out.astype(x.dtype)

    return kernel


def _check_int_divisor(y) -> None:
    if not np.all(y):
        raise ValueError("integer division by zero")


def _div(x, y):
    if x.dtype.kind in "iu":
        _check_int_divisor(y)
        if x.dtype.kind == "u":
            return np.floor_divide(x, y)
        q = np.floor_divide(x, y)
        return q + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0))).astype(q.dtype)
    return np.true_divide(x, y)


def _pow(x, y):
    if x.dtype.kind in "iu":
        if np.asarray(y).dtype.kind == "f" or np.any(np.asarray(y) < 0):
            with np.errstate(all="ignore"):
                return np.power(x.astype(np.float64), y).astype(x.dtype)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = np.power(x, y)
    return out if out.dtype == x.dtype else out.astype(x.dtype)


_BINARY = {
    "Add": (np.add, 1), "Sub": (np.subtract, 1), "Mul": (np.multiply, 1), "Div": (_div, 1),
    "Greater": (np.greater, 1), "Less": (np.less, 1), "Equal": (np.equal, 1),
    "And": (np.logical_and, 1), "Or": (np.logical_or, 1), "Xor": (np.logical_xor, 1),
}
for _name, (_fn, _v) in _BINARY.items():
    onnx_op(_name, 1, 7)(lambda layer, fn=_fn: _legacy(layer, fn))
onnx_op("Pow", 1, 7)(lambda layer: _legacy(layer, _pow))
onnx_op("GreaterOrEqual", 12)(lambda layer: np.greater_equal)
onnx_op("LessOrEqual", 12)(lambda layer: np.less_equal)
onnx_op("BitwiseAnd", 18)(lambda layer: np.bitwise_and)
onnx_op("BitwiseOr", 18)(lambda layer: np.bitwise_or)
onnx_op("BitwiseXor", 18)(lambda layer: np.bitwise_xor)
onnx_op("BitwiseNot", 18)(lambda layer: np.invert)
onnx_op("Not", 1)(lambda layer: np.logical_not)


@onnx_op("Mod", 10)
def _mod(layer: Layer):
    if a(layer, "fmod", 0):
        return _quiet2(np.fmod)

    def mod(x, y):
        if x.dtype.kind in "iu":
            _check_int_divisor(y)
        with np.errstate(all="ignore"):
            return np.mod(x, y)

    return mod


def _quiet2(fn: Callable) -> Callable:
    def kernel(x, y):
        with np.errstate(all="ignore"):
            return fn(x, y)

    return kernel


@onnx_op("BitShift", 11)
def _bitshift(layer: Layer):
    left = str(a(layer, "direction", "LEFT")).upper() == "LEFT"
    return np.left_shift if left else np.right_shift


def _variadic(fn: Callable) -> Callable:
    def kernel(*xs):
        xs = [x for x in xs if x is not None]
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, x)
        return out

    return kernel


onnx_op("Max", 1, 8)(lambda layer: _variadic(np.maximum))
onnx_op("Min", 1, 8)(lambda layer: _variadic(np.minimum))
onnx_op("Sum", 1, 8)(lambda layer: _variadic(np.add))


@onnx_op("Mean", 1, 8)
def _mean(layer: Layer):
    add = _variadic(np.add)

    def mean(*xs):
        n = sum(1 for x in xs if x is not None)
        out = add(*xs)
        return (out / n).astype(out.dtype)

    return mean


@onnx_op("Where", 9)
def _where(layer: Layer):
    def where(c, x, y):
        out = np.where(c, x, y)
        return out if out.dtype == x.dtype else out.astype(x.dtype)

    return where


# ---- unary -----------------------------------------------------------------------------------


def _quiet(fn: Callable) -> Callable:
    def kernel(x):
        with np.errstate(all="ignore"):
            return fn(x)

    return kernel


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    s = e / (1 + e)
    return np.where(x >= 0, 1 - s, s).astype(x.dtype, copy=False)


def _erf(x):
    from loopdbg.ops.elementwise import erf

    return np.asarray(erf(x)).astype(x.dtype, copy=False)


def _same_type(fn: Callable) -> Callable:
    def kernel(x):
        out = fn(x)
        return out if out.dtype == x.dtype else out.astype(x.dtype)

    return kernel


_UNARY: dict[str, tuple[Callable, int]] = {
    "Neg": (np.negative, 1), "Abs": (np.abs, 1), "Sqrt": (np.sqrt, 1), "Exp": (np.exp, 1),
    "Log": (np.log, 1), "Tanh": (np.tanh, 1), "Sigmoid": (_sigmoid, 1),
    "Relu": (lambda x: np.maximum(x, x.dtype.type(0)), 1),
    "Ceil": (np.ceil, 1), "Floor": (np.floor, 1), "Round": (np.round, 11),
    "Reciprocal": (lambda x: np.reciprocal(x), 1), "Sign": (np.sign, 9),
    "Sin": (np.sin, 7), "Cos": (np.cos, 7), "Tan": (np.tan, 7), "Asin": (np.arcsin, 7),
    "Acos": (np.arccos, 7), "Atan": (np.arctan, 7), "Sinh": (np.sinh, 9), "Cosh": (np.cosh, 9),
    "Asinh": (np.arcsinh, 9), "Acosh": (np.arccosh, 9), "Atanh": (np.arctanh, 9),
    "Erf": (_erf, 9),
    "Softplus": (lambda x: np.logaddexp(x.dtype.type(0), x), 1),
    "Softsign": (lambda x: x / (1 + np.abs(x)), 1),
    "Identity": (lambda x: x, 1),
}
for _name, (_fn, _v) in _UNARY.items():
    onnx_op(_name, _v)(lambda layer, fn=_same_type(_quiet(_fn)): fn)
onnx_op("IsNaN", 9)(lambda layer: np.isnan)


@onnx_op("IsInf", 10)
def _isinf(layer: Layer):
    neg, pos = bool(a(layer, "detect_negative", 1)), bool(a(layer, "detect_positive", 1))
    return lambda x: np.isinf(x) & (((x < 0) & neg) | ((x > 0) & pos))


def _alpha_op(name: str, default_alpha: float, fn: Callable, version: int = 1) -> None:
    def factory(layer: Layer):
        alpha = float(a(layer, "alpha", default_alpha))
        return _same_type(_quiet(lambda x: fn(x, alpha)))

    onnx_op(name, version)(factory)


_alpha_op("LeakyRelu", 0.01, lambda x, al: np.where(x >= 0, x, x * al))
_alpha_op("Elu", 1.0, lambda x, al: np.where(x > 0, x, al * np.expm1(np.minimum(x, 0))))
_alpha_op("ThresholdedRelu", 1.0, lambda x, al: np.where(x > al, x, 0), 10)
_alpha_op("Celu", 1.0, lambda x, al: np.maximum(x, 0) + np.minimum(0, al * np.expm1(x / al)), 12)


@onnx_op("Selu", 1)
def _selu(layer: Layer):
    al = float(a(layer, "alpha", 1.67326319217681884765625))
    g = float(a(layer, "gamma", 1.05070102214813232421875))
    return _same_type(_quiet(lambda x: g * np.where(x > 0, x, al * np.expm1(np.minimum(x, 0)))))


@onnx_op("HardSigmoid", 1)
def _hard_sigmoid(layer: Layer):
    al, be = float(a(layer, "alpha", 0.2)), float(a(layer, "beta", 0.5))
    return _same_type(lambda x: np.clip(al * x + be, 0, 1))


onnx_op("HardSwish", 14)(lambda layer: _same_type(lambda x: x * np.clip(x / 6 + 0.5, 0, 1)))
onnx_op("Mish", 18)(lambda layer: _same_type(_quiet(
    lambda x: x * np.tanh(np.logaddexp(x.dtype.type(0), x)))))


@onnx_op("Gelu", 20)
def _gelu(layer: Layer):
    if str(a(layer, "approximate", "none")) == "tanh":
        c = math.sqrt(2 / math.pi)
        return _same_type(lambda x: 0.5 * x * (1 + np.tanh(c * (x + 0.044715 * x ** 3))))
    return _same_type(lambda x: 0.5 * x * (1 + _erf(x * np.asarray(math.sqrt(0.5), x.dtype))))


@onnx_op("PRelu", 1, 7)
def _prelu(layer: Layer):
    return _same_type_binary(lambda x, slope: np.where(x < 0, x * slope, x))


def _same_type_binary(fn: Callable) -> Callable:
    def kernel(x, y):
        out = fn(x, y)
        return out if out.dtype == x.dtype else out.astype(x.dtype)

    return kernel


@onnx_op("Clip", 1, 11)
def _clip(layer: Layer):
    if opset(layer) < 11:
        lo = a(layer, "min")
        hi = a(layer, "max")

        def clip_attr(x):
            out = x
            if lo is not None:
                out = np.maximum(out, x.dtype.type(lo))
            if hi is not None:
                out = np.minimum(out, x.dtype.type(hi))
            return out

        return clip_attr

    def clip(x, lo=None, hi=None):
        out = x
        if lo is not None:
            out = np.maximum(out, np.asarray(lo, x.dtype))
        if hi is not None:
            out = np.minimum(out, np.asarray(hi, x.dtype))
        return out

    return clip


# ---- MatMul, Gemm ----------------------------------------------------------------------------

onnx_op("MatMul", 1)(lambda layer: np.matmul)


@onnx_op("Gemm", 1)
def _gemm(layer: Layer):
    alpha, beta = float(a(layer, "alpha", 1.0)), float(a(layer, "beta", 1.0))
    ta, tb = bool(a(layer, "transA", 0)), bool(a(layer, "transB", 0))

    def gemm(x, y, c=None):
        if ta:
            x = x.T
        if tb:
            y = y.T
        out = np.matmul(x, y)
        if alpha != 1.0:
            out = out * alpha
        if c is not None and beta != 0.0:
            out = out + (c * beta if beta != 1.0 else c)
        return out if out.dtype == x.dtype else out.astype(x.dtype)

    return gemm


# ---- Cast ------------------------------------------------------------------------------------


def cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    x = np.asarray(x)
    if dtype == np.bool_:
        return x != 0
    with np.errstate(all="ignore"):
        if x.dtype.kind == "f" and dtype.kind in "iu":
            x = np.trunc(x)
        return x.astype(dtype)


def _to_dtype(to) -> np.dtype:
    from loopdbg.ir.onnx_reader import numpy_dtype_of

    if isinstance(to, str):                 # Cast-1 spells the type: "FLOAT", "INT64"
        from onnx import TensorProto

        to = TensorProto.DataType.Value(to.upper())
    return numpy_dtype_of(int(to))


@onnx_op("Cast", 1)
def _cast(layer: Layer):
    dtype = _to_dtype(a(layer, "to"))
    return lambda x: cast(x, dtype)


@onnx_op("CastLike", 15)
def _cast_like(layer: Layer):
    return lambda x, like: cast(x, np.asarray(like).dtype)
