"""Joining and splitting along an axis: Concat, Split and VariadicSplit.

Split's output count is its ``num_splits``; VariadicSplit's is the number of outputs the layer
declares (one per ``split_lengths`` entry, of which one may be -1: the rest of the axis).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import SHAPES, axis_of, const_input, int_attr, ints, scalar
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


def pieces(x: np.ndarray, ax: int, lengths) -> list[np.ndarray]:
    """``x`` cut along axis ``ax`` into consecutive pieces of ``lengths`` (non-negative, adding
    up to the axis): the views ``np.split`` makes, by slicing (np.split's cumsum, array_split and
    swapaxes cost 20 us for three pieces of a small tensor, the slices 2)."""
    lead = (slice(None),) * ax
    out, start = [], 0
    for n in lengths:
        out.append(x[lead + (slice(start, start + n),)])
        start += n
    return out


def _splitter(parts: Callable[[tuple], list[int]], axis_c, n_out: int, general: Callable,
              params: tuple):
    """A kernel cutting ``x`` with keys computed once per input shape: ``parts(shape)`` gives
    the lengths (raising ValueError as the general kernel would). Only when the axis is a
    non-negative constant or a negative one; otherwise ``general``. The keys are kept in
    ``args.SHAPES``' table of ``params`` (what ``parts`` reads besides the shape) and the axis,
    shared by every split of the same ones."""
    if axis_c is None or axis_c.size != 1 or axis_c.dtype.kind not in "iu":
        return general
    axis = int(axis_c.reshape(-1)[0])
    memo = SHAPES.table((*params, axis))
    remember = SHAPES.remember

    def keys_for(shape: tuple) -> tuple:
        ax = axis_of(axis, len(shape))
        return slice_keys(ax, parts(shape, ax))

    def split(x, *_):
        try:
            shape = x.shape
        except AttributeError:
            x = np.asarray(x)
            shape = x.shape
        keys = memo.get(shape)
        if keys is None:
            keys = remember(memo, shape, keys_for)
        if n_out == 1:
            return x[keys[0]]
        return tuple([x[k] for k in keys])

    return split


def slice_keys(ax: int, lengths) -> tuple:
    """The index of each consecutive piece of ``lengths`` along axis ``ax``."""
    lead = (slice(None),) * ax
    keys, start = [], 0
    for n in lengths:
        keys.append(lead + (slice(start, start + n),))
        start += n
    return tuple(keys)


def _by_computed_lengths(axis_c, general: Callable) -> Callable:
    """VariadicSplit by a constant axis and lengths computed in the graph (from a ShapeOf, as
    converters write it: the same few lengths at every iteration): the slices are made once per
    input shape and lengths (kept in ``args.SHAPES``' table of the axis, for every such split), with
    ``general``'s checks and errors."""
    if axis_c is None or axis_c.size != 1 or axis_c.dtype.kind not in "iu":
        return general
    axis = int(axis_c.reshape(-1)[0])
    memo = SHAPES.table(("VariadicSplit", axis))
    remember = SHAPES.remember

    def keys_for(key: tuple) -> tuple:
        shape, lengths = key
        ax = axis_of(axis, len(shape))
        return slice_keys(ax, _split_lengths(list(lengths), shape, ax))     # raises as general

    def variadic_split_computed(x, _axis, split_lengths):
        if type(x) is not np.ndarray:
            x = np.asarray(x)
        if type(split_lengths) is np.ndarray and split_lengths.ndim == 1:
            key = (x.shape, tuple(split_lengths.tolist()))     # ints' value, without its calls
        else:
            key = (x.shape, tuple(ints(split_lengths)))
        keys = memo.get(key)
        if keys is None:
            keys = remember(memo, key, keys_for)
        if len(keys) == 1:
            return x[keys[0]]
        return tuple([x[k] for k in keys])

    return variadic_split_computed


@op("Split", outputs=_num_splits, shape=_split_shape, constants=True)
def _split(layer: Layer, consts=None):
    n = int_attr(layer, "num_splits")
    if n < 1:
        raise ValueError(f"num_splits={n} must be positive")
    if layer.outputs and len(layer.outputs) != n:
        raise ValueError(f"num_splits={n} but the layer declares {len(layer.outputs)} outputs")

    def lengths(shape: tuple, ax: int) -> list[int]:
        if shape[ax] % n:
            raise ValueError(f"dimension {ax} of shape {shape} does not split into {n} parts")
        return [shape[ax] // n] * n

    def split(x, axis):
        ax = axis_of(scalar(axis), x.ndim)
        lengths(x.shape, ax)
        parts = np.split(x, n, axis=ax)
        return tuple(parts) if n > 1 else parts[0]

    return _splitter(lengths, const_input(consts, 1), n, split, ("Split", n))


def _split_lengths(listed: list[int], shape: tuple, ax: int) -> list[int]:
    lengths = list(listed)
    dim = shape[ax]
    if lengths.count(-1) > 1:
        raise ValueError(f"split_lengths {lengths} has more than one -1")
    if -1 in lengths:
        lengths[lengths.index(-1)] = dim - (sum(lengths) + 1)
    if sum(lengths) != dim or any(v < 0 for v in lengths):
        raise ValueError(f"split_lengths {listed} do not add up to dimension "
                         f"{ax} of shape {shape}")
    return lengths


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


@op("VariadicSplit", outputs=_declared, shape=_variadic_split_shape, constants=True)
def _variadic_split(layer: Layer, consts=None):
    def variadic_split(x, axis, split_lengths):
        ax = axis_of(scalar(axis), x.ndim)
        parts = pieces(x, ax, _split_lengths(ints(split_lengths), x.shape, ax))
        return tuple(parts) if len(parts) > 1 else parts[0]

    listed = const_input(consts, 2)
    if listed is None:
        return _by_computed_lengths(const_input(consts, 1), variadic_split)
    listed = ints(listed)
    return _splitter(lambda shape, ax: _split_lengths(listed, shape, ax), const_input(consts, 1),
                     len(listed), variadic_split, ("VariadicSplit", tuple(listed)))
