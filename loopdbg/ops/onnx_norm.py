"""ONNX LayerNormalization, in numpy without onnx.reference's per-call machinery.

Decoder models run a LayerNormalization per block per iteration; through onnx.reference each
call cost more than its arithmetic. The arithmetic is the reference's, step for step, so the
values are the same: ``X`` viewed as rows (the axes before ``axis``) by columns (from ``axis``
on); per row the mean, the differences, the variance (the mean of their squares), ``1 /
sqrt(variance + epsilon)``; ``Y = differences * that * Scale (+ B)``. float16 and bfloat16 are
computed in float32 (``stash_type`` 1, the only one ONNX defines) and ``Y`` rounded back; the
optional outputs ``Mean`` and ``InvStdDev`` keep the reduced axes as 1, in the computing type
for float16/bfloat16 (the schema's ``U``) and in X's type otherwise.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a, declared_outputs
from loopdbg.ops.registry import op


@op("onnx.LayerNormalization", versions=(17,), outputs=declared_outputs)
def _layer_normalization(layer: Layer):
    axis = int(a(layer, "axis", -1))
    epsilon = float(a(layer, "epsilon", 1e-5))
    stash = int(a(layer, "stash_type", 1))
    if stash != 1:
        raise ValueError(f"stash_type={stash}: ONNX defines only 1 (float32)")
    count = declared_outputs(layer)

    def layer_normalization(x, scale, b=None):
        ax = axis + x.ndim if axis < 0 else axis
        if not 0 <= ax < x.ndim:
            raise ValueError(f"axis={axis} is out of range for X of rank {x.ndim}")
        work = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float32)
        rows, cols = math.prod(x.shape[:ax]), math.prod(x.shape[ax:])
        mat = x.astype(work, copy=False).reshape(rows, cols)
        # np.sum is add.reduce behind Python layers; the rest works in place (the same values)
        mean = np.add.reduce(mat, axis=1, keepdims=True) / cols
        diff = mat - mean
        square = diff * diff
        variance = np.add.reduce(square, axis=1, keepdims=True) / cols
        inv_std = variance + epsilon
        np.sqrt(inv_std, out=inv_std)
        np.reciprocal(inv_std, out=inv_std)
        np.multiply(diff, inv_std, out=square)
        y = _combine(square.reshape(x.shape), scale.astype(work, copy=False), np.multiply)
        if b is not None:
            y = _combine(y, b.astype(work, copy=False), np.add)
        y = y.astype(x.dtype, copy=False)
        if count == 1:
            return y
        reduced = x.shape[:ax] + (1,) * (x.ndim - ax)
        stats_type = x.dtype if work == x.dtype else work
        return (y, mean.reshape(reduced).astype(stats_type, copy=False),
                inv_std.reshape(reduced).astype(stats_type, copy=False))[:count]

    return layer_normalization


def _combine(y: np.ndarray, other: np.ndarray, ufunc) -> np.ndarray:
    """``ufunc(y, other)``, into ``y`` (a temporary) when ``other`` is of y's trailing shape."""
    if other.ndim <= y.ndim and other.shape == y.shape[y.ndim - other.ndim:]:
        return ufunc(y, other, out=y)
    return ufunc(y, other)
