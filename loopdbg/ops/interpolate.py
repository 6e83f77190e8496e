"""Interpolate-1, Interpolate-4 and Interpolate-11: resizing along some axes.

Every mode is separable: ``nearest`` takes an index array per resized axis (``np.take``); the
other modes gather each tap (combination) for the whole output at once and accumulate in
OpenVINO's order and precision (float32; float64 for the Pillow modes, one axis at a time), so
that integer results round exactly as OpenVINO's do. No loop runs over output elements.

The arithmetic follows the specification and OpenVINO's reference implementation (the CPU
plugin departs in three places, listed in the op table's notes):

* The input is first zero-padded by ``pads_begin`` / ``pads_end`` (one entry per input axis,
  missing entries 0). The output keeps the padded shape except on ``axes`` (default: every
  axis), where it is ``sizes`` (``shape_calculation_mode="sizes"``), or ``int(in * (scale +
  1e-6))`` in float32 (``"scales"``).
* The scale of an axis is the given scale, or ``out / in`` (float32) in ``sizes`` mode. An
  output coordinate x maps to the input by ``coordinate_transformation_mode``: ``half_pixel``
  (x + 0.5) / s - 0.5, ``pytorch_half_pixel`` the same but 0 when the output has length 1,
  ``asymmetric`` x / s, ``tf_half_pixel_for_nn`` (x + 0.5) / s, ``align_corners``
  x * (in - 1) / (out - 1) (0 for length 1); an axis whose scale is 1 or whose length does not
  change maps x to x. Coordinates are float32, as OpenVINO computes them.
* ``nearest`` rounds that coordinate by ``nearest_mode`` (``round_prefer_floor``,
  ``round_prefer_ceil``, ``floor``, ``ceil``, ``simple``: ceil when downsampling, else
  truncation) and clamps it into the axis.
* ``linear_onnx`` blends the two neighbours of the coordinate clamped into the axis.
* ``linear`` is a triangle filter over the taps within 2 (upsampling) or ceil(2 / a) of the
  rounded coordinate, normalised by the sum of the weights that fall inside the axis; with
  ``antialias`` and any axis downsampled, a = scale stretches the filter (a = 1 otherwise).
* ``cubic``: Keys' cubic convolution with ``cube_coeff``, the taps clamped into the axis.
* ``bilinear_pillow`` / ``bicubic_pillow`` (version 11, exactly two axes: H then W): Pillow's
  resampling filters (always antialiased, bicubic with ``cube_coeff``), W pass first then H.
* Integer data: ``linear`` and the Pillow modes round halves away from zero (the Pillow modes
  clip to the type); ``linear_onnx`` and ``cubic`` truncate toward zero. float16 computes in
  float32.

Interpolate-1 runs as OpenVINO runs it, converted to Interpolate-4: sizes mode, ``simple``
nearest mode, ``asymmetric`` coordinates (``align_corners`` when set; ``half_pixel`` for a
``linear`` resize without pads unless it resizes axes 2 and 3 of 4-D data), ``linear`` meaning
``linear_onnx`` below 5-D. Its ``area`` mode, which OpenVINO does not run, is refused.
"""

from __future__ import annotations

import itertools

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import choice, flag, float_attr, int_list
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

F32 = np.float32
_MODES = {1: ("nearest", "linear", "cubic", "linear_onnx", "area"),
          4: ("nearest", "linear", "linear_onnx", "cubic"),
          11: ("nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow", "bicubic_pillow")}
_TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn",
               "align_corners")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")


