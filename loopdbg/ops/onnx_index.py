"""ONNX OneHot and Unique: tensors made from indices, and the indices of a tensor's values.

onnx.reference departs from the specification in both, where onnxruntime follows it:

* OneHot: ``indices`` and ``depth`` of a non-integer type are cast to int64 first (truncated:
  a depth of 3.7 is 3; onnx.reference refused float indices and rounded the depth up). An index
  in ``[-depth, depth)`` counts from the end when negative; the output has ``values[1]`` there and
  ``values[0]`` elsewhere, its new axis at ``axis`` (-1: last); an index out of range gives a row
  of ``values[0]``.
* Unique: the distinct values (``axis`` absent: of the flattened tensor) or slices along
  ``axis``, sorted ascending (slices lexicographically) or, with ``sorted=0``, in order of first
  occurrence (onnx.reference gave slices along an axis other than 0 the wrong shape then); with
  each one's first index, each element's (or slice's) index into them, and each one's count.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a, axis_of, declared_outputs
from loopdbg.ops.registry import op


def one_hot(indices, depth, values, axis: int) -> np.ndarray:
    depth = np.asarray(depth)
    if depth.size != 1:
        raise ValueError(f"OneHot depth must hold one value, got shape {list(depth.shape)}")
    d = int(depth.reshape(-1)[0])
    if d < 1:
        raise ValueError(f"OneHot depth {d} must be positive")
    values = np.asarray(values)
    if values.size != 2:
        raise ValueError(f"OneHot values must hold [off, on], got {values.size} values")
    values = values.reshape(-1)
    idx = np.asarray(indices).astype(np.int64)          # a float index truncated
    idx = np.where(idx < 0, idx + d, idx)
    ax = axis_of(axis, idx.ndim + 1)
    classes = np.arange(d).reshape((d,) + (1,) * (idx.ndim - ax))
    hot = np.expand_dims(idx, ax) == classes
    return np.where(hot, values[1], values[0])


@op("onnx.OneHot", versions=(9, 11, 28))
def _one_hot(layer: Layer):
    axis = int(a(layer, "axis", -1))
    return lambda indices, depth, values: one_hot(indices, depth, values, axis)


def unique(x: np.ndarray, axis: int | None, ordered: bool):
    """(values, first indices, inverse indices, counts) as ONNX Unique defines them."""
    if axis is None:
        rows = x.reshape(-1)
    else:
        axis = axis_of(axis, x.ndim)
        rows = np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
    found, first, inverse, counts = np.unique(rows, return_index=True, return_inverse=True,
                                              return_counts=True,
                                              axis=None if axis is None else 0)
    inverse = inverse.reshape(-1)
    if not ordered:
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        found, first, counts, inverse = found[order], first[order], counts[order], rank[inverse]
    if axis is not None:
        shape = (found.shape[0],) + tuple(np.delete(x.shape, axis))
        found = np.moveaxis(found.reshape(shape), 0, axis)
    return found, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)


@op("onnx.Unique", versions=(11, 28), outputs=declared_outputs)
def _unique(layer: Layer):
    axis = a(layer, "axis")
    axis = None if axis is None else int(axis)
    ordered = bool(int(a(layer, "sorted", 1)))
    count = declared_outputs(layer)

    def unique_(x):
        out = unique(np.asarray(x), axis, ordered)[:count]
        return out[0] if count == 1 else out

    return unique_
