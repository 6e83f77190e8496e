"""ONNX LayerNormalization, LRN and LpNormalization, in numpy without onnx.reference.

Decoder models run a LayerNormalization per block per iteration; through onnx.reference each
call cost more than its arithmetic. The arithmetic is the reference's, step for step, so the
values are the same: ``X`` viewed as rows (the axes before ``axis``) by columns (from ``axis``
on); per row the mean, the differences, the variance (the mean of their squares), ``1 /
sqrt(variance + epsilon)``; ``Y = differences * that * Scale (+ B)``. float16 and bfloat16 are
computed in float32 (``stash_type`` 1, the only one ONNX defines) and ``Y`` rounded back; the
optional outputs ``Mean`` and ``InvStdDev`` keep the reduced axes as 1, in the computing type
for float16/bfloat16 (the schema's ``U``) and in X's type otherwise.

onnx.reference departs from the specification in the other two, where onnxruntime follows it:

* LRN: ``Y = X / (bias + alpha / size * square_sum) ^ beta``, the sum of squares over the channels
  ``c - floor((size - 1) / 2)`` to ``c + ceil((size - 1) / 2)`` that exist.
* LpNormalization: ``X`` divided by its ``p``-norm (1 or 2) along ``axis``; a zero norm gives 0.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from loopdbg.ir.model import Layer
from loopdbg.ops.args import SHAPES, a, declared_outputs
from loopdbg.ops.registry import op


@op("onnx.LayerNormalization", versions=(17,), outputs=declared_outputs)
def _layer_normalization(layer: Layer):
    axis = int(a(layer, "axis", -1))
    epsilon = float(a(layer, "epsilon", 1e-5))
    stash = int(a(layer, "stash_type", 1))
    if stash != 1:
        raise ValueError(f"stash_type={stash}: ONNX defines only 1 (float32)")
    count = declared_outputs(layer)
    shapes: dict[tuple, tuple] = {}     # (X's shape, dtype) -> what follows from them
    through, params = SHAPES.through, ("onnx.LayerNormalization", axis, epsilon)

    def layout(key: tuple) -> tuple:
        return _layout(key[0], key[1], axis, epsilon)

    add, subtract, multiply, divide, reduce = np.add, np.subtract, np.multiply, np.divide, \
        np.add.reduce
    scale_kept: list = [None, None]     # a constant Scale and B on rows (``_on_rows``)
    b_kept: list = [None, None]

    def layer_normalization(x, scale, b=None):
        key = (x.shape, x.dtype)
        known = shapes.get(key)
        if known is None:                   # (every block's of a decoder sees the new shapes)
            known = through(shapes, params, key, layout)
        ax, work, rows_cols, n_cols, eps, tail = known
        mat = x.astype(work, copy=False).reshape(rows_cols)
        # np.sum is add.reduce behind Python layers; the rest works in place (``out`` by
        # position), the Python numbers as arrays of the computing type (what numpy converts
        # them to: the same values)
        mean = reduce(mat, 1, None, None, True)
        divide(mean, n_cols, mean)
        diff = subtract(mat, mean)
        square = multiply(diff, diff)
        inv_std = reduce(square, 1, None, None, True)
        divide(inv_std, n_cols, inv_std)
        add(inv_std, eps, inv_std)
        np.sqrt(inv_std, inv_std)
        np.reciprocal(inv_std, inv_std)
        multiply(diff, inv_std, square)
        scale = scale.astype(work, copy=False)
        # Scale and B of the normalized shape (as they nearly always are) go into the rows of
        # y, a temporary; a constant one is repeated on as many rows (``_on_rows``): the same
        # products and sums without numpy's broadcasting (2 us a call, a small row's arithmetic)
        if scale.shape == tail:
            rows = scale_kept[1]
            multiply(square, rows[:rows_cols[0]] if scale_kept[0] is scale and
                     rows.shape[0] >= rows_cols[0] else _on_rows(scale_kept, scale, rows_cols),
                     square)
            y = square.reshape(x.shape)
            if b is not None:
                b = b.astype(work, copy=False)
                if b.shape == tail:
                    rows = b_kept[1]
                    add(square, rows[:rows_cols[0]] if b_kept[0] is b and
                        rows.shape[0] >= rows_cols[0] else _on_rows(b_kept, b, rows_cols), square)
                else:
                    y = _combine(y, b, add)
        else:
            y = _combine(square.reshape(x.shape), scale, multiply)
            if b is not None:
                b = b.astype(work, copy=False)
                y = add(y, b, y) if b.shape == tail else _combine(y, b, add)
        y = y.astype(x.dtype, copy=False)
        if count == 1:
            return y
        reduced = x.shape[:ax] + (1,) * (x.ndim - ax)
        stats_type = x.dtype if work == x.dtype else work
        return (y, mean.reshape(reduced).astype(stats_type, copy=False),
                inv_std.reshape(reduced).astype(stats_type, copy=False))[:count]

    return layer_normalization


def _layout(shape: tuple, dtype: np.dtype, axis: int, epsilon: float) -> tuple:
    """(axis, computing dtype, (rows, columns), columns and epsilon as 0-d arrays, the
    normalized shape) of a LayerNormalization of an ``x`` of ``shape`` and ``dtype``, kept per
    kernel and in ``args.SHAPES`` for every kernel of the same axis and epsilon."""
    ax = axis + len(shape) if axis < 0 else axis
    if not 0 <= ax < len(shape):
        raise ValueError(f"axis={axis} is out of range for X of rank {len(shape)}")
    work = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)
    rows, cols = math.prod(shape[:ax]), math.prod(shape[ax:])
    return (ax, work, (rows, cols)) + _scalars(work, cols, epsilon) + (shape[ax:],)


ROWS_KEPT = 1 << 15     # elements: a parameter is kept on at most this many rows' worth


def _on_rows(kept: list, value: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """``value`` (a LayerNormalization's Scale or B, of ``shape[1]`` elements) on ``shape[0]``
    rows, kept in ``kept`` ([the parameter, its rows]) for the next calls while the parameter
    stays the same object: a read-only array (a constant), which nothing can change under the
    copy. The rows are made twice as many as asked (a decoder's grow by one each iteration), never
    past ``ROWS_KEPT`` elements: there the arithmetic outweighs the call, and ``value`` itself
    is given, as one row (broadcast), as it is when it is writable."""
    n, cols = shape
    rows = kept[1] if kept[0] is value else None
    grown = min(2 * max(n, 0 if rows is None else rows.shape[0]), ROWS_KEPT // max(cols, 1))
    if grown < n or not _read_only(value):
        return value.reshape(cols)
    rows = np.empty((grown, cols), value.dtype)
    rows[...] = value.reshape(cols)
    rows.setflags(write=False)
    kept[:] = value, rows
    return rows[:n]


def _read_only(value) -> bool:
    """Is ``value`` an array that nothing can write to: read-only, and so is every array it
    views (a read-only view of a writable array would change with it)?"""
    if type(value) is not np.ndarray:
        return False
    while isinstance(value, np.ndarray):
        if value.flags.writeable:
            return False
        value = value.base
    return True


_SCALARS: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


def _scalars(work: np.dtype, cols: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """``cols`` and ``epsilon`` as read-only 0-d arrays of ``work`` (kept per key: a Python
    number costs numpy a conversion on every call)."""
    key = (work, cols, epsilon)
    found = _SCALARS.get(key)
    if found is None:
        if len(_SCALARS) >= 1024:
            _SCALARS.clear()
        found = _SCALARS[key] = (np.array(cols, work), np.array(epsilon, work))
        for v in found:
            v.flags.writeable = False
    return found


def _combine(y: np.ndarray, other: np.ndarray, ufunc) -> np.ndarray:
    """``ufunc(y, other)``, into ``y`` (a temporary) when ``other`` is of y's trailing shape."""
    if other.ndim <= y.ndim and other.shape == y.shape[y.ndim - other.ndim:]:
        return ufunc(y, other, out=y)
    return ufunc(y, other)


def _computing(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype == np.float16 else x


@op("onnx.LRN", versions=(1, 13))
def _lrn(layer: Layer):
    size = int(a(layer, "size"))
    alpha, beta = float(a(layer, "alpha", 1e-4)), float(a(layer, "beta", 0.75))
    bias = float(a(layer, "bias", 1.0))
    if size < 1:
        raise ValueError(f"LRN size={size} must be positive")
    before, after = (size - 1) // 2, -(-(size - 1) // 2)

    def lrn(x):
        if x.ndim < 3:
            raise ValueError(f"LRN takes [N, C, ...] data, got rank {x.ndim}")
        w = _computing(x)
        sq = np.pad(w * w, [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2))
        total = sliding_window_view(sq, size, axis=1).sum(axis=-1)
        return (w / (w.dtype.type(bias) + w.dtype.type(alpha / size) * total) ** beta
                ).astype(x.dtype)

    return lrn


@op("onnx.LpNormalization", versions=(1, 22))
def _lp_normalization(layer: Layer):
    axis, p = int(a(layer, "axis", -1)), int(a(layer, "p", 2))
    if p not in (1, 2):
        raise ValueError(f"LpNormalization p={p}: ONNX defines 1 and 2")

    def lp_normalization(x):
        w = _computing(x)
        norm = np.sum(np.abs(w), axis=axis, keepdims=True) if p == 1 else \
            np.sqrt(np.sum(w * w, axis=axis, keepdims=True))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(norm == 0, 0, w / norm).astype(x.dtype)

    return lp_normalization