class Resize:
    """The attributes of an Interpolate layer, parsed once."""

    def __init__(self, layer: Layer, version: int):
        self.version = version
        self.mode = choice(layer, "mode", _MODES[version])
        self.antialias = flag(layer, "antialias")
        self.pads_begin = int_list(layer, "pads_begin", ())
        self.pads_end = int_list(layer, "pads_end", ())
        if any(p < 0 for p in self.pads_begin + self.pads_end):
            raise ValueError("Interpolate pads must not be negative")
        if version == 1:
            self._from_v1(layer)
            return
        self.by_scales = choice(layer, "shape_calculation_mode", ("sizes", "scales")) == "scales"
        self.transform = choice(layer, "coordinate_transformation_mode", _TRANSFORMS,
                                "half_pixel")
        self.nearest = choice(layer, "nearest_mode", _NEAREST, "round_prefer_floor")
        self.cube_coeff = float_attr(layer, "cube_coeff", -0.75)
        self.axes = None

    def _from_v1(self, layer: Layer) -> None:
        if self.mode == "area":
            raise ValueError("mode='area' is not run by OpenVINO (its CPU plugin cannot convert "
                             "it), nor by loopdbg")
        self.axes = sorted(set(int_list(layer, "axes")))
        if not self.axes:
            raise KeyError("attribute 'axes' is missing")
        self.by_scales = False
        self.nearest = "simple"
        self.cube_coeff = -0.75
        self.transform = "align_corners" if flag(layer, "align_corners") else "asymmetric"
        self.align_corners = flag(layer, "align_corners")

    def v1_plan(self, rank: int) -> tuple[str, str]:
        """Interpolate-1's linear mode and transform depend on the data rank."""
        if self.mode == "linear":
            if rank > 5:
                raise ValueError("Interpolate-1 'linear' takes data of rank 5 at most")
            mode = "linear_onnx" if rank < 5 else "linear"
        else:
            mode = self.mode
        transform = self.transform
        unpadded = not any(self.pads_begin) and not any(self.pads_end)
        if (not self.align_corners and mode in ("linear", "linear_onnx") and unpadded
                and not (rank == 4 and self.axes == [2, 3])):
            transform = "half_pixel"
        return mode, transform

    # ---- output shape ----------------------------------------------------------------------

    def pads(self, rank: int) -> tuple[list[int], list[int]]:
        def fit(p):
            return (list(p) + [0] * rank)[:rank]
        return fit(self.pads_begin), fit(self.pads_end)

    def axes_of(self, axes, rank: int) -> list[int]:
        if self.axes is not None:
            listed = self.axes
        elif axes is None:
            listed = list(range(rank))
        else:
            listed = [int(a) for a in np.ravel(axes)]
        if any(not 0 <= a < rank for a in listed):
            raise ValueError(f"Interpolate axes {listed} are out of range for rank {rank}")
        return listed

    def plan(self, shape, sizes, scales, axes):
        """(padded shape, axes, output shape, float32 scale per axis)."""
        rank = len(shape)
        pb, pe = self.pads(rank)
        padded = [d + b + e for d, b, e in zip(shape, pb, pe)]
        listed = self.axes_of(axes, rank)
        out = list(padded)
        if self.by_scales:
            given = np.ravel(scales).astype(F32)
            if given.size < len(listed):
                raise ValueError(f"Interpolate has {given.size} scales for {len(listed)} axes")
            factors = [F32(s) for s in given[:len(listed)]]
            for a, s in zip(listed, factors):
                if s != F32(1):
                    out[a] = int(F32(padded[a]) * (s + F32(1e-6)))
        else:
            wanted = [int(v) for v in np.ravel(sizes)]
            if len(wanted) < len(listed):
                raise ValueError(f"Interpolate has {len(wanted)} sizes for {len(listed)} axes")
            for a, n in zip(listed, wanted):
                out[a] = n
            factors = [F32(out[a]) / F32(padded[a]) if padded[a] else F32(1) for a in listed]
        if any(d < 0 for d in out):
            raise ValueError(f"Interpolate output shape {out} is negative")
        return padded, listed, out, factors


# ---- one axis --------------------------------------------------------------------------------


