"""More math: HardSigmoid, Selu, SoftSign, Xor, bit shifts, ErfInv, Eye, ConvertPromoteTypes and
SliceScatter.

* HardSigmoid-1 is ``max(0, min(1, alpha·x + beta))`` and Selu-1 ``lambda·(x if x > 0 else
  alpha·(eˣ − 1))``, alpha, beta and lambda being inputs; SoftSign-9 is ``x / (1 + |x|)``.
* Xor-1 is the opset-1 name of LogicalXor.
* BitwiseLeftShift-15 / BitwiseRightShift-15 shift integers (right shifts of signed integers
  keep the sign). A shift by a negative amount or by the type's width or more is undefined in the
  specification (C++'s shift); numpy gives 0 (or -1) there.
* ErfInv-17 starts from Winitzki's closed form and refines it with Halley steps on float64 erf:
  exact to float64 rounding; ±1 gives ±inf, outside [-1, 1] NaN.
* Eye-9 writes ones on diagonal ``diagonal_index`` of [rows, columns] matrices, one per element
  of the optional batch shape.
* SliceScatter-15 writes updates into a copy of data where Slice-8 with the same start, stop,
  step and axes would read.
* ConvertPromoteTypes-14 converts both inputs to one type by OpenVINO's promotion rules (see
  ``promoted_type``); a pair those rules refuse is an error naming both types.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops.args import attr, dtype_attr, flag, ints, scalar
from loopdbg.ops.elementwise import arithmetic_shape, broadcasting, comparison_shape
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo, same


def _float_result(x: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``value`` (float64) back in ``x``'s type; integers are rounded to nearest."""
    if x.dtype.kind == "f":
        return value.astype(x.dtype, copy=False)
    return np.rint(value).astype(x.dtype)


def _one(v, name: str) -> float:
    flat = np.asarray(v).reshape(-1)
    if flat.size != 1:
        raise ValueError(f"{name} must hold one value, got shape {np.shape(v)}")
    return float(flat[0])


@op("HardSigmoid", shape=same,
    notes="as specified for every beta; OpenVINO's CPU plugin runs beta = 0 as 0.5")
def _hard_sigmoid(layer: Layer):
    def hard_sigmoid(x, alpha, beta):
        x = np.asarray(x)
        y = np.clip(_one(alpha, "alpha") * x.astype(np.float64) + _one(beta, "beta"), 0.0, 1.0)
        return _float_result(x, y)

    return hard_sigmoid


@op("Selu", shape=same)
def _selu(layer: Layer):
    def selu(x, alpha, lambda_):
        x = np.asarray(x)
        xf = x.astype(np.float64)
        y = _one(lambda_, "lambda") * np.where(xf > 0, xf, _one(alpha, "alpha") * np.expm1(
            np.minimum(xf, 0)))
        return _float_result(x, y)

    return selu


@op("SoftSign", versions=(9,), shape=same)
def _soft_sign(layer: Layer):
    def soft_sign(x):
        x = np.asarray(x)
        xf = x.astype(np.float64)
        return _float_result(x, xf / (1 + np.abs(xf)))

    return soft_sign


@op("Xor", shape=comparison_shape)
def _xor(layer: Layer):
    return broadcasting(layer, np.logical_xor)


def _shift(fn):
    def kernel(a, b):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
            raise ValueError(f"bit shifts take integers, got {a.dtype} and {b.dtype}")
        return fn(a, b.astype(a.dtype, copy=False)).astype(a.dtype, copy=False)

    return kernel


_SHIFT_NOTES = ("i64 shifts in 64 bits; OpenVINO's CPU plugin computes them in 32; shifts by a "
                "negative amount or by the width or more are undefined (numpy's result)")


@op("BitwiseLeftShift", versions=(15,), shape=arithmetic_shape, notes=_SHIFT_NOTES)
def _left_shift(layer: Layer):
    return broadcasting(layer, _shift(np.left_shift))


@op("BitwiseRightShift", versions=(15,), shape=arithmetic_shape, notes=_SHIFT_NOTES)
def _right_shift(layer: Layer):
    return broadcasting(layer, _shift(np.right_shift))


