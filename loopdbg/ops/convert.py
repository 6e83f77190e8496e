"""Conversions: Convert and ConvertLike turn arrays into another element type.

The numeric rules follow OpenVINO's reference implementation, checked against the 2026.4 wheel:

* float → integer truncates toward zero, then wraps into the destination (300.0 → u8 is 44,
  −2.7 → u8 is 254). Like x86's ``cvttss2si``, which both REF and CPU inherit, a value that does not
  fit the 32-bit (64-bit for i64/u64) intermediate — NaN, ±inf, 3e9 — becomes that intermediate's
  minimum before wrapping, so NaN → i32 is −2147483648 and NaN → u8 is 0.
* anything → boolean is ``x != 0`` (NaN → true, as REF; the CPU plugin says false).
* narrowing between integers wraps; float → narrower float rounds (overflow gives ±inf).
* bf16 values are kept as float32 (see ``loopdbg.ir.elements``), rounded to bf16 precision.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops.args import attr, dtype_attr
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

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


@lru_cache(maxsize=256)
def _path(src: np.dtype, dst: np.dtype, bf16: bool):
    """The conversion of arrays of ``src`` to ``dst``, decided once per input dtype: a plain
    ``astype`` where no value can overflow or need OpenVINO's rules, else ``convert``. Kept for
    every Convert of the same types (a decoder's body decompresses ~200 weights, each a Convert
    of its own, f16 to f32, whose first call is at plan time: ``engine.hoist``)."""
    plain = (dst != np.bool_ and not bf16 and src.kind in "biuf" and dst.kind in "biuf"
             and not (src.kind == "f" and dst.kind in "iu")
             and not (dst.kind == "f" and (dst.itemsize < 4 or (src.kind == "f" and
                                                                src.itemsize > dst.itemsize))))
    if plain:
        if src == np.float16 and dst == np.float32:
            return _half_to_single
        return lambda x: x.astype(dst, copy=False)
    return lambda x: convert(x, dst, bf16)


# f16 -> f32, the decompression of every weight of an IR saved with ``compress_to_fp16`` (at plan
# time: ``engine.hoist``), by a table of the 65,536 float16 bit patterns: numpy's ``astype``
# converts each element on its own (~2.4 ns a weight here), a lookup is ~1.1 ns. The table is
# made by that very ``astype``, so every value is the one ``astype`` gives, bit for bit (NaN
# payloads, subnormals, infinities); 256 KiB, made the first time a big array is converted.
# Small arrays (under ``_TABLE_FROM`` elements: below it, a plan's many small weights gain
# nothing, the table's lines being out of the cache between them) and arrays not in C order
# (whose ``astype`` keeps their layout) take ``astype``.
_TABLE_FROM = 8192
_HALF_TABLE: list[np.ndarray] = []
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)


def _half_to_single(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``x.astype(np.float32)`` (``x`` float16), into ``out`` when given (float32, ``x``'s
    shape, C order; then ``x`` is in C order too)."""
    if x.size < _TABLE_FROM or not x.flags.c_contiguous:
        if out is None:
            return x.astype(np.float32)
        np.copyto(out, x)                   # (the same conversion as astype's)
        return out
    if not _HALF_TABLE:
        _HALF_TABLE.append(np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32))
    return _HALF_TABLE[0].take(x.view(np.uint16), mode="wrap", out=out)     # (every index
    #                                                                   fits: no check, no wrap)


def _convert_shape(layer: Layer, ins, consts):
    return TensorInfo(elements.canonical(attr(layer, "destination_type")), ins[0].shape)


# destination_type as written -> (dtype, bf16): a decoder's body has ~200 Converts, most of one
# or two spellings, each parsed once (a bad one raises each time: nothing is kept of it)
_TARGETS: dict[str, tuple[np.dtype, bool]] = {}


@op("Convert", shape=_convert_shape)
def _convert(layer: Layer):
    name = attr(layer, "destination_type")
    target = _TARGETS.get(name)
    if target is None:
        target = (dtype_attr(layer, "destination_type"), elements.canonical(name) == "bf16")
        if len(_TARGETS) < 64:
            _TARGETS[name] = target
    dtype, bf16 = target

    paths: dict = {}                         # input dtype -> how to convert it

    def kernel(x):
        if type(x) is not np.ndarray:
            x = np.asarray(x)
        fn = paths.get(x.dtype)
        if fn is None:
            fn = paths[x.dtype] = _path(x.dtype, dtype, bf16)
        return fn(x)

    if dtype == np.float32 and not bf16:
        kernel.into = _decompress_into
    return kernel


def _decompress_into(x, out: np.ndarray) -> np.ndarray | None:
    """What a Convert to f32 gives for ``x``, written into ``out`` (float32, ``x``'s shape, C
    order) when ``x`` is a float16 array in C order (a weight saved compressed), else None: the
    planner folds a body's decompressions into one buffer (``engine.hoist.weight_buffer``)."""
    if type(x) is not np.ndarray or x.dtype != _F16 or not x.flags.c_contiguous \
            or x.shape != out.shape or out.dtype != _F32:
        return None
    return _half_to_single(x, out)


def _convert_like_shape(layer: Layer, ins, consts):
    return TensorInfo(ins[1].type, ins[0].shape)


@op("ConvertLike", shape=_convert_like_shape)
def _convert_like(layer: Layer):
    def kernel(x, like):
        return convert(x, np.asarray(like).dtype)

    return kernel
