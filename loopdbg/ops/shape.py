"""Kernels that re-describe or repeat data without arithmetic: Reshape, Squeeze, Unsqueeze, ShapeOf,
Broadcast, Tile, Transpose, Range, Identity (Concat and the Splits are in ``concat_split``).

Shape-like inputs (the target shape of Reshape, the axes of Squeeze ...) arrive as small integer
arrays at run time, usually from Constants; they are read with ``.tolist()``, which is cheaper than
any caching would be. Results that numpy can express as views (Reshape, Transpose, Squeeze) stay
views: kernels never write into their inputs, so sharing memory is safe. Broadcast copies, because
its view would have zero strides and be read-only.

Behaviour checked against the 2026.4 wheel: Squeeze silently keeps a listed axis whose dimension is
not 1 (both opset1 and opset15); Range-4 with an integer ``output_type`` truncates start, stop and
step to integers first (0.5..5.2 step 1.3 → 0,1,2,3,4), and a zero step gives an empty result as on
the CPU plugin.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops.args import (SHAPES, attr, axis_of, choice, const_input, dtype_attr, flag,
                             index_dtype, int_attr, ints, reshaper)
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo, axes_of, broadcast, dims, same, same_rank

# ---- Reshape, Squeeze, Unsqueeze, ShapeOf ----------------------------------------------------


def reshape_target(in_shape: tuple[int, ...], target: list[int], special_zero: bool) -> list[int]:
    """Resolve Reshape's 0 (with special_zero) and −1 entries against ``in_shape``."""
    out = list(target)
    if special_zero:
        for i, d in enumerate(out):
            if d == 0:
                if i >= len(in_shape):
                    raise ValueError(f"special_zero copies dimension {i}, but the input "
                                     f"{in_shape} has rank {len(in_shape)}")
                out[i] = in_shape[i]
    if -1 in out:
        if out.count(-1) > 1:
            raise ValueError(f"target shape {target} has more than one -1")
        known = math.prod(d for d in out if d != -1)
        size = math.prod(in_shape)
        if known == 0 or size % known:
            if known == 0 and size == 0:
                out[out.index(-1)] = 0
                return out
            raise ValueError(f"cannot reshape {in_shape} into {target}")
        out[out.index(-1)] = size // known
    if any(d < 0 for d in out):
        raise ValueError(f"target shape {target} has a negative dimension")
    return out


def _reshape_shape(layer: Layer, ins, consts) -> TensorInfo:
    target = dims(consts[1])
    if target is None:
        n = ins[1].shape[0] if ins[1].shape and ins[1].shape[0] >= 0 else None
        return TensorInfo(ins[0].type, None if n is None else (-1,) * n)
    shape = ins[0].shape
    out = list(target)
    if flag(layer, "special_zero"):
        out = [(shape[k] if shape is not None else -1) if d == 0 else d
               for k, d in enumerate(out)]
    if out.count(-1) == 1 and shape is not None and -1 not in shape:
        known = math.prod(d for d in out if d != -1)
        if known:
            out[out.index(-1)] = math.prod(shape) // known
    return TensorInfo(ins[0].type, tuple(out))


@op("Reshape", shape=_reshape_shape, constants=True)
def _reshape(layer: Layer, consts=None):
    special_zero = flag(layer, "special_zero")

    def target_of(in_shape: tuple, shape) -> list[int]:
        target = reshape_target(in_shape, ints(shape), special_zero)
        if math.prod(target) != math.prod(in_shape):
            raise ValueError(f"cannot reshape {in_shape} into {ints(shape)}")
        return target

    memo = SHAPES.table(("Reshape", special_zero))          # shared by every such Reshape
    remember = SHAPES.remember

    def reshape(x, shape):                   # a target computed each iteration (from ShapeOf)
        key = (x.shape, tuple(ints(shape)))
        out = memo.get(key)
        if out is None:
            out = remember(memo, key, lambda k: tuple(target_of(k[0], k[1])))
        return x.reshape(out)

    target = const_input(consts, 1)
    if target is None:
        return reshape
    return reshaper(lambda in_shape: target_of(in_shape, target),
                    params=("Reshape", special_zero, tuple(ints(target))))


def _squeezed(shape: tuple, axes) -> tuple:
    """The shape Squeeze leaves of ``shape``: listed axes of dimension 1 dropped (all 1s when
    ``axes`` is None or empty); a listed axis of another dimension is kept (module docstring)."""
    listed = ints(axes) if axes is not None else []
    if not listed:
        return tuple(d for d in shape if d != 1)
    rank = len(shape)
    drop = {a for a in (axis_of(a, rank) for a in listed) if shape[a] == 1}
    return tuple(d for k, d in enumerate(shape) if k not in drop)