def source_coords(transform: str, n_out: int, n_in: int, scale) -> np.ndarray:
    """The float32 input coordinate of each output position along one axis."""
    x = np.arange(n_out, dtype=F32)
    scale = F32(scale)
    if scale == F32(1) or n_out == n_in:
        return x
    half = F32(0.5)
    if transform == "half_pixel":
        return (x + half) / scale - half
    if transform == "pytorch_half_pixel":
        return (x + half) / scale - half if n_out > 1 else np.zeros(n_out, F32)
    if transform == "asymmetric":
        return x / scale
    if transform == "tf_half_pixel_for_nn":
        return (x + half) / scale
    if n_out == 1:                                        # align_corners
        return np.zeros(n_out, F32)
    return x * F32(n_in - 1) / F32(n_out - 1)


def _round_half_away(c: np.ndarray) -> np.ndarray:
    """std::round: halves away from zero (c - trunc(c) is exact, c + 0.5 would not be)."""
    whole = np.trunc(c)
    return whole + np.where(np.abs(c - whole) >= 0.5, np.sign(c), 0).astype(c.dtype)


def nearest_index(mode: str, coords: np.ndarray, n_in: int, downsample: bool) -> np.ndarray:
    if mode == "round_prefer_floor":
        tie = coords == np.trunc(coords) + F32(0.5)
        picked = np.where(tie, np.floor(coords), _round_half_away(coords))
    elif mode == "round_prefer_ceil":
        picked = _round_half_away(coords)
    elif mode == "floor":
        picked = np.floor(coords)
    elif mode == "ceil" or downsample:                  # ceil, or simple when downsampling
        picked = np.ceil(coords)
    else:
        picked = np.trunc(coords)
    return np.clip(picked.astype(np.int64), 0, n_in - 1)


# Each of the other modes gives, per resized axis, taps: input indices ``[out, T]`` and float32
# weights ``[out, T]``. The taps of all axes are then visited in OpenVINO's order (row-major over
# the axes), multiplying the weights in axis order and accumulating in float32, so that integer
# results round or truncate exactly as OpenVINO's reference does.


