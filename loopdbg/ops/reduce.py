"""Reductions (ReduceSum ... ReduceLogicalOr), TopK, NonZero and CumSum.

OpenVINO semantics that differ from numpy's defaults, checked against the 2026.4 wheel:

* An empty ``axes`` input reduces nothing (the output is the input), and repeated axes count once.
* Sums and products stay in the input's element type (numpy would widen int32 to int64), and an
  integer ReduceMean truncates toward zero (−3.5 → −3).
* Reductions to a single value return a 0-d array, never a numpy scalar.
* TopK breaks ties by the smaller index and treats ``sort="none"`` like ``sort="value"``, as the
  CPU plugin does; a ``k`` larger than the axis is clamped to it.
* NonZero of a scalar sees it as a one-element vector: its output has shape [1, n].
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops.args import (attr, axis_of, choice, const_input, flag, index_dtype, int_attr,
                              ints, scalar)
from loopdbg.ops.onnx_topk import smallest
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo, axes_of, same


def reduce_axes(axes, rank: int) -> tuple[int, ...]:
    """The axes input normalised, deduplicated and sorted; rank 0 accepts only nothing or 0/−1."""
    listed = ints(axes)
    if rank == 0:
        if any(a not in (0, -1) for a in listed):
            raise ValueError(f"reduction axes {listed} are out of range for a scalar")
        return ()
    return tuple(sorted({axis_of(a, rank) for a in listed}))


def _mean(x, axis, keepdims):
    if x.dtype.kind == "f" and x.dtype.itemsize >= 4:
        count = math.prod(x.shape[a] for a in axis) if axis else 1
        if count:                            # what np.mean computes, without its wrappers
            return np.add.reduce(x, axis=axis, keepdims=keepdims) / count
    if x.dtype.kind not in "iu":
        return np.mean(x, axis=axis, keepdims=keepdims)
    total = np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    count = math.prod(x.shape[a] for a in axis) if axis else 1
    if count == 0:
        raise ValueError("ReduceMean over an empty dimension")
    quotient = np.abs(total) // count
    return np.where(total < 0, -quotient, quotient).astype(x.dtype)


def _l2(x, axis, keepdims):
    total = np.sum(np.square(x), axis=axis, keepdims=keepdims)
    if x.dtype.kind == "f":
        return np.sqrt(total)
    return np.rint(np.sqrt(total.astype(np.float64))).astype(x.dtype)


def _ufunc_reduce(ufunc: np.ufunc, keep_type: bool = False) -> Callable:
    """``ufunc.reduce`` (cheaper per call than np.sum/np.max), keeping integer element types when
    ``keep_type`` (numpy would widen int32 sums to int64)."""

    def reduce(x, axis, keepdims):
        dtype = x.dtype if keep_type and x.dtype.kind in "iu" else None
        return ufunc.reduce(x, axis=axis, keepdims=keepdims, dtype=dtype)

    return reduce


_sum = _ufunc_reduce(np.add, keep_type=True)

# (type, first opset, reduction of (x, axes, keepdims)).
_REDUCTIONS = [
    ("ReduceSum", 1, _sum),
    ("ReduceProd", 1, _ufunc_reduce(np.multiply, keep_type=True)),
    ("ReduceMean", 1, _mean),
    ("ReduceMax", 1, _ufunc_reduce(np.maximum)),
    ("ReduceMin", 1, _ufunc_reduce(np.minimum)),
    ("ReduceLogicalAnd", 1, _ufunc_reduce(np.logical_and)),
    ("ReduceLogicalOr", 1, _ufunc_reduce(np.logical_or)),
    ("ReduceL1", 4, lambda x, axis, keepdims: _sum(np.abs(x), axis, keepdims)),
    ("ReduceL2", 4, _l2),
]


def _reduction_factory(fn: Callable):
    def factory(layer: Layer, consts=None):
        keep_dims = flag(layer, "keep_dims")

        def reduce(x, axes):
            return np.asarray(fn(x, reduce_axes(axes, x.ndim), keep_dims))

        axes_c = const_input(consts, 1)
        if axes_c is None:
            return reduce
        by_rank: dict = {}                   # constant axes, normalised once per input rank

        def reduce_constant(x, axes):
            try:
                axis = by_rank[x.ndim]
            except (KeyError, AttributeError):
                x = np.asarray(x)
                axis = by_rank[x.ndim] = reduce_axes(axes_c, x.ndim)
            return np.asarray(fn(x, axis, keep_dims))

        return reduce_constant

    return factory


def _reduction_shape(layer: Layer, ins, consts) -> TensorInfo:
    shape = ins[0].shape
    axes = axes_of(consts[1], None if shape is None else len(shape))
    if axes is None:
        return TensorInfo(ins[0].type, None)
    keep = flag(layer, "keep_dims")
    out = [1 if k in axes else d for k, d in enumerate(shape)] if keep else \
        [d for k, d in enumerate(shape) if k not in axes]
    return TensorInfo(ins[0].type, tuple(out))


for _name, _since, _fn in _REDUCTIONS:
    op(_name, versions=(_since,), shape=_reduction_shape, constants=True)(
        _reduction_factory(_fn))


# ---- TopK ------------------------------------------------------------------------------------


def _descending_key(x: np.ndarray) -> np.ndarray:
    """A key whose ascending order is ``x``'s descending order (``~`` cannot overflow integers)."""
    return -x if x.dtype.kind in "fc" else np.invert(x)


