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
from typing import Callable

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops import gemm
from loopdbg.ops.args import a, const_input, opset
from loopdbg.ops.erf import erf, gelu_erf
from loopdbg.ops.registry import op

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


def _check_int_divisor(y) -> None:
    if not np.all(y):
        raise ValueError("integer division by zero")


_I64 = np.dtype(np.int64)
_I64_RANGE = range(-(1 << 63), 1 << 63)


def _div(x, y):
    if x.dtype.kind == "f":                 # (float: numpy's true division, first)
        return np.true_divide(x, y)
    if x.dtype is _I64 and not x.ndim and getattr(y, "dtype", None) is _I64 and not y.ndim:
        a, b = int(x), int(y)               # one int64 by another (shape arithmetic): exactly
        if b:                               # the same truncated quotient, in Python's ints
            q = abs(a) // abs(b)
            q = q if (a < 0) == (b < 0) else -q
            if q in _I64_RANGE:
                return np.int64(q)
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


# The binary operators that had opset < 7 broadcasting (opset 7 dropped its attributes).
_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": _div, "Pow": _pow,
    "Greater": np.greater, "Less": np.less, "Equal": np.equal,
    "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor,
}
for _name, _fn in _BINARY.items():
    op(f"onnx.{_name}", versions=(1, 7))(lambda layer, fn=_fn: _legacy(layer, fn))

# (op, first opset, kernel) of the operators that are one numpy function and take no attribute.
_PLAIN = [
    ("GreaterOrEqual", 12, np.greater_equal), ("LessOrEqual", 12, np.less_equal),
    ("BitwiseAnd", 18, np.bitwise_and), ("BitwiseOr", 18, np.bitwise_or),
    ("BitwiseXor", 18, np.bitwise_xor), ("BitwiseNot", 18, np.invert),
    ("Not", 1, np.logical_not), ("IsNaN", 9, np.isnan),
]
for _name, _v, _fn in _PLAIN:
    op(f"onnx.{_name}", versions=(_v,))(lambda layer, fn=_fn: fn)


@op("onnx.Mod", versions=(10,))
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


@op("onnx.BitShift", versions=(11,))
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


for _name, _fn in {"Max": np.maximum, "Min": np.minimum, "Sum": np.add}.items():
    op(f"onnx.{_name}", versions=(1, 8))(lambda layer, fn=_fn: _variadic(fn))


@op("onnx.Mean", versions=(1, 8))
def _mean(layer: Layer):
    add = _variadic(np.add)

    def mean(*xs):
        n = sum(1 for x in xs if x is not None)
        out = add(*xs)
        return (out / n).astype(out.dtype)

    return mean


@op("onnx.Where", versions=(9,))
def _where(layer: Layer):
    def where(c, x, y):
        out = np.where(c, x, y)
        if out.dtype == x.dtype or out.dtype.kind == "U":   # strings: the wider of the two
            return out
        return out.astype(x.dtype)

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


def _erf_kernel(x):
    """erf of x's type: erf of a float array is an array of its type, returned as it is (one
    Python call and no checks the more, on a decoder's every GELU); it raises no floating-point
    warning (NaN and ±inf included), so it needs no ``errstate`` (2 µs a call)."""
    out = erf(x)
    if type(out) is np.ndarray and out.dtype == x.dtype:
        return out
    return np.asarray(out).astype(x.dtype, copy=False)


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
    "Softplus": (lambda x: np.logaddexp(x.dtype.type(0), x), 1),
    "Softsign": (lambda x: x / (1 + np.abs(x)), 1),
}
for _name, (_fn, _v) in _UNARY.items():
    op(f"onnx.{_name}", versions=(_v,))(lambda layer, fn=_same_type(_quiet(_fn)): fn)
op("onnx.Erf", versions=(9,))(lambda layer: _erf_kernel)


