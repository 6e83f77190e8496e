"""ONNX TopK, by loopdbg: a partition, then a sort of the k found, not a sort of the whole axis.

Sampling and beam search run a TopK over the vocabulary every iteration of a generation loop;
onnx.reference sorts the whole axis with a lexsort (130 ms for [4, 50257]). Here the k largest
(``largest=1``) or smallest values along ``axis`` come out in order, each with its index (int64);
equal values go lower index first, as the specification says, and NaN counts as the largest value,
as onnx.reference and onnxruntime have it. ``sorted=0`` leaves the order to the runtime: this one
sorts anyway. ``k`` is an input from opset 10 on (one value), an attribute before.
"""

from __future__ import annotations

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a, axis_of, opset
from loopdbg.ops.registry import op


def _key(x: np.ndarray, largest: bool) -> np.ndarray:
    """An array whose ascending order is the wanted order (NaN first when largest)."""
    if x.dtype.kind in "iu":
        return ~x if largest else x
    if not largest:
        return x                                     # NaN sorts last: the largest
    return np.where(np.isnan(x), -np.inf, -x)


def smallest(key: np.ndarray, k: int) -> np.ndarray:
    """The indices of the k smallest of each row of ``key`` [rows, n], in order, ties by index."""
    n = key.shape[1]
    if k == 0:
        return np.zeros((key.shape[0], 0), np.int64)
    if 4 * k >= n or key.shape[0] > 64:
        return np.argsort(key, axis=1, kind="stable")[:, :k]
    kth = np.partition(key, k - 1, axis=1)[:, k - 1]
    out = np.empty((key.shape[0], k), np.int64)
    for r, (row, t) in enumerate(zip(key, kth)):
        cand = np.flatnonzero(row <= t) if t == t else np.arange(n)     # t is NaN: all
        out[r] = cand[np.argsort(row[cand], kind="stable")[:k]]
    return out


def top_k(x: np.ndarray, k, axis: int, largest: bool):
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("TopK takes a tensor of rank 1 or more, not a scalar")
    k = np.asarray(k).reshape(-1)
    if k.size != 1:
        raise ValueError(f"TopK K must hold one value, got {k.size}")
    k = int(k[0])
    ax = axis_of(axis, x.ndim)
    n = x.shape[ax]
    if not 0 <= k <= n:
        raise ValueError(f"TopK K={k} is not between 0 and the axis length {n}")
    rows = np.moveaxis(x, ax, -1)
    flat = rows.reshape(-1, n)
    idx = smallest(_key(flat, largest), k)
    values = np.take_along_axis(flat, idx, axis=1)
    shape = rows.shape[:-1] + (k,)
    return (np.moveaxis(values.reshape(shape), -1, ax),
            np.moveaxis(idx.reshape(shape), -1, ax))


@op("onnx.TopK", versions=(1, 10, 11, 24), outputs=2)
def _top_k(layer: Layer):
    axis = int(a(layer, "axis", -1))
    largest = bool(int(a(layer, "largest", 1)))
    if opset(layer) < 10:
        k = a(layer, "k")
        if k is None:
            raise ValueError("TopK before opset 10 needs the k attribute")
        return lambda x: top_k(x, k, axis, largest)
    return lambda x, k: top_k(x, k, axis, largest)