def _squeeze(x, axes=None):
    x = np.asarray(x)
    return x.reshape(_squeezed(x.shape, axes))


def _squeeze_shape(layer: Layer, ins, consts) -> TensorInfo:
    shape = ins[0].shape
    if shape is None:
        return ins[0]
    if len(ins) < 2:
        return TensorInfo(ins[0].type, None if -1 in shape else tuple(d for d in shape if d != 1))
    axes = axes_of(consts[1], len(shape))
    if axes is None or any(shape[a] == -1 for a in axes):
        return TensorInfo(ins[0].type, None)
    return TensorInfo(ins[0].type, tuple(d for k, d in enumerate(shape)
                                         if not (k in axes and d == 1)))


def _squeeze_kernel(consts):
    axes = const_input(consts, 1)
    if axes is None:
        return _squeeze
    return reshaper(lambda shape: _squeezed(shape, axes), params=("Squeeze", tuple(ints(axes))))


@op("Squeeze", shape=_squeeze_shape, default_version=1, constants=True)
def _squeeze1(layer: Layer, consts=None):
    return _squeeze_kernel(consts)


@op("Squeeze", versions=(15,), shape=_squeeze_shape, constants=True)
def _squeeze15(layer: Layer, consts=None):
    flag(layer, "allow_axis_skip")  # only changes dynamic-shape inference; values are the same
    return _squeeze_kernel(consts)


def _unsqueeze_shape(layer: Layer, ins, consts) -> TensorInfo:
    shape = ins[0].shape
    if shape is None or consts[1] is None:
        return TensorInfo(ins[0].type, None)
    axes = axes_of(consts[1], len(shape) + len(set(np.ravel(consts[1]).tolist())))
    rest = iter(shape)
    return TensorInfo(ins[0].type, tuple(1 if k in axes else next(rest)
                                         for k in range(len(shape) + len(axes))))


def _unsqueezed(shape: tuple, axes) -> tuple:
    """``shape`` with a 1 inserted at each of ``axes`` (output positions; repeats count once)."""
    listed = set(ints(axes))  # OpenVINO ignores repeated values: [0, 0] adds one axis
    rank = len(shape) + len(listed)
    at = {axis_of(a, rank) for a in listed}      # [1, -2] of a vector: one axis, as OpenVINO
    rest = iter(shape)
    return tuple(1 if k in at else next(rest) for k in range(len(shape) + len(at)))


@op("Unsqueeze", shape=_unsqueeze_shape, constants=True)
def _unsqueeze(layer: Layer, consts=None):
    axes = const_input(consts, 1)
    if axes is None:
        return lambda x, axes: np.asarray(x).reshape(_unsqueezed(np.shape(x), axes))
    listed = sorted(set(ints(axes)))
    if listed and listed == list(range(len(listed))):
        lead = (None,) * len(listed)            # new leading axes, whatever the rank: x[None]
        return lambda x, axes: np.asarray(x)[lead] if type(x) is not np.ndarray else x[lead]
    return reshaper(lambda shape: _unsqueezed(shape, axes),
                    params=("Unsqueeze", tuple(ints(axes))))


def _shape_of1_shape(layer: Layer, ins, consts) -> TensorInfo:
    return TensorInfo("i64", (-1 if ins[0].shape is None else len(ins[0].shape),))


def _shape_of3_shape(layer: Layer, ins, consts) -> TensorInfo:
    return TensorInfo(elements.canonical(attr(layer, "output_type", "i64")),
                      _shape_of1_shape(layer, ins, consts).shape)


def _shape_of_kernel(dtype: np.dtype):
    array = np.array

    def shape_of(x):
        try:
            return array(x.shape, dtype)
        except AttributeError:
            return array(np.shape(x), dtype)

    return shape_of


@op("ShapeOf", shape=_shape_of1_shape)
def _shape_of1(layer: Layer):
    return _shape_of_kernel(np.dtype(np.int64))


@op("ShapeOf", versions=(3,), shape=_shape_of3_shape)
def _shape_of3(layer: Layer):
    return _shape_of_kernel(index_dtype(layer, "output_type", "i64"))


# ---- Broadcast, Tile, Transpose --------------------------------------------------------------


