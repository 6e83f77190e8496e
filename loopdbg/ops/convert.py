"""Conversions: Convert and ConvertLike, plus the attribute parsers every kernel module shares.

Both halves turn one representation into another: ``<data>`` strings into Python values (at factory
time, once per layer) and arrays into another element type (at run time). The numeric rules follow
OpenVINO's reference implementation, checked against the 2026.4 wheel:

* float → integer truncates toward zero, then wraps into the destination (300.0 → u8 is 44,
  −2.7 → u8 is 254). Like x86's ``cvttss2si``, which both REF and CPU inherit, a value that does not
  fit the 32-bit (64-bit for i64/u64) intermediate — NaN, ±inf, 3e9 — becomes that intermediate's
  minimum before wrapping, so NaN → i32 is −2147483648 and NaN → u8 is 0.
* anything → boolean is ``x != 0`` (NaN → true, as REF; the CPU plugin says false).
* narrowing between integers wraps; float → narrower float rounds (overflow gives ±inf).
* bf16 values are kept as float32 (see ``loopdbg.ir.elements``), rounded to bf16 precision.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops.registry import register

# ---- attribute parsing (factory time) --------------------------------------------------------


def attr(layer: Layer, name: str, default: str | None = None) -> str:
    """The raw attribute string; KeyError naming the attribute when it is missing and required."""
    value = layer.data.get(name, default)
    if value is None:
        raise KeyError(f"attribute '{name}' is missing")
    return value.strip()


def flag(layer: Layer, name: str, default: bool = False) -> bool:
    text = attr(layer, name, "true" if default else "false").lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0", ""):
        return False
    raise ValueError(f"{name}={text!r} is not a boolean")


def int_attr(layer: Layer, name: str, default: int | None = None) -> int:
    text = attr(layer, name, None if default is None else str(default))
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not an integer") from None


def float_attr(layer: Layer, name: str, default: float | None = None) -> float:
    text = attr(layer, name, None if default is None else repr(default))
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a number") from None


def int_list(layer: Layer, name: str, default: Sequence[int] = ()) -> list[int]:
    """A comma-separated list (``"0, 1"`` or ``"0,1"``); an empty string is an empty list."""
    text = layer.data.get(name)
    if text is None:
        return list(default)
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a list of integers") from None


def choice(layer: Layer, name: str, allowed: Sequence[str], default: str | None = None) -> str:
    """A lowercase keyword attribute that must be one of ``allowed``."""
    text = attr(layer, name, default).lower()
    if text not in allowed:
        raise ValueError(f"{name}={text!r} is not one of {', '.join(allowed)}")
    return text


def dtype_attr(layer: Layer, name: str, default: str | None = None) -> np.dtype:
    """An element-type attribute (``destination_type``, ``output_type`` ...) as a numpy dtype."""
    text = attr(layer, name, default)
    dtype = elements.numpy_dtype(text)
    if dtype is None:
        raise ValueError(f"{name}={text!r} names no concrete element type")
    return dtype


def index_dtype(layer: Layer, name: str, default: str, allowed=("i32", "i64")) -> np.dtype:
    """An integer output type restricted to ``allowed`` (ShapeOf, TopK, NonZero)."""
    text = attr(layer, name, default)
    if elements.canonical(text) not in allowed:
        raise ValueError(f"{name}={text!r} must be one of {', '.join(allowed)}")
    return elements.numpy_dtype(text)


# ---- array conversion (run time) -------------------------------------------------------------

_I32_MIN, _I64_MIN = -(2 ** 31), -(2 ** 63)


def _float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    t = np.trunc(x)
    if dtype.itemsize <= 4:
        lo, hi = float(_I32_MIN), 2.0 ** 31
        fits = (t >= lo) & (t < hi)
        return np.where(fits, t, lo).astype(np.int64).astype(dtype)
    lo, hi = float(_I64_MIN), 2.0 ** 63
    t64 = t.astype(np.float64)
    fits = (t64 >= lo) & (t64 < hi)
    out = np.where(fits, t64, lo).astype(np.int64).astype(dtype)
    if dtype == np.uint64:
        big = (t64 >= hi) & (t64 < 2.0 ** 64)
        if big.any():
            out[big] = (t64[big] - hi).astype(np.uint64) + np.uint64(2 ** 63)
    return out


def _round_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bf16 (ties to even), kept as float32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    rounded = bits + (np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))
    out = (rounded & np.uint32(0xFFFF0000)).view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), out)


def convert(x: np.ndarray, dtype: np.dtype, bf16: bool = False) -> np.ndarray:
    """``x`` in element type ``dtype`` with OpenVINO's rules (module docstring)."""
    x = np.asarray(x)
    if dtype == np.bool_:
        return x != 0
    kind = x.dtype.kind
    if kind == "f" and dtype.kind in "iu":
        return _float_to_int(x, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        out = x.astype(dtype, copy=False)
    return _round_bf16(out) if bf16 else out


@register("Convert", "opset1")
def _convert(layer: Layer):
    name = attr(layer, "destination_type")
    dtype = dtype_attr(layer, "destination_type")
    bf16 = elements.canonical(name) == "bf16"

    def kernel(x):
        return convert(x, dtype, bf16)

    return kernel


@register("ConvertLike", "opset1")
def _convert_like(layer: Layer):
    def kernel(x, like):
        return convert(x, np.asarray(like).dtype)

    return kernel
