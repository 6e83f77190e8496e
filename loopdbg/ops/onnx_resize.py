"""ONNX Resize, by loopdbg: one axis at a time, every output coordinate of an axis at once.

onnx.reference was narrower than the specification and onnxruntime here: Resize-10 did not run at
all (it took the scales for the roi), ``tf_half_pixel_for_nn`` (Resize-11, written by tf2onnx for
TensorFlow's nearest resize) and negative ``axes`` were refused, and ``align_corners`` and
``half_pixel_symmetric`` measured the output by the fractional ``in * scale`` rather than its
integer length. Here, per resized axis of input length ``n`` and output length ``m``:

* ``m`` is ``sizes`` (with ``keep_aspect_ratio_policy`` ``not_larger`` / ``not_smaller``: one
  scale for all ``axes``, the smallest / largest ``sizes / n``, and ``m = round(scale * n)``) or
  ``floor(n * scales)``; the scale ``s`` is the given one, else ``m / n``.
* An output index x maps to the input coordinate (float32, as onnxruntime computes it) by
  ``coordinate_transformation_mode``: ``half_pixel`` (x + 0.5) / s - 0.5, ``pytorch_half_pixel``
  the same but 0 when m is 1, ``half_pixel_symmetric`` the same shifted by
  ``n / 2 * (1 - m / (s * n))``, ``align_corners`` x * (n - 1) / (m - 1), ``asymmetric`` x / s,
  ``tf_half_pixel_for_nn`` (x + 0.5) / s, ``tf_crop_and_resize`` from the ``roi`` start to its
  end, a coordinate outside the input giving ``extrapolation_value``. Resize-10 is asymmetric.
* ``nearest`` rounds it by ``nearest_mode`` (Resize-10: down, or up when shrinking); ``linear``
  blends its two neighbours; ``cubic`` weighs four by Keys' kernel with ``cubic_coeff_a``; the
  neighbours are clamped into the axis, or, with ``exclude_outside``, those outside get no weight.
* Upsample (opsets 7 to 10) is Resize-10 under its old name.
* Integer data is computed in float32 and truncated toward zero into its type, as onnxruntime
  does; ``antialias`` on an axis that shrinks (Resize-18) runs by onnx.reference's filter.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a, axis_of, ints_of, opset
from loopdbg.ops.budget import elements, reserve
from loopdbg.ops.registry import op

F32 = np.float32
_TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
               "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_POLICIES = ("stretch", "not_larger", "not_smaller")


def _text(layer: Layer, name: str, default: str) -> str:
    value = a(layer, name, default)
    return value.decode() if isinstance(value, bytes) else str(value)


def _one_of(layer: Layer, name: str, allowed, default: str) -> str:
    value = _text(layer, name, default)
    if value not in allowed:
        raise ValueError(f"Resize {name} '{value}' is not one of {', '.join(allowed)}")
    return value


class Resize:
    """A Resize node's attributes, parsed once."""

    def __init__(self, layer: Layer):
        self.version = opset(layer)
        self.mode = _one_of(layer, "mode", ("nearest", "linear", "cubic") if self.version >= 11
                            else ("nearest", "linear"), "nearest")
        transforms = _TRANSFORMS if self.version >= 19 else \
            tuple(t for t in _TRANSFORMS if t != "half_pixel_symmetric")
        self.transform = "asymmetric" if self.version < 11 else \
            _one_of(layer, "coordinate_transformation_mode", transforms, "half_pixel")
        self.nearest = "simple" if self.version < 11 else \
            _one_of(layer, "nearest_mode", _NEAREST, "round_prefer_floor")
        self.cubic_a = F32(a(layer, "cubic_coeff_a", -0.75))
        self.exclude_outside = bool(int(a(layer, "exclude_outside", 0)))
        self.extrapolation = float(a(layer, "extrapolation_value", 0.0))
        self.antialias = bool(int(a(layer, "antialias", 0)))
        self.axes = None if a(layer, "axes") is None else ints_of(a(layer, "axes"))
        self.policy = _one_of(layer, "keep_aspect_ratio_policy", _POLICIES, "stretch")

    def plan(self, x: np.ndarray, roi, scales, sizes):
        """[(axis, m, s, (roi start, end) or None)] for the axes that change."""
        rank = x.ndim
        axes = list(range(rank)) if self.axes is None else [axis_of(k, rank) for k in self.axes]
        if len(set(axes)) != len(axes):
            raise ValueError(f"Resize axes {self.axes} name an axis twice")
        scales = None if scales is None or np.size(scales) == 0 else \
            np.asarray(scales, F32).reshape(-1)
        sizes = None if sizes is None or np.size(sizes) == 0 else ints_of(sizes)
        if (scales is None) == (sizes is None):
            raise ValueError("Resize needs exactly one of scales and sizes (a non-empty tensor)")
        given = scales if sizes is None else sizes
        if len(given) != len(axes):
            raise ValueError(f"Resize {'scales' if sizes is None else 'sizes'} has {len(given)} "
                             f"values for {len(axes)} axes of the rank-{rank} input")
        lengths = [x.shape[k] for k in axes]
        if sizes is None:
            if np.any(scales <= 0):
                raise ValueError(f"Resize scales {scales.tolist()} must be positive")
            outs = [int(np.floor(F32(n) * s)) for n, s in zip(lengths, scales)]
        else:
            if min(sizes) < 0:
                raise ValueError(f"Resize sizes {sizes} must not be negative")
            with np.errstate(divide="ignore", invalid="ignore"):
                scales = np.array([F32(m) / F32(n) for m, n in zip(sizes, lengths)], F32)
            outs = list(sizes)
            if self.policy != "stretch":
                one = (np.min if self.policy == "not_larger" else np.max)(scales)
                scales = np.full(len(axes), one, F32)
                outs = [int(np.floor(F32(n) * one + F32(0.5))) for n in lengths]
        crops = self._crops(roi, axes, rank)
        return [(k, m, s, c) for k, m, s, c in zip(axes, outs, scales, crops)
                if m != x.shape[k] or s != 1 or c is not None]

    def _crops(self, roi, axes, rank):
        if self.transform != "tf_crop_and_resize":
            return [None] * len(axes)
        roi = None if roi is None else np.asarray(roi, F32).reshape(-1)
        if roi is None or roi.size not in (2 * len(axes), 2 * rank):
            raise ValueError(f"Resize tf_crop_and_resize needs roi with {2 * len(axes)} values "
                             f"(the starts, then the ends, of the resized axes)")
        if roi.size == 2 * len(axes):
            return [(roi[i], roi[i + len(axes)]) for i in range(len(axes))]
        return [(roi[k], roi[k + rank]) for k in axes]


