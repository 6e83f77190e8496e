"""Joining and splitting along an axis: Concat, Split and VariadicSplit.

Split's output count is its ``num_splits``; VariadicSplit's is the number of outputs the layer
declares (one per ``split_lengths`` entry, of which one may be -1: the rest of the axis).
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import axis_of, int_attr, ints, scalar
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo, axes_of, dims, same_rank

# ---- Concat ----------------------------------------------------------------------------------


def _concat_shape(layer: Layer, ins, consts) -> TensorInfo:
    shapes = [i.shape for i in ins]
    known = [s for s in shapes if s is not None]
    if not known:
        return TensorInfo(ins[0].type, None)
    rank = len(known[0])
    axis = axis_of(int_attr(layer, "axis"), rank)
    out = [next((s[k] for s in known if s[k] >= 0), -1) for k in range(rank)]
    out[axis] = -1 if len(known) < len(shapes) or any(s[axis] < 0 for s in known) \
        else sum(s[axis] for s in known)
    return TensorInfo(ins[0].type, tuple(out))


@op("Concat", shape=_concat_shape)
def _concat(layer: Layer):
    axis = int_attr(layer, "axis")

    def concat(*xs):
        return np.concatenate(xs, axis=axis)

    return concat


# ---- Split, VariadicSplit --------------------------------------------------------------------


def _num_splits(layer: Layer) -> int:
    """``num_splits``."""
    return int_attr(layer, "num_splits")


def _declared(layer: Layer) -> int:
    """As many as the layer declares (one per entry of ``split_lengths``)."""
    return len(layer.outputs)


def _split_shape(layer: Layer, ins, consts) -> list[TensorInfo]:
    n = int_attr(layer, "num_splits")
    shape = ins[0].shape
    axes = axes_of(consts[1], None if shape is None else len(shape))
    if axes is None:
        return [same_rank(ins[0])] * n
    out = list(shape)
    out[axes[0]] = shape[axes[0]] // n if shape[axes[0]] >= 0 else -1
    return [TensorInfo(ins[0].type, tuple(out))] * n


@op("Split", outputs=_num_splits, shape=_split_shape)
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


def _variadic_split_shape(layer: Layer, ins, consts) -> list[TensorInfo] | None:
    shape = ins[0].shape
    axes = axes_of(consts[1], None if shape is None else len(shape))
    if axes is None or consts[2] is None:
        return None
    lengths = list(dims(consts[2]))
    if -1 in lengths and shape[axes[0]] >= 0:
        lengths[lengths.index(-1)] = shape[axes[0]] - (sum(lengths) + 1)
    return [TensorInfo(ins[0].type, shape[:axes[0]] + (n,) + shape[axes[0] + 1:])
            for n in lengths]


@op("VariadicSplit", outputs=_declared, shape=_variadic_split_shape)
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
