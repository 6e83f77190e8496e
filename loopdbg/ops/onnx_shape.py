"""ONNX kernels that move or re-describe data: Shape, Size, Reshape, Squeeze, Unsqueeze, Concat,
Gather, Slice, Expand, Range, Transpose, Flatten, Tile, Split, ConstantOfShape, and friends.

Where an operator's axes, shape or bounds moved from an attribute to an input, the kernel is
registered at both opset versions (Squeeze/Unsqueeze 1 and 13, Slice 1 and 10, Reshape 1 and 5,
Split 1, 13 and 18). Negative axes count from the end; Slice clamps its bounds as ONNX says.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a, axis_of, const_input, declared_outputs, ints_of, opset
from loopdbg.ops.concat_split import pieces
from loopdbg.ops.registry import op


# ---- Shape, Size, ConstantOfShape ------------------------------------------------------------


@op("onnx.Shape", versions=(1, 15))
def _shape(layer: Layer):
    start, end = a(layer, "start", 0), a(layer, "end")

    whole = not start and end is None

    def shape(x):
        dims = x.shape if type(x) is np.ndarray else np.shape(x)
        return np.array(dims if whole else dims[start:end], dtype=np.int64)

    return shape


@op("onnx.Size")
def _size(layer: Layer):
    return lambda x: np.array(np.size(x), dtype=np.int64)


@op("onnx.ConstantOfShape", versions=(9,))
def _constant_of_shape(layer: Layer):
    value = a(layer, "value")
    fill = np.zeros((), np.float32) if value is None else np.asarray(value).reshape(-1)[0]

    def constant_of_shape(shape):
        return np.full(tuple(ints_of(shape)), fill, dtype=np.asarray(fill).dtype)

    return constant_of_shape


# ---- Reshape, Flatten, Squeeze, Unsqueeze ----------------------------------------------------


def reshape_to(x: np.ndarray, target: list[int], allowzero: bool) -> np.ndarray:
    out = list(target)
    if not allowzero:
        for i, d in enumerate(out):
            if d == 0:
                if i >= x.ndim:
                    raise ValueError(f"shape {target} copies dimension {i} of an input of rank "
                                     f"{x.ndim}")
                out[i] = x.shape[i]
    if out.count(-1) > 1:
        raise ValueError(f"shape {target} has more than one -1")
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or x.size % known:
            if x.size == 0 and known == 0:
                out[out.index(-1)] = 0
            else:
                raise ValueError(f"cannot reshape {x.shape} into {target}")
        else:
            out[out.index(-1)] = x.size // known
    return x.reshape(out)


@op("onnx.Reshape", versions=(1, 5))
def _reshape(layer: Layer):
    if opset(layer) < 5:
        target = ints_of(a(layer, "shape", []))
        return lambda x: reshape_to(x, target, False)
    allowzero = bool(a(layer, "allowzero", 0))
    if allowzero:
        return lambda x, shape: reshape_to(x, ints_of(shape), allowzero)

    def reshape(x, shape):
        target = shape.tolist() if type(shape) is np.ndarray and shape.ndim == 1 and \
            shape.dtype == np.int64 else ints_of(shape)
        # no 0 to copy from x's shape: numpy's reshape is ONNX's (one -1 inferred); what it
        # refuses, reshape_to says in ONNX's words (or allows: -1 beside a 0 of an empty x)
        if 0 not in target and type(x) is np.ndarray:
            try:
                return x.reshape(target)
            except ValueError:
                pass
        return reshape_to(x, target, False)

    return reshape


@op("onnx.Flatten")
def _flatten(layer: Layer):
    axis = int(a(layer, "axis", 1))

    def flatten(x):
        ax = axis + x.ndim if axis < 0 else axis
        if not 0 <= ax <= x.ndim:
            raise ValueError(f"axis {axis} is out of range for rank {x.ndim}")
        return x.reshape(math.prod(x.shape[:ax]), math.prod(x.shape[ax:]))

    return flatten


def squeeze(x: np.ndarray, axes) -> np.ndarray:
    if axes is None or len(axes) == 0:
        return np.squeeze(x)
    norm = tuple(sorted({axis_of(int(k), x.ndim) for k in axes}))
    for k in norm:
        if x.shape[k] != 1:
            raise ValueError(f"cannot squeeze axis {k} of shape {x.shape}: its size is not 1")
    return np.squeeze(x, axis=norm)


def unsqueeze(x: np.ndarray, axes) -> np.ndarray:
    rank = x.ndim + len(axes)
    if len(axes) == 1 and -rank <= axes[0] < rank:      # one axis (the usual case), directly
        k = int(axes[0]) % rank
        return x.reshape(x.shape[:k] + (1,) + x.shape[k:])
    norm = sorted(axis_of(int(k), rank) for k in axes)
    if len(set(norm)) != len(norm):
        raise ValueError(f"axes {list(axes)} repeat an axis")
    shape = list(x.shape)
    for k in norm:
        shape.insert(k, 1)
    return x.reshape(shape)


@op("onnx.Squeeze", versions=(1, 13))
def _squeeze(layer: Layer):
    if opset(layer) < 13:
        axes = a(layer, "axes")
        return lambda x: squeeze(x, axes)
    return lambda x, axes=None: squeeze(x, None if axes is None else ints_of(axes))


# x[_NEW_AXIS[k]] inserts an axis at k, for each k a numpy array can have (its rank is at most
# 64): made once, not per layer (a decoder's body has hundreds of Unsqueezes); a constant axis
# past them is one no array has, which ``unsqueeze`` refuses at run time (a tuple of k slices
# made for it would take 8 bytes per unit of a file's number)
_NEW_AXIS = tuple([(slice(None),) * k + (None,) for k in range(64)])


@op("onnx.Unsqueeze", versions=(1, 13), constants=True)
def _unsqueeze(layer: Layer, consts=None):
    if opset(layer) < 13:
        axes = list(a(layer, "axes", []))
        return lambda x: unsqueeze(x, axes)
    known = const_input(consts, 1)
    k = known.item() if type(known) is np.ndarray and known.size == 1 and \
        known.dtype.kind in "iu" else -1
    if 0 <= k < len(_NEW_AXIS):                 # one constant axis (what exporters write)
        at = _NEW_AXIS[k]                       # x[at]: a view with a new axis at k, as
                                                # reshape makes (a numpy scalar: a new array)

        def unsqueeze_at(x, axes):
            if k <= x.ndim:
                return x[at]
            return unsqueeze(x, ints_of(axes))      # says what is out of range

        return unsqueeze_at
    return lambda x, axes: unsqueeze(x, ints_of(axes))


# ---- Concat, Split, Transpose, Tile, Expand --------------------------------------------------

_NONE = type(None)


@op("onnx.Concat", versions=(1, 4))
def _concat(layer: Layer):
    axis = int(a(layer, "axis", 1))

    def concat(*xs):
        if _NONE in map(type, xs):      # an unconnected input (``None in xs`` would compare
                                        # each array with None, element by element)
            xs = [x for x in xs if x is not None]
        first = xs[0]
        rank = first.ndim if type(first) is np.ndarray else np.ndim(first)
        return np.concatenate(xs, axis=axis + rank if -rank <= axis < 0 else
                              axis if 0 <= axis < rank else axis_of(axis, rank))

    return concat


def _split_sizes(length: int, split, count: int, num_outputs=None) -> list[int]:
    if split is not None and len(split):
        sizes = [int(s) for s in split]
        if sum(sizes) != length:
            raise ValueError(f"split sizes {sizes} do not add up to the axis length {length}")
        return sizes
    if num_outputs is not None:           # Split-18: the last chunk may be smaller
        size = -(-length // int(num_outputs))
        sizes = [size] * (length // size) + ([length % size] if length % size else [])
        return sizes
    if length % count:
        raise ValueError(f"axis length {length} does not split into {count} equal parts")
    return [length // count] * count


@op("onnx.Split", versions=(1, 13), outputs=declared_outputs)
def _split(layer: Layer):
    axis = int(a(layer, "axis", 0))
    count = declared_outputs(layer)
    attr_split = a(layer, "split")
    num = a(layer, "num_outputs")
    new = opset(layer) >= 13 or opset(layer) == 1

    def split(x, sizes=None):
        ax = axis_of(axis, x.ndim)
        wanted = ints_of(sizes) if (new and sizes is not None) else attr_split
        return tuple(pieces(x, ax, _split_sizes(x.shape[ax], wanted, count, num)))

    return split


@op("onnx.Transpose")
def _transpose(layer: Layer):
    perm = a(layer, "perm")

    order = tuple(perm) if perm else None

    def transpose(x):
        if type(x) is np.ndarray:       # the method: np.transpose's Python layer costs 1 us
            return x.transpose(order)
        return np.transpose(x, order)

    return transpose


@op("onnx.Tile", versions=(6,))
def _tile(layer: Layer):
    return lambda x, repeats: np.tile(x, ints_of(repeats))


@op("onnx.Expand", versions=(8,))
def _expand(layer: Layer):
    def expand(x, shape):
        x = x if type(x) is np.ndarray else np.asarray(x)
        dims = ints_of(shape)
        target = _broadcast_shape(x.shape, dims) or np.broadcast_shapes(x.shape, tuple(dims))
        out = np.empty(target, x.dtype)         # (np.broadcast_shapes, broadcast_to and array:
        np.copyto(out, x)                       # three times the Python of a per-iteration mask)
        return out

    return expand


def _broadcast_shape(have: tuple, dims: list) -> tuple | None:
    """The shape numpy broadcasts ``have`` and ``dims`` to, or None when they do not broadcast
    or a dimension is negative (``np.broadcast_shapes`` then says what is wrong)."""
    n = max(len(have), len(dims))
    a_dims = (1,) * (n - len(have)) + tuple(have)
    b_dims = [1] * (n - len(dims)) + dims
    out = []
    for d, e in zip(a_dims, b_dims):
        if e < 0 or not (d == e or d == 1 or e == 1):
            return None
        out.append(e if d == 1 else d)
    return tuple(out)


# ---- Gather, Slice ---------------------------------------------------------------------------


@op("onnx.Gather", constants=True)
def _gather(layer: Layer, consts=None):
    axis = int(a(layer, "axis", 0))
    general = gather_on(axis)
    known = const_input(consts, 1)
    if axis == 0 and type(known) is np.ndarray and known.shape == () and known.dtype == np.int64:
        i = int(known)                  # a constant index (an exporter's entry of a shape)

        def gather_at(x, indices):
            if type(x) is np.ndarray and x.ndim == 1 and -x.shape[0] <= i < x.shape[0]:
                return x[i]             # (as np.take: a numpy scalar)
            return general(x, indices)

        return gather_at
    return general


def gather_on(axis: int):
    """ONNX Gather on ``axis`` of its data (``indices`` of any rank, negative ones counted from
    the end)."""

    def gather(x, indices):
        if axis == 0 and type(x) is np.ndarray and x.ndim and (
                type(indices) is np.int64 or type(indices) is np.ndarray and not indices.ndim
                and indices.dtype == np.int64):         # one index on axis 0: a shape's entry
            i, n = int(indices), x.shape[0]
            if -n <= i < n:
                return x[i] if x.ndim == 1 else x[i].copy()     # as np.take: a scalar, a copy
        ax = axis_of(axis, x.ndim)
        idx = indices if type(indices) is np.ndarray and indices.dtype == np.int64 else \
            np.asarray(indices).astype(np.int64)
        try:            # take's "raise" mode is ONNX's range, -n to n - 1: no min and max first
            return np.take(x, idx, axis=ax)
        except IndexError:
            raise ValueError(f"indices {idx.tolist()} are out of range for an axis of length "
                             f"{x.shape[ax]}") from None

    return gather


@op("onnx.GatherElements", versions=(11,))
def _gather_elements(layer: Layer):
    axis = int(a(layer, "axis", 0))

    def gather_elements(x, indices):
        ax = axis_of(axis, x.ndim)
        idx = np.asarray(indices).astype(np.int64)
        idx = np.where(idx < 0, idx + x.shape[ax], idx)
        return np.take_along_axis(x, idx, axis=ax)

    return gather_elements


def slice_(x: np.ndarray, starts, ends, axes=None, steps=None) -> np.ndarray:
    starts, ends = ints_of(starts), ints_of(ends)
    axes = list(range(len(starts))) if axes is None else ints_of(axes)
    steps = [1] * len(starts) if steps is None else ints_of(steps)
    index = [slice(None)] * x.ndim
    for st, en, ax, step in zip(starts, ends, axes, steps):
        ax = axis_of(ax, x.ndim)
        if step == 0:
            raise ValueError("Slice step cannot be 0")
        dim = x.shape[ax]
        if st < 0:
            st += dim
        if en < 0:
            en += dim
        if step > 0:
            st, en = min(max(st, 0), dim), min(max(en, 0), dim)
            index[ax] = slice(st, en, step)
        else:
            st, en = min(max(st, 0), dim - 1), min(max(en, -1), dim - 1)
            index[ax] = slice(st, None if en < 0 else en, step)
    return x[tuple(index)]


@op("onnx.Slice", versions=(1, 10))
def _slice(layer: Layer):
    if opset(layer) < 10:
        starts, ends, axes = a(layer, "starts"), a(layer, "ends"), a(layer, "axes")
        return lambda x: slice_(x, starts, ends, axes)
    return slice_


# ---- Range, CumSum, NonZero, ArgMax/ArgMin ---------------------------------------------------


_I64 = np.dtype(np.int64)
_ARANGE_EXACT = 1 << 52     # |start|, |end| below: arange counts n and adds i * d exactly


@op("onnx.Range", versions=(11,))
def _range(layer: Layer):
    def range_(start, limit, delta):
        dtype = np.asarray(start).dtype
        s, lim, d = (np.asarray(v).reshape(()).item() for v in (start, limit, delta))
        if d == 0:
            raise ValueError("Range delta cannot be 0")
        n = max(int(math.ceil((lim - s) / d)), 0)
        if dtype == _I64 and max(abs(s), abs(s + n * d)) < _ARANGE_EXACT:
            return np.arange(s, s + n * d, d, dtype=np.int64)   # s + i d, each exactly, n of them
        if dtype.kind in "iu":
            return (s + np.arange(n, dtype=np.int64) * d).astype(dtype)
        return (np.asarray(s, dtype) + np.arange(n).astype(dtype) * np.asarray(d, dtype))

    return range_


@op("onnx.CumSum", versions=(11,))
def _cumsum(layer: Layer):
    exclusive, reverse = bool(a(layer, "exclusive", 0)), bool(a(layer, "reverse", 0))

    def cumsum(x, axis):
        ax = axis_of(int(np.asarray(axis).reshape(-1)[0]), x.ndim)
        y = np.flip(x, ax) if reverse else x
        out = np.cumsum(y, axis=ax, dtype=x.dtype)
        if exclusive:
            out = np.concatenate([np.zeros_like(np.take(out, [0], axis=ax)),
                                  np.take(out, range(out.shape[ax] - 1), axis=ax)], axis=ax)
        return np.flip(out, ax) if reverse else out

    return cumsum


@op("onnx.NonZero", versions=(9,))
def _non_zero(layer: Layer):
    return lambda x: np.array(np.nonzero(x), dtype=np.int64).reshape(np.ndim(x), -1)


def _arg_kernel(fn, layer: Layer):
    axis = int(a(layer, "axis", 0))
    keep = bool(a(layer, "keepdims", 1))
    last = bool(a(layer, "select_last_index", 0))

    def arg(x):
        ax = axis_of(axis, x.ndim)
        if last:
            out = x.shape[ax] - 1 - fn(np.flip(x, ax), axis=ax)
        else:
            out = fn(x, axis=ax)
        out = np.asarray(out, dtype=np.int64)
        # (a reshape: np.expand_dims's Python costs as much as the argmax of a decoder's logits)
        return out.reshape(x.shape[:ax] + (1,) + x.shape[ax + 1:]) if keep else out

    return arg


@op("onnx.ArgMax")
def _arg_max(layer: Layer):
    return _arg_kernel(np.argmax, layer)


@op("onnx.ArgMin")
def _arg_min(layer: Layer):
    return _arg_kernel(np.argmin, layer)