def _coords(r: Resize, m: int, n: int, s, crop) -> np.ndarray:
    """The input coordinate of each output index of an axis (float32)."""
    x = np.arange(m, dtype=F32)
    t = r.transform
    if t == "align_corners":
        return np.zeros(m, F32) if m == 1 else x * F32(n - 1) / F32(m - 1)
    if t == "asymmetric":
        return x / s
    if t == "tf_half_pixel_for_nn":
        return (x + F32(0.5)) / s
    if t == "tf_crop_and_resize":
        start, end = crop
        if m == 1:
            return np.full(m, F32(0.5) * (start + end) * F32(n - 1), F32)
        return start * F32(n - 1) + x * (end - start) * F32(n - 1) / F32(m - 1)
    c = (x + F32(0.5)) / s - F32(0.5)
    if t == "pytorch_half_pixel" and m == 1:
        return np.zeros(m, F32)
    if t == "half_pixel_symmetric":
        c = c + F32(n / 2) * (F32(1) - F32(m) / (s * F32(n)))
    return c


def _nearest(mode: str, c: np.ndarray, shrinking: bool) -> np.ndarray:
    if mode == "simple":
        return np.ceil(c) if shrinking else np.trunc(c)
    if mode in ("floor", "ceil"):
        return getattr(np, mode)(c)
    fl = np.floor(c)
    half = c - fl == F32(0.5)
    tie = fl if mode == "round_prefer_floor" else fl + 1
    return np.where(half, tie, np.floor(c + F32(0.5)))


