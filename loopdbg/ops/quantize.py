"""Quantisation emulated in floating point: FakeQuantize and FakeConvert.

* FakeQuantize-1: values at or below ``min(input_low, input_high)`` become ``output_low``, above
  ``max(...)`` ``output_high``; the rest are put on ``levels`` evenly spaced steps (rounding half
  to even) and mapped onto [output_low, output_high]. Computed in the data's type, as OpenVINO's
  reference does, so that ties round the same way.
* FakeConvert-13: ``data·scale − shift`` (in the data's type, then rounded to f16 as OpenVINO
  does first) is converted to the f8 type
  ``destination_type`` (f8e4m3: 3 mantissa bits, largest 448, no infinity; f8e5m2: 2 mantissa
  bits, largest 57344), rounding to nearest, ties to even, with subnormals; finite values past
  the largest saturate to it (f8e4m3 saturates infinities too, as OpenVINO does); then back, and
  ``(· + shift) / scale``.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import attr, choice, int_attr
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import same


@op("FakeQuantize", shape=same)
def _fake_quantize(layer: Layer):
    levels = int_attr(layer, "levels")
    if levels < 2:
        raise ValueError(f"levels must be at least 2, got {levels}")
    equal_shapes = choice(layer, "auto_broadcast", ("numpy", "none"), "numpy") == "none"

    def fake_quantize(x, in_low, in_high, out_low, out_high):
        x = np.asarray(x)
        t = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
        if equal_shapes and len({np.shape(v) for v in (x, in_low, in_high, out_low,
                                                       out_high)}) > 1:
            raise ValueError("with auto_broadcast='none' all five inputs need one shape")
        il, ih, ol, oh = (np.asarray(v).astype(t) for v in (in_low, in_high, out_low, out_high))
        steps = t.type(levels - 1)
        xf = x.astype(t)
        with np.errstate(invalid="ignore", divide="ignore"):
            q = np.rint((xf - il) / (ih - il) * steps) / steps * (oh - ol) + ol
        q = np.where(xf <= np.minimum(il, ih), ol, np.where(xf > np.maximum(il, ih), oh, q))
        out = np.broadcast_to(q, np.broadcast_shapes(x.shape, il.shape, ih.shape, ol.shape,
                                                     oh.shape))
        return out.astype(x.dtype)

    return fake_quantize


# ---- FakeConvert -----------------------------------------------------------------------------

# (mantissa bits, smallest normal exponent, largest finite value) of the f8 types.
_F8 = {"f8e4m3": (3, -6, 448.0), "f8e5m2": (2, -14, 57344.0)}


def to_f8(v: np.ndarray, kind: str) -> np.ndarray:
    """``v`` rounded to the f8 type ``kind`` (nearest, ties to even; subnormals kept; finite
    values past the largest saturate to it; NaN stays NaN), as float64."""
    mant, emin, top = _F8[kind]
    v = np.asarray(v, np.float64)
    finite = np.isfinite(v)
    safe = np.where(finite & (v != 0), np.abs(v), 1.0)
    exp = np.maximum(np.floor(np.log2(safe)), emin)
    step = np.exp2(exp - mant)
    q = np.rint(v / step) * step
    q = np.clip(np.where(finite, q, v), -top, top) if kind == "f8e4m3" else np.where(
        finite, np.clip(q, -top, top), v)
    return np.where(np.isnan(v), v, q)


@op("FakeConvert", versions=(13,), shape=same,
    notes="rounds like Convert to the f8 type, as the specification says (and the CPU plugin "
          "does); OpenVINO's reference emulation, which goes through f16 bit patterns, "
          "truncates f8e4m3 subnormals and flushes magnitudes below 2**-9 to zero")
def _fake_convert(layer: Layer):
    target = attr(layer, "destination_type").lower()
    if target not in _F8:
        raise ValueError(f"destination_type={target!r} is not f8e4m3 or f8e5m2")

    def fake_convert(data, scale, shift=None):
        data = np.asarray(data)
        t = data.dtype
        if t.kind != "f":
            raise ValueError(f"FakeConvert takes floating-point data, got {t}")
        s = np.asarray(scale).astype(t)
        o = np.zeros((), t) if shift is None else np.asarray(shift).astype(t)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            z = to_f8((data * s - o).astype(np.float16), target).astype(t)
            return ((z + o) / s).astype(t, copy=False)

    return fake_convert