def _explicit_shape(x, target: list[int], mapping: list[int]) -> tuple[int, ...]:
    if len(mapping) != x.ndim:
        raise ValueError(f"axes_mapping {mapping} must have one entry per input dimension "
                         f"(rank {x.ndim})")
    if mapping != sorted(mapping):
        raise ValueError(f"axes_mapping {mapping} must be increasing")
    shape = [1] * len(target)
    for dim, axis in zip(x.shape, mapping):
        shape[axis_of(axis, len(target))] = dim
    return tuple(shape)


def _broadcast_kernel(layer: Layer, modes: tuple[str, ...]):
    # Broadcast-1 serializes its explicit mode as "none" (OpenVINO's AutoBroadcastType::NONE).
    mode = choice(layer, "mode", modes + ("none",), "numpy")
    mode = "explicit" if mode == "none" else mode
    axis = int_attr(layer, "axis", -1) if mode == "pdpd" else -1

    def broadcast(x, target_shape, axes_mapping=None):
        target = ints(target_shape)
        if mode == "numpy" and type(x) is np.ndarray and _onto(x.shape, target):
            return _filled(target, x)
        if mode == "bidirectional":
            target = list(np.broadcast_shapes(x.shape, tuple(target)))
        elif mode == "explicit":
            if axes_mapping is None:
                raise ValueError("explicit Broadcast needs the axes_mapping input")
            x = x.reshape(_explicit_shape(x, target, ints(axes_mapping)))
        elif mode == "pdpd":
            start = len(target) - x.ndim if axis == -1 else axis
            x = x.reshape((1,) * start + x.shape + (1,) * (len(target) - start - x.ndim))
        return np.broadcast_to(x, target).copy()

    return broadcast


def _onto(have: tuple, target: list[int]) -> bool:
    """Does an array of shape ``have`` broadcast onto ``target`` (numpy's one-way rule, every
    dimension non-negative)? When not, ``np.broadcast_to`` says why."""
    if len(have) > len(target):
        return False
    for d, t in zip(have[::-1], target[::-1]):
        if d != t and d != 1:
            return False
    return min(target, default=0) >= 0


def _filled(shape, x: np.ndarray) -> np.ndarray:
    """A new C-ordered array of ``shape`` filled with ``x`` broadcast (the values of
    ``np.broadcast_to(x, shape).copy()``, without its Python layers: a decoder's per-iteration
    masks and lengths pay per call, ~7 us of ~9)."""
    out = np.empty(shape, x.dtype)
    np.copyto(out, x)
    return out


def _broadcast_shape(layer: Layer, ins, consts) -> TensorInfo:
    target = dims(consts[1])
    bidirectional = attr(layer, "mode", "numpy").lower() == "bidirectional"
    if target is None:
        n = ins[1].shape[0] if ins[1].shape and ins[1].shape[0] >= 0 else None
        return TensorInfo(ins[0].type, None if n is None or bidirectional else (-1,) * n)
    return TensorInfo(ins[0].type, broadcast(ins[0].shape, target) if bidirectional else target)


@op("Broadcast", shape=_broadcast_shape)
def _broadcast1(layer: Layer):
    return _broadcast_kernel(layer, ("numpy", "explicit", "pdpd"))


@op("Broadcast", versions=(3,), shape=_broadcast_shape)
def _broadcast3(layer: Layer):
    return _broadcast_kernel(layer, ("numpy", "explicit", "pdpd", "bidirectional"))


def _tile_shape(layer: Layer, ins, consts) -> TensorInfo:
    shape, reps = ins[0].shape, dims(consts[1])
    if shape is None or reps is None:
        return TensorInfo(ins[0].type, None)
    rank = max(len(shape), len(reps))
    shape = (1,) * (rank - len(shape)) + tuple(shape)
    reps = (1,) * (rank - len(reps)) + reps
    return TensorInfo(ins[0].type, tuple(-1 if d < 0 else d * r for d, r in zip(shape, reps)))


@op("Tile", shape=_tile_shape)
def _tile(layer: Layer):
    def tile(x, repeats):
        reps = ints(repeats)
        if any(r < 0 for r in reps):
            raise ValueError(f"Tile repeats {reps} has a negative value")
        if type(x) is not np.ndarray:
            return np.tile(x, reps)
        # np.tile's values with one copy: x viewed as (1, d0, 1, d1 ...) broadcast into the
        # output viewed as (r0, d0, r1, d1 ...) (np.tile's Python costs ~6 us of a small tile's 8)
        n = max(len(reps), x.ndim)
        shape = (1,) * (n - x.ndim) + x.shape
        reps = [1] * (n - len(reps)) + reps
        out = np.empty(tuple(d * r for d, r in zip(shape, reps)), x.dtype)
        np.copyto(out.reshape([v for d, r in zip(shape, reps) for v in (r, d)]),
                  x.reshape([v for d in shape for v in (1, d)]))
        return out

    return tile