def _cubic(t: np.ndarray, A) -> list[np.ndarray]:
    """Keys' weights of the neighbours at -1, 0, 1, 2 from the floor, for fraction ``t``."""
    def near(d):
        return ((A + 2) * d - (A + 3)) * d * d + 1

    def far(d):
        return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _axis(r: Resize, y: np.ndarray, k: int, m: int, s, crop) -> np.ndarray:
    n = y.shape[k]
    if m == 0 or n == 0:
        if m and not n:
            raise ValueError(f"Resize cannot make {m} elements from an empty axis {k}")
        return np.take(y, np.zeros(m, np.intp), axis=k)
    c = _coords(r, m, n, s, crop)
    shape = (1,) * k + (m,) + (1,) * (y.ndim - k - 1)
    if r.mode == "nearest":
        idx = np.clip(_nearest(r.nearest, c, m < n), 0, n - 1).astype(np.intp)
        out = np.take(y, idx, axis=k)
    else:
        base = np.floor(c)
        t = (c - base).reshape(shape)
        first = -1 if r.mode == "cubic" else 0
        weights = _cubic(t, r.cubic_a) if r.mode == "cubic" else [F32(1) - t, t]
        taps = [base.astype(np.int64) + first + j for j in range(len(weights))]
        if r.exclude_outside:
            weights = [np.where(((i >= 0) & (i < n)).reshape(shape), w, F32(0))
                       for i, w in zip(taps, weights)]
            total = sum(weights)
            weights = [w / total for w in weights]
        out = sum(w * np.take(y, np.clip(i, 0, n - 1), axis=k) for i, w in zip(taps, weights))
    if crop is not None:
        outside = ((c < 0) | (c > n - 1)).reshape(shape)
        out = np.where(outside, y.dtype.type(r.extrapolation), out)
    return out.astype(y.dtype, copy=False)


def resize(r: Resize, x: np.ndarray, roi=None, scales=None, sizes=None) -> np.ndarray:
    x = np.asarray(x)
    steps = r.plan(x, roi, scales, sizes)
    shape = list(x.shape)
    for k, m, _, _ in steps:
        shape[k] = m
    work = np.float64 if x.dtype == np.float64 else F32
    reserve(elements(shape) * np.dtype(work).itemsize)       # Upsample-7's scales: attributes
    y = x.astype(work)
    for k, m, s, crop in steps:
        y = _axis(r, y, k, m, s, crop)
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        return np.clip(np.trunc(y), info.min, info.max).astype(x.dtype)
    return y.astype(x.dtype, copy=False)


@op("onnx.Resize", versions=(10, 11, 13, 18, 19))
def _resize(layer: Layer):
    r = Resize(layer)
    by_reference: list = []

    def run(x, roi=None, scales=None, sizes=None):
        if r.version < 11:                                  # Resize-10: X and scales only
            roi, scales = None, roi
        if r.antialias and r.mode != "nearest" and any(
                m < x.shape[k] for k, m, _, _ in r.plan(x, roi, scales, sizes)):
            if not by_reference:               # a shrinking antialiased filter: onnx.reference's
                from loopdbg.ops.onnx_reference import reference_kernel

                by_reference.append(reference_kernel(layer))
            return by_reference[0](x, roi, scales, sizes)
        return resize(r, x, roi, scales, sizes)

    return run


@op("onnx.Upsample", versions=(7, 9, 10))
def _upsample(layer: Layer):
    """Upsample is Resize-10 under its old name: ``scales`` an attribute before opset 9."""
    r = Resize(layer)

    def upsample(x, scales):
        if np.any(np.asarray(scales) < 1):
            raise ValueError(f"Upsample scales {np.asarray(scales).tolist()} must be at least 1 "
                             f"(Resize shrinks)")
        return resize(r, x, None, scales)

    if opset(layer) < 9:
        fixed = np.asarray(a(layer, "scales", []), F32)
        return lambda x: upsample(x, fixed)
    return upsample