def linear_onnx_taps(coords: np.ndarray, n_in: int):
    c = np.clip(coords, F32(0), F32(n_in - 1))
    lo = np.minimum(c.astype(np.int64), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    w_hi = np.abs(c - lo.astype(F32))
    w_lo = np.abs(c - hi.astype(F32))
    same = lo == hi
    w_hi[same] = w_lo[same] = F32(0.5)
    return np.stack([lo, hi], axis=1), np.stack([w_lo, w_hi], axis=1)


def linear_taps(coords: np.ndarray, n_in: int, scale, a):
    """The triangle filter of mode ``linear``; taps outside the axis weigh 0."""
    a = F32(a)
    reach = 2 if scale > 1 else int(np.ceil(F32(2) / a))
    idx = _round_half_away(coords).astype(np.int64)[:, None] + np.arange(-reach, reach + 1)
    inside = (idx >= 0) & (idx < n_in)
    dz = coords[:, None] - idx.astype(F32)
    w = np.maximum(F32(0), F32(1) - np.abs(a * dz))
    return np.clip(idx, 0, n_in - 1), np.where(inside, w, F32(0)).astype(F32)


def cubic_taps(coords: np.ndarray, n_in: int, a):
    a = F32(a)
    base = np.floor(coords)
    s = np.abs(coords - base)
    one, two = F32(1), F32(2)
    w = np.stack([((a * (s + one) - F32(5) * a) * (s + one) + F32(8) * a) * (s + one) - F32(4) * a,
                  ((a + two) * s - (a + F32(3))) * s * s + one,
                  ((a + two) * (one - s) - (a + F32(3))) * (one - s) * (one - s) + one,
                  ((a * (two - s) - F32(5) * a) * (two - s) + F32(8) * a) * (two - s)
                  - F32(4) * a], axis=1)
    idx = np.clip(base.astype(np.int64)[:, None] + np.arange(-1, 3), 0, n_in - 1)
    return idx, w.astype(F32)


def tap_sum(x: np.ndarray, axes, taps, start=1.0, with_weights=False):
    """sum over every tap combination of (product of weights) * x[taps], in float32."""
    total = weights = None
    for combo in itertools.product(*[range(t[0].shape[1]) for t in taps]):
        part, w = x, np.asarray(start, F32)
        for a, (idx, wt), k in zip(axes, taps, combo):
            part = np.take(part, idx[:, k], axis=a)
            shape = [1] * x.ndim
            shape[a] = -1
            w = w * wt[:, k].reshape(shape)
        term = w * part
        total = term if total is None else total + term
        if with_weights:
            weights = w if weights is None else weights + w
    return total, weights


def pillow_taps(n_in: int, n_out: int, bicubic: bool, a: float):
    """Pillow's resampling taps over the whole input (box [0, n_in]), in float64 and in
    Pillow's operation order: indices ``[out, K]`` and weights (0 past a row's taps)."""
    scale = n_in / n_out
    stretch = max(scale, 1.0)
    support = (2.0 if bicubic else 1.0) * stretch
    ksize = int(np.ceil(support)) * 2 + 1
    centre = (np.arange(n_out) + 0.5) * scale
    lo = np.maximum((centre - support + 0.5).astype(np.int64), 0)
    count = np.minimum((centre + support + 0.5).astype(np.int64), n_in) - lo
    idx = lo[:, None] + np.arange(ksize)
    t = np.abs((idx - centre[:, None] + 0.5) * (1.0 / stretch))
    if bicubic:
        w = np.where(t < 1, ((a + 2.0) * t - (a + 3.0)) * t * t + 1,
                     np.where(t < 2, (((t - 5) * t + 8) * t - 4) * a, 0.0))
    else:
        w = np.where(t < 1, 1.0 - t, 0.0)
    w = np.where(np.arange(ksize) < count[:, None], w, 0.0)
    total = np.zeros(n_out)
    for k in range(ksize):                                # Pillow sums the weights in order
        total = total + w[:, k]
    w = np.divide(w, total[:, None], out=w.copy(), where=total[:, None] != 0)
    return np.clip(idx, 0, n_in - 1), w


def _pillow_pass(y: np.ndarray, axis: int, idx: np.ndarray, w: np.ndarray) -> np.ndarray:
    shape = [1] * y.ndim
    shape[axis] = -1
    total = None
    for k in range(idx.shape[1]):
        term = np.take(y, idx[:, k], axis=axis) * w[:, k].reshape(shape)
        total = term if total is None else total + term
    return total


# ---- the kernel ------------------------------------------------------------------------------


def _to_type(y: np.ndarray, dtype: np.dtype, rounding: str) -> np.ndarray:
    """Integers rounded half away from zero or truncated, then kept in the type's range (where
    OpenVINO's reference lets a cubic overshoot wrap around)."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        y = np.clip(_round_half_away(y) if rounding == "round" else np.trunc(y), info.min,
                    info.max)
    return y.astype(dtype)


def interpolate(resize: Resize, x: np.ndarray, sizes=None, scales=None, axes=None):
    mode, transform = resize.mode, resize.transform
    if resize.version == 1:
        mode, transform = resize.v1_plan(x.ndim)
    padded, listed, out, factors = resize.plan(x.shape, sizes, scales, axes)
    pb, _ = resize.pads(x.ndim)
    if padded != list(x.shape):
        grown = np.zeros(padded, dtype=x.dtype)
        grown[tuple(slice(b, b + d) for b, d in zip(pb, x.shape))] = x
        x = grown
    if mode == "nearest":
        for a, s in zip(listed, factors):
            coords = source_coords(transform, out[a], padded[a], s)
            x = np.take(x, nearest_index(resize.nearest, coords, padded[a], s < 1), axis=a)
        return x
    if mode in ("bilinear_pillow", "bicubic_pillow"):
        if len(listed) != 2:
            raise ValueError(f"Interpolate mode {mode} resizes exactly two axes, not "
                             f"{len(listed)}")
        between = np.dtype(F32) if x.dtype == np.float16 else x.dtype   # f16 runs as f32
        y = x.astype(np.float64)
        for a in reversed(listed):                      # W first, then H, as Pillow does
            if out[a] != padded[a]:
                idx, w = pillow_taps(padded[a], out[a], mode == "bicubic_pillow",
                                     resize.cube_coeff)
                y = _to_type(_pillow_pass(y, a, idx, w), between, "round").astype(np.float64)
        return y.astype(x.dtype)
    x32 = x.astype(F32, copy=False)
    taps = []
    downsample = any(s < 1 for s in factors)
    for a, s in zip(listed, factors):
        coords = source_coords(transform, out[a], padded[a], s)
        if mode == "linear_onnx":
            taps.append(linear_onnx_taps(coords, padded[a]))
        elif mode == "linear":
            taps.append(linear_taps(coords, padded[a], s,
                                    s if resize.antialias and downsample else 1))
        else:
            taps.append(cubic_taps(coords, padded[a], resize.cube_coeff))
    if mode == "linear":
        start = np.prod(factors, dtype=F32) if resize.antialias and downsample else F32(1)
        total, weights = tap_sum(x32, listed, taps, start, with_weights=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            y = np.where(weights == 0, F32(0), total / weights)
        return _to_type(y, x.dtype, "round")
    return _to_type(tap_sum(x32, listed, taps)[0], x.dtype, "trunc")


# ---- registration ----------------------------------------------------------------------------


def _shape(version: int):
    def rule(layer: Layer, ins, consts) -> TensorInfo:
        shape = ins[0].shape
        if shape is None:
            return TensorInfo(ins[0].type, None)
        resize = Resize(layer, version)
        axes = consts[-1] if (version == 4 and len(ins) == 4) or \
            (version == 11 and len(ins) == 3) else None
        if axes is None and len(ins) > (3 if version == 4 else 2):
            return TensorInfo(ins[0].type, (-1,) * len(shape))
        if version == 1:
            sizes, scales = consts[1], None
        elif version == 4:
            sizes, scales = consts[1], consts[2]
        else:
            sizes = scales = consts[1]
        needed = scales if resize.by_scales else sizes
        if needed is None or -1 in shape:
            return TensorInfo(ins[0].type, (-1,) * len(shape))
        if version == 1:                               # Interpolate-1 does not pad other axes
            out = list(shape)
            for a, n in zip(resize.axes, np.ravel(sizes)):
                out[a] = int(n)
            return TensorInfo(ins[0].type, tuple(out))
        return TensorInfo(ins[0].type, tuple(resize.plan(shape, sizes, scales, axes)[2]))

    return rule


@op("Interpolate", versions=(1,), shape=_shape(1),
    notes="Run as OpenVINO runs it, converted to Interpolate-4 (see the module docstring); "
          "mode 'area' is refused.")
def _interpolate1(layer: Layer):
    resize = Resize(layer, 1)
    return lambda x, target: interpolate(resize, x, sizes=target)


_CPU = ("OpenVINO's CPU plugin departs from the specification and the reference implementation, "
        "which loopdbg follows: it rounds integer results of every mode to nearest (linear_onnx "
        "and cubic truncate), and its 'linear' antialiasing differs")


@op("Interpolate", versions=(4,), shape=_shape(4), notes=_CPU + ".")
def _interpolate4(layer: Layer):
    resize = Resize(layer, 4)
    return lambda x, sizes, scales, axes=None: interpolate(resize, x, sizes, scales, axes)


@op("Interpolate", versions=(11,), shape=_shape(11),
    notes=_CPU + "; its bicubic_pillow ignores cube_coeff (it always uses -0.5).")
def _interpolate11(layer: Layer):
    resize = Resize(layer, 11)
    return lambda x, scales_or_sizes, axes=None: interpolate(resize, x, scales_or_sizes,
                                                             scales_or_sizes, axes)