def _transpose_shape(layer: Layer, ins, consts) -> TensorInfo:
    shape, order = ins[0].shape, dims(consts[1])
    if shape is None or order is None:
        return same_rank(ins[0])
    return TensorInfo(ins[0].type, tuple(shape[a] for a in order or range(len(shape))[::-1]))


@op("Transpose", shape=_transpose_shape, constants=True)
def _transpose(layer: Layer, consts=None):
    def transpose(x, order):
        perm = ints(order)
        return np.transpose(x, perm if perm else None)

    order = const_input(consts, 1)
    if order is None:
        return transpose
    perm = tuple(ints(order)) or None

    def transpose_constant(x, _order):      # np.transpose's own call, without its two frames
        try:
            return x.transpose(perm)
        except AttributeError:              # not an array
            return np.transpose(x, perm)

    return transpose_constant


# ---- Range, Identity -------------------------------------------------------------------------


def _range_terms(start, stop, step, dtype: np.dtype) -> tuple[float | int, float | int, int]:
    """First value, step and length of Range in ``dtype`` (integer types truncate all three)."""
    if dtype.kind in "iu":
        if type(start) is type(stop) is type(step) is np.ndarray and start.dtype.kind == \
                stop.dtype.kind == step.dtype.kind == "i":      # (a decoder's, per iteration)
            a, b, s = int(start), int(stop), int(step)
        else:
            a, b, s = (int(np.trunc(float(v))) if np.asarray(v).dtype.kind == "f" else int(v)
                       for v in (start, stop, step))
        return a, s, (max(-((a - b) // s), 0) if s else 0)
    a, b, s = float(start), float(stop), float(step)
    return a, s, (max(math.ceil((b - a) / s), 0) if s else 0)


def range_values(start, stop, step, dtype: np.dtype) -> np.ndarray:
    """Range in ``dtype``; integer types truncate the bounds and step to integers first. An
    integer range whose values and end all fit ``dtype`` is numpy's ``arange`` in it (the same
    ``a + i s``, in one pass instead of three); one that does not wraps as int64 cast down."""
    a, s, n = _range_terms(start, stop, step, dtype)
    if n and dtype.kind in "iu":
        lo, hi = _int_bounds(dtype)
        end = a + n * s
        if lo <= a <= hi and lo <= end <= hi and lo <= end - s <= hi:
            return np.arange(a, end, s, dtype=dtype)
    work = np.int64 if dtype.kind in "iu" else np.float64
    return (a + np.arange(n, dtype=work) * s).astype(dtype)


_BOUNDS: dict[np.dtype, tuple[int, int]] = {}


def _int_bounds(dtype: np.dtype) -> tuple[int, int]:
    """The smallest and largest values of an integer ``dtype``, kept (within ±2**53, where
    ``arange`` counts its length exactly)."""
    found = _BOUNDS.get(dtype)
    if found is None:
        info = np.iinfo(dtype)
        found = _BOUNDS[dtype] = (max(int(info.min), -2 ** 53), min(int(info.max), 2 ** 53))
    return found


def _range_shape(out_type: str | None, consts) -> TensorInfo:
    if out_type is None or any(c is None for c in consts[:3]):
        return TensorInfo(out_type, (-1,))
    dtype = elements.numpy_dtype(out_type)
    return TensorInfo(out_type, (_range_terms(*(np.ravel(c)[0] for c in consts[:3]), dtype)[2],))


def _range1_shape(layer: Layer, ins, consts) -> TensorInfo:
    return _range_shape(ins[0].type, consts)


def _range4_shape(layer: Layer, ins, consts) -> TensorInfo:
    return _range_shape(elements.canonical(attr(layer, "output_type")), consts)


@op("Range", shape=_range1_shape)
def _range1(layer: Layer):
    def range1(start, stop, step):
        return range_values(start, stop, step, np.asarray(start).dtype)

    return range1


@op("Range", versions=(4,), shape=_range4_shape)
def _range4(layer: Layer):
    dtype = dtype_attr(layer, "output_type")

    def range4(start, stop, step):
        return range_values(start, stop, step, dtype)

    return range4


@op("Identity", versions=(16,), shape=same)
def _identity(layer: Layer):
    return lambda x: x