@op("onnx.Identity")
def _identity(layer: Layer):
    """Any value as it is: a tensor, a sequence or an optional."""
    return lambda x=None: x


@op("onnx.IsInf", versions=(10,))
def _isinf(layer: Layer):
    neg, pos = bool(a(layer, "detect_negative", 1)), bool(a(layer, "detect_positive", 1))
    return lambda x: np.isinf(x) & (((x < 0) & neg) | ((x > 0) & pos))


def _alpha_factory(default_alpha: float, fn: Callable):
    def factory(layer: Layer):
        alpha = float(a(layer, "alpha", default_alpha))
        return _same_type(_quiet(lambda x: fn(x, alpha)))

    return factory


# (op, first opset, default alpha, f(x, alpha)) of the activations with one ``alpha`` attribute.
_ALPHA = [
    ("LeakyRelu", 1, 0.01, lambda x, al: np.where(x >= 0, x, x * al)),
    ("Elu", 1, 1.0, lambda x, al: np.where(x > 0, x, al * np.expm1(np.minimum(x, 0)))),
    ("ThresholdedRelu", 10, 1.0, lambda x, al: np.where(x > al, x, 0)),
    ("Celu", 12, 1.0, lambda x, al: np.maximum(x, 0) + np.minimum(0, al * np.expm1(x / al))),
]
for _name, _v, _alpha, _fn in _ALPHA:
    op(f"onnx.{_name}", versions=(_v,))(_alpha_factory(_alpha, _fn))


@op("onnx.Selu")
def _selu(layer: Layer):
    al = float(a(layer, "alpha", 1.67326319217681884765625))
    g = float(a(layer, "gamma", 1.05070102214813232421875))
    return _same_type(_quiet(lambda x: g * np.where(x > 0, x, al * np.expm1(np.minimum(x, 0)))))


@op("onnx.HardSigmoid")
def _hard_sigmoid(layer: Layer):
    al, be = float(a(layer, "alpha", 0.2)), float(a(layer, "beta", 0.5))
    return _same_type(lambda x: np.clip(al * x + be, 0, 1))


@op("onnx.HardSwish", versions=(14,))
def _hard_swish(layer: Layer):
    return _same_type(lambda x: x * np.clip(x / 6 + 0.5, 0, 1))


@op("onnx.Mish", versions=(18,))
def _mish(layer: Layer):
    return _same_type(_quiet(lambda x: x * np.tanh(np.logaddexp(x.dtype.type(0), x))))


@op("onnx.Gelu", versions=(20,))
def _gelu(layer: Layer):
    if str(a(layer, "approximate", "none")) == "tanh":
        c = math.sqrt(2 / math.pi)
        return _same_type(lambda x: 0.5 * x * (1 + np.tanh(c * (x + 0.044715 * x ** 3))))
    return _same_type(gelu_erf)         # erf's rational, scaled: x exactly for large x


@op("onnx.PRelu", versions=(1, 7))
def _prelu(layer: Layer):
    return _same_type_binary(lambda x, slope: np.where(x < 0, x * slope, x))


def _same_type_binary(fn: Callable) -> Callable:
    def kernel(x, y):
        out = fn(x, y)
        return out if out.dtype == x.dtype else out.astype(x.dtype)

    return kernel


@op("onnx.Clip", versions=(1, 11))
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


@op("onnx.MatMul", constants=True)
def _matmul(layer: Layer, consts=None):
    """numpy's matmul of bfloat16 gives float32: the result is cast back, as ONNX types it. A
    constant second operand (a weight) gets ``gemm.with_constant``'s kernel, decided once: the
    products ``gemm.matmul`` takes, bit for bit (a big weight, stored (K, N), is not read
    weight first from fewer rows as the IR's (N, K) ones are: that would round differently)."""
    b = const_input(consts, 1)
    matmul = gemm.matmul if b is None else gemm.with_constant(b)

    def kernel(x, y):
        out = matmul(x, y)
        return out if out.dtype is x.dtype or out.dtype == x.dtype else out.astype(x.dtype)

    return kernel