def _topk_shape(layer: Layer, ins, consts) -> list[TensorInfo]:
    shape = ins[0].shape
    index_type = elements.canonical(attr(layer, "index_element_type", "i32"))
    if shape is None:
        return [TensorInfo(ins[0].type, None), TensorInfo(index_type, None)]
    out = list(shape)
    ax = axis_of(int_attr(layer, "axis"), len(shape))
    known = consts[1] is not None and out[ax] >= 0
    out[ax] = min(scalar(consts[1]), out[ax]) if known else -1     # k is clamped to the axis
    return [TensorInfo(ins[0].type, tuple(out)), TensorInfo(index_type, tuple(out))]


def _first_best(x: np.ndarray, largest: bool, dtype: np.dtype):
    """TopK with k = 1 along the last axis, as the sort would give it: the first index of the
    row's maximum (minimum), by ``argmax`` (``argmin``), which keeps the first of equal values
    (-0.0 and 0.0 too) as the stable sort does. None when a value found is NaN: ``argmax``
    stops at a NaN, which the sort puts after every number (the general path decides)."""
    n = x.shape[-1]
    flat = x.reshape(-1, n)
    index = flat.argmax(axis=1) if largest else flat.argmin(axis=1)
    values = flat[np.arange(flat.shape[0]), index]
    if values.dtype.kind == "f" and np.isnan(values).any():
        return None
    shape = x.shape[:-1] + (1,)
    return values.reshape(shape), index.astype(dtype).reshape(shape)


@op("TopK", versions=(1, 3, 11), outputs=2, shape=_topk_shape)
def _topk(layer: Layer):
    axis = int_attr(layer, "axis")
    largest = choice(layer, "mode", ("max", "min")) == "max"
    by_index = choice(layer, "sort", ("value", "index", "none"), "none") == "index"
    dtype = index_dtype(layer, "index_element_type", "i32")
    flag(layer, "stable")  # ties always go to the smaller index, so stable changes nothing

    def topk(x, k):
        ax = axis_of(axis, x.ndim)
        count = scalar(k)
        if count < 0:
            raise ValueError(f"TopK k={count} is negative")
        count = min(count, x.shape[ax])
        if count == 1 and ax == x.ndim - 1 and x.dtype.kind in "fiub":
            found = _first_best(x, largest, dtype)     # a generation step's greedy pick
            if found is not None:
                return found
        # the k first of a stable ascending sort of the key (NaN last), found by a partition
        # and a sort of what it leaves (onnx_topk.smallest), not a sort of the whole axis
        key = _descending_key(x) if largest else x
        last = ax == x.ndim - 1                 # the usual case: no axes to move (10 us each)
        rows = key if last else np.moveaxis(key, ax, -1)
        found = smallest(rows.reshape(math.prod(rows.shape[:-1]), rows.shape[-1]), count)
        indices = found.reshape(rows.shape[:-1] + (count,))
        if not last:
            indices = np.moveaxis(indices, -1, ax)
        if by_index:
            indices = np.sort(indices, axis=ax)
        return np.take_along_axis(x, indices, axis=ax), indices.astype(dtype)

    return topk


# ---- NonZero, CumSum -------------------------------------------------------------------------


def _non_zero_shape(layer: Layer, ins, consts) -> TensorInfo:
    rank = None if ins[0].shape is None else max(len(ins[0].shape), 1)
    return TensorInfo(elements.canonical(attr(layer, "output_type", "i64")),
                      (-1 if rank is None else rank, -1))


@op("NonZero", versions=(3,), shape=_non_zero_shape)
def _non_zero(layer: Layer):
    dtype = index_dtype(layer, "output_type", "i64")

    def non_zero(x):
        return np.array(np.nonzero(x.reshape(1) if x.ndim == 0 else x), dtype=dtype)

    return non_zero


@op("CumSum", versions=(3,), shape=same)
def _cum_sum(layer: Layer):
    exclusive, reverse = flag(layer, "exclusive"), flag(layer, "reverse")

    def cum_sum(x, axis=None):
        ax = axis_of(0 if axis is None else scalar(axis), x.ndim)
        y = np.flip(x, ax) if reverse else x
        out = np.cumsum(y, axis=ax, dtype=x.dtype if x.dtype.kind in "iu" else None)
        if exclusive:
            shifted = np.zeros_like(out)
            head = (slice(None),) * ax
            shifted[head + (slice(1, None),)] = out[head + (slice(None, -1),)]
            out = shifted
        return np.flip(out, ax) if reverse else out

    return cum_sum
