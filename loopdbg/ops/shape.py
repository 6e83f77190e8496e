"""Kernels that move or re-describe data without arithmetic: Concat, Reshape, Squeeze, Unsqueeze,
ShapeOf, Broadcast, Tile, Transpose, Split, VariadicSplit, Range, Identity.

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

from loopdbg.ir.model import Layer
from loopdbg.ops.convert import choice, flag, index_dtype, int_attr, dtype_attr
from loopdbg.ops.registry import register


def ints(values) -> list[int]:
    """A shape-like input (scalar or 1-D integer array) as a list of Python ints."""
    return np.asarray(values).reshape(-1).tolist()


def scalar(value) -> int:
    """A scalar integer input (an axis, k, depth); a one-element array is accepted too."""
    flat = np.asarray(value).reshape(-1)
    if flat.size != 1:
        raise ValueError(f"expected a scalar, got shape {np.shape(value)}")
    return int(flat[0])


def axis_of(axis: int, rank: int) -> int:
    """``axis`` normalised to [0, rank); ValueError when out of range."""
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


# ---- Concat, Reshape, Squeeze, Unsqueeze, ShapeOf --------------------------------------------


@register("Concat", "opset1")
def _concat(layer: Layer):
    axis = int_attr(layer, "axis")

    def concat(*xs):
        return np.concatenate(xs, axis=axis)

    return concat


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


@register("Reshape", "opset1")
def _reshape(layer: Layer):
    special_zero = flag(layer, "special_zero")

    def reshape(x, shape):
        target = reshape_target(x.shape, ints(shape), special_zero)
        if math.prod(target) != x.size:
            raise ValueError(f"cannot reshape {x.shape} into {ints(shape)}")
        return x.reshape(target)

    return reshape


def _squeeze(x, axes=None):
    if axes is None:
        return np.squeeze(x)
    listed = ints(axes)
    if not listed:
        return np.squeeze(x)
    rank = x.ndim
    drop = tuple(sorted({a for a in (axis_of(a, rank) for a in listed) if x.shape[a] == 1}))
    return np.squeeze(x, axis=drop) if drop else x


register("Squeeze", "opset1")(lambda layer: _squeeze)


@register("Squeeze", "opset15")
def _squeeze15(layer: Layer):
    flag(layer, "allow_axis_skip")  # only changes dynamic-shape inference; values are the same
    return _squeeze


@register("Unsqueeze", "opset1")
def _unsqueeze(layer: Layer):
    def unsqueeze(x, axes):
        listed = set(ints(axes))  # OpenVINO ignores repeated values: [0, 0] adds one axis
        rank = x.ndim + len(listed)
        return np.expand_dims(x, tuple({axis_of(a, rank) for a in listed}))

    return unsqueeze


@register("ShapeOf", "opset1")
def _shape_of1(layer: Layer):
    return lambda x: np.array(np.shape(x), dtype=np.int64)


@register("ShapeOf", "opset3")
def _shape_of3(layer: Layer):
    dtype = index_dtype(layer, "output_type", "i64")
    return lambda x: np.array(np.shape(x), dtype=dtype)


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


def _broadcast_factory(modes: tuple[str, ...]):
    def factory(layer: Layer):
        # Broadcast-1 serializes its explicit mode as "none" (OpenVINO's AutoBroadcastType::NONE).
        mode = choice(layer, "mode", modes + ("none",), "numpy")
        mode = "explicit" if mode == "none" else mode
        axis = int_attr(layer, "axis", -1) if mode == "pdpd" else -1

        def broadcast(x, target_shape, axes_mapping=None):
            target = ints(target_shape)
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

    return factory


register("Broadcast", "opset1")(_broadcast_factory(("numpy", "explicit", "pdpd")))
register("Broadcast", "opset3")(_broadcast_factory(("numpy", "explicit", "pdpd", "bidirectional")))


@register("Tile", "opset1")
def _tile(layer: Layer):
    def tile(x, repeats):
        reps = ints(repeats)
        if any(r < 0 for r in reps):
            raise ValueError(f"Tile repeats {reps} has a negative value")
        return np.tile(x, reps)

    return tile


@register("Transpose", "opset1")
def _transpose(layer: Layer):
    def transpose(x, order):
        perm = ints(order)
        return np.transpose(x, perm if perm else None)

    return transpose


# ---- Split, VariadicSplit --------------------------------------------------------------------


def _split_outputs(layer: Layer) -> int:
    return int_attr(layer, "num_splits") if layer.type == "Split" else len(layer.outputs)


@register("Split", "opset1", outputs=_split_outputs)
def _split(layer: Layer):
    n = int_attr(layer, "num_splits")
    if n < 1:
        raise ValueError(f"num_splits={n} must be positive")
    if layer.outputs and len(layer.outputs) != n:
        raise ValueError(f"num_splits={n} but the layer declares {len(layer.outputs)} outputs")

    def split(x, axis):
        ax = axis_of(scalar(axis), x.ndim)
        if x.shape[ax] % n:
            raise ValueError(f"dimension {ax} of shape {x.shape} does not split into {n} parts")
        parts = np.split(x, n, axis=ax)
        return tuple(parts) if n > 1 else parts[0]

    return split


@register("VariadicSplit", "opset1", outputs=_split_outputs)
def _variadic_split(layer: Layer):
    def variadic_split(x, axis, split_lengths):
        ax = axis_of(scalar(axis), x.ndim)
        lengths = ints(split_lengths)
        dim = x.shape[ax]
        if lengths.count(-1) > 1:
            raise ValueError(f"split_lengths {lengths} has more than one -1")
        if -1 in lengths:
            lengths[lengths.index(-1)] = dim - (sum(lengths) + 1)
        if sum(lengths) != dim or any(v < 0 for v in lengths):
            raise ValueError(f"split_lengths {ints(split_lengths)} do not add up to dimension "
                             f"{ax} of shape {x.shape}")
        parts = np.split(x, np.cumsum(lengths[:-1]).tolist(), axis=ax)
        return tuple(parts) if len(parts) > 1 else parts[0]

    return variadic_split


# ---- Range, Identity -------------------------------------------------------------------------


def range_values(start, stop, step, dtype: np.dtype) -> np.ndarray:
    """Range in ``dtype``; integer types truncate the bounds and step to integers first."""
    if dtype.kind in "iu":
        a, b, s = (int(np.trunc(float(v))) if np.asarray(v).dtype.kind == "f" else int(v)
                   for v in (start, stop, step))
        if s == 0:
            return np.zeros(0, dtype)
        n = max(-((a - b) // s), 0)
        return (a + np.arange(n, dtype=np.int64) * s).astype(dtype)
    a, b, s = float(start), float(stop), float(step)
    if s == 0:
        return np.zeros(0, dtype)
    n = max(math.ceil((b - a) / s), 0)
    return (a + np.arange(n, dtype=np.float64) * s).astype(dtype)


@register("Range", "opset1")
def _range1(layer: Layer):
    def range1(start, stop, step):
        return range_values(start, stop, step, np.asarray(start).dtype)

    return range1


@register("Range", "opset4")
def _range4(layer: Layer):
    dtype = dtype_attr(layer, "output_type")

    def range4(start, stop, step):
        return range_values(start, stop, step, dtype)

    return range4


register("Identity", "opset16")(lambda layer: lambda x: x)