@op("onnx.Gemm")
def _gemm(layer: Layer):
    alpha, beta = float(a(layer, "alpha", 1.0)), float(a(layer, "beta", 1.0))
    ta, tb = bool(a(layer, "transA", 0)), bool(a(layer, "transB", 0))

    def gemm_kernel(x, y, c=None):
        out = np.matmul(x.T if ta else x, y.T if tb else y)     # 2-D: one GEMM, flags for .T
        if alpha != 1.0:
            out = out * alpha
        if c is not None and beta != 0.0:
            out = out + (c * beta if beta != 1.0 else c)
        return out if out.dtype == x.dtype else out.astype(x.dtype)

    return gemm_kernel


# ---- Cast ------------------------------------------------------------------------------------


def cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    x = np.asarray(x)
    if dtype == np.bool_:
        return x != 0
    if x.dtype == dtype or (x.dtype.kind in "iub" and dtype.kind in "iu"):
        return x.astype(dtype)          # nothing to round or to warn of: no error state
    with np.errstate(all="ignore"):
        if x.dtype.kind == "f" and dtype.kind in "iu":
            x = np.trunc(x)
        return x.astype(dtype)


def _cast_dtype(name) -> np.dtype:
    """The dtype of the element type the ONNX reader wrote in ``to`` (it translates ONNX's enum,
    and Cast-1's spelled names, to loopdbg's names such as ``f32`` or ``float8_e4m3fn``)."""
    dtype = elements.numpy_dtype(name) if elements.is_known(str(name)) and name != "bf16" else None
    if dtype is None:
        raise ValueError(f"Cast to element type {name} is not supported by loopdbg")
    return dtype


_EXOTIC: dict[np.dtype, bool] = {}     # by dtype: a Cast asks once per call


def _exotic(dtype: np.dtype) -> bool:
    """Strings and the ml_dtypes types: their casts (rounding, saturation, parsing) are
    onnx.reference's."""
    found = _EXOTIC.get(dtype)
    if found is None:
        found = _EXOTIC[dtype] = dtype.kind == "U" or elements.is_ml_dtype(dtype)
    return found


def _by_reference(layer: Layer, plain: Callable) -> Callable:
    """``plain(*args)`` for numpy's own types; onnx.reference's kernel, made on first need, when
    an input is a string or ml_dtypes array."""
    built: list = []

    def kernel(*args):
        if not any(_exotic(np.asarray(x).dtype) for x in args):
            return plain(*args)
        if not built:
            from loopdbg.ops.onnx_reference import reference_kernel

            built.append(reference_kernel(layer))
        return built[0](*args)

    return kernel


@op("onnx.Cast")
def _cast(layer: Layer):
    dtype = _cast_dtype(a(layer, "to"))
    if _exotic(dtype):
        from loopdbg.ops.onnx_reference import reference_kernel

        return reference_kernel(layer)
    general = _by_reference(layer, lambda x: cast(x, dtype))
    if dtype == np.bool_:
        return general
    to_int = dtype.kind in "iu"

    def cast_kernel(x):
        # an array or numpy scalar of the same type, or integers to integers (shape arithmetic:
        # a converter's Cast of every size it computes): ``cast``'s first case, at once
        src = getattr(x, "dtype", None)
        if src is not None and (src == dtype or to_int and src.kind in "iub"):
            if type(x) is np.ndarray:
                return x.astype(dtype)
            if src == dtype and isinstance(x, np.generic):
                return x                # a numpy scalar of the type: immutable, as it is
            return np.asarray(x).astype(dtype)
        return general(x)

    return cast_kernel


@op("onnx.CastLike", versions=(15,))
def _cast_like(layer: Layer):
    return _by_reference(layer, lambda x, like: cast(x, np.asarray(like).dtype))