# ---- ErfInv ----------------------------------------------------------------------------------

_ERF = np.frompyfunc(math.erf, 1, 1)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def erfinv(y: np.ndarray) -> np.ndarray:
    """The inverse error function in float64."""
    y = np.asarray(y, np.float64)
    inside = np.abs(y) < 1
    t = np.where(inside, y, 0.0)
    a = 0.147
    ln = np.log1p(-t * t)
    first = 2 / (math.pi * a) + ln / 2
    x = np.sign(t) * np.sqrt(np.sqrt(first * first - ln / a) - first)
    for _ in range(3):
        f = _ERF(x).astype(np.float64) - t
        slope = _TWO_OVER_SQRT_PI * np.exp(-x * x)
        x = x - f / (slope + x * f)
    out = np.where(y == 1, np.inf, np.where(y == -1, -np.inf, np.nan))
    return np.where(inside, x, out)


@op("ErfInv", versions=(17,), shape=same,
    notes="exact to float rounding; OpenVINO's CPU plugin uses an approximation off by up to "
          "about 5e-3 near ±1, and its reference has no ErfInv")
def _erf_inv(layer: Layer):
    def erf_inv(x):
        x = np.asarray(x)
        with np.errstate(invalid="ignore", divide="ignore"):
            return _float_result(x, erfinv(x))

    return erf_inv


# ---- Eye -------------------------------------------------------------------------------------

def _eye_shape(layer: Layer, ins, consts):
    """batch_shape + [num_rows, num_columns] in output_type, when the inputs are constants."""
    out_type = attr(layer, "output_type")
    if any(c is None for c in consts):
        return TensorInfo(out_type, None)
    rows, cols = scalar(consts[0]), scalar(consts[1])
    batch = tuple(ints(consts[3])) if len(consts) > 3 else ()
    return TensorInfo(out_type, batch + (rows, cols))


@op("Eye", versions=(9,), shape=_eye_shape)
def _eye(layer: Layer):
    dtype = dtype_attr(layer, "output_type")

    def eye(num_rows, num_columns, diagonal_index, batch_shape=None):
        rows, cols, k = scalar(num_rows), scalar(num_columns), scalar(diagonal_index)
        if rows < 0 or cols < 0:
            raise ValueError(f"num_rows {rows} and num_columns {cols} must not be negative")
        batch = ints(batch_shape) if batch_shape is not None else []
        if any(d < 0 for d in batch):
            raise ValueError(f"batch_shape {batch} has a negative dimension")
        matrix = np.eye(rows, cols, k, dtype=dtype)
        return np.broadcast_to(matrix, tuple(batch) + (rows, cols)).copy()

    return eye


# ---- ConvertPromoteTypes ---------------------------------------------------------------------

_SIGNED_BY_BITS = {8: "i8", 16: "i16", 32: "i32"}


def _bits(t: str) -> int:
    return {"boolean": 8, "f16": 16, "bf16": 16, "f32": 32, "f64": 64}.get(
        t, int("".join(ch for ch in t if ch.isdigit()) or 8))


def promoted_type(t0: str, t1: str, rank0: int, rank1: int, unsafe: bool, pytorch: bool,
                  u64_target: str) -> str:
    """The common element type of ConvertPromoteTypes-14 (as OpenVINO's type inference has it:
    floats outrank integers outrank booleans; safe mode refuses what could lose values)."""
    if t0 == t1:
        return t0
    if t0 == "boolean":
        return t1
    if t1 == "boolean":
        return t0
    real0, real1 = t0.startswith(("f", "bf")), t1.startswith(("f", "bf"))
    if real0 != real1:
        real, integer = (t0, t1) if real0 else (t1, t0)
        if not unsafe and _bits(real) < 2 * _bits(integer):
            raise ValueError(f"{integer} cannot be promoted safely to {real}")
        return real
    if pytorch and (rank0 == 0) != (rank1 == 0):
        target, small = (t1, t0) if rank0 == 0 else (t0, t1)
        if not unsafe:
            same_sign = _signed(target) == _signed(small)
            if not ((same_sign and _bits(target) >= _bits(small))
                    or (_signed(target) and not _signed(small)
                        and 2 * _bits(target) >= _bits(small))):
                raise ValueError(f"the scalar's {small} cannot be promoted safely to {target}")
        return target
    if _signed(t0) != _signed(t1):
        ubits, sbits = (_bits(t1), _bits(t0)) if _signed(t0) else (_bits(t0), _bits(t1))
        if ubits <= 32 and (unsafe or 2 * ubits <= sbits):
            return _SIGNED_BY_BITS.get(max(2 * ubits, sbits), "i64")
        if not unsafe:
            raise ValueError(f"{t0} and {t1} have no safe common signed integer type")
        return u64_target
    if _bits(t0) != _bits(t1):
        return t0 if _bits(t0) > _bits(t1) else t1
    if unsafe and {t0, t1} == {"f16", "bf16"}:
        return "f32"
    raise ValueError(f"{t0} and {t1} have no common type under these attributes")


def _signed(t: str) -> bool:
    return not t.startswith(("u", "boolean"))


def _promote_shape(layer: Layer, ins, consts):
    """Both inputs' shapes, in their promoted type."""
    ranks = [len(i.shape) if i.shape is not None else -1 for i in ins[:2]]
    try:
        t = promoted_type(ins[0].type, ins[1].type, ranks[0], ranks[1],
                          flag(layer, "promote_unsafe"), flag(layer, "pytorch_scalar_promotion"),
                          elements.canonical(attr(layer, "u64_integer_promotion_target", "f32")))
    except (ValueError, AttributeError, TypeError):
        t = None
    return [TensorInfo(t, ins[0].shape), TensorInfo(t, ins[1].shape)]


@op("ConvertPromoteTypes", versions=(14,), outputs=2, shape=_promote_shape,
    notes="element types numpy lacks (i4, u4, u1, f8, bf16) reach the kernel as the numpy type "
          "loopdbg stores them in, and are promoted as that type")
def _convert_promote_types(layer: Layer):
    unsafe = flag(layer, "promote_unsafe", False)
    pytorch = flag(layer, "pytorch_scalar_promotion", False)
    u64_target = elements.canonical(attr(layer, "u64_integer_promotion_target", "f32"))
    if elements.numpy_dtype(u64_target) is None:
        raise ValueError(f"u64_integer_promotion_target={u64_target!r} is not a numpy type")

    def convert_promote_types(a, b):
        a, b = np.asarray(a), np.asarray(b)
        t = promoted_type(elements.from_numpy(a.dtype), elements.from_numpy(b.dtype), a.ndim,
                          b.ndim, unsafe, pytorch, u64_target)
        dtype = elements.numpy_dtype(t)
        if dtype is None:
            raise ValueError(f"the common type {t} has no numpy type in loopdbg")
        return a.astype(dtype), b.astype(dtype)

    return convert_promote_types




# ---- SliceScatter ----------------------------------------------------------------------------

@op("SliceScatter", versions=(15,), shape=same)
def _slice_scatter(layer: Layer):
    def slice_scatter(data, updates, start, stop, step, axes=None):
        data = np.asarray(data)
        starts, stops, steps = ints(start), ints(stop), ints(step)
        which = ints(axes) if axes is not None else list(range(len(starts)))
        if not len(starts) == len(stops) == len(steps) == len(which):
            raise ValueError(f"start {starts}, stop {stops}, step {steps} and axes {which} differ "
                             f"in length")
        index = [slice(None)] * data.ndim
        for a, lo, hi, st in zip(which, starts, stops, steps):
            if not -data.ndim <= a < data.ndim:
                raise ValueError(f"axis {a} is out of range for rank {data.ndim}")
            if st == 0:
                raise ValueError("step is zero")
            if index[a % data.ndim] != slice(None):
                raise ValueError(f"axis {a} appears twice in axes {which}")
            index[a % data.ndim] = slice(lo, hi, st)
        out = data.copy()
        target = out[tuple(index)]
        if np.shape(updates) != target.shape:
            raise ValueError(f"updates of shape {np.shape(updates)} for a slice of shape "
                             f"{target.shape}")
        out[tuple(index)] = updates
        return out

    return slice_scatter
