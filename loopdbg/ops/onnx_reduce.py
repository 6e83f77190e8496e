"""ONNX reductions (ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1/L2,
ReduceLogSum(Exp), ReduceSumSquare), Softmax, LogSoftmax, Hardmax, and GlobalLpPool (which
onnx.reference does not implement).

Reductions took ``axes`` as an attribute until ReduceSum-13 and the others' opset 18, then as an
optional input with ``noop_with_empty_axes``: no axes means every axis, unless that flag says to
return the input. Softmax before opset 13 flattens the input to 2-D at ``axis`` (default 1);
from 13 it works along one axis (default -1).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import a, ints_of, opset
from loopdbg.ops.registry import op


def _norm_axes(axes, rank: int) -> tuple[int, ...]:
    out = []
    for k in axes:
        if not -rank <= k < rank:
            raise ValueError(f"axis {k} is out of range for rank {rank}")
        out.append(k + rank if k < 0 else k)
    return tuple(sorted(set(out)))


def _reduction(fn: Callable, keep_type: bool = True) -> Callable:
    def factory(layer: Layer):
        keepdims = bool(a(layer, "keepdims", 1))
        noop = bool(a(layer, "noop_with_empty_axes", 0))
        attr_axes = a(layer, "axes")

        def run(x, axes):
            if axes is None or len(axes) == 0:
                if noop:
                    return x
                ax = tuple(range(x.ndim))
            else:
                ax = _norm_axes(axes, x.ndim)
            with np.errstate(all="ignore"):
                out = np.asarray(fn(x, ax, keepdims))
            return out.astype(x.dtype) if keep_type and out.dtype != x.dtype else out

        def by_attr(x):
            return run(x, attr_axes)

        def by_input(x, axes=None):
            return run(x, None if axes is None else ints_of(axes))

        return by_input, by_attr

    return factory


def _reduction_factory(fn: Callable, input_since: int):
    """The kernel takes ``axes`` as an input from opset ``input_since``, before as an attribute."""
    make = _reduction(fn)

    def factory(layer: Layer):
        by_input, by_attr = make(layer)
        return by_input if opset(layer) >= input_since else by_attr

    return factory


def _mean(x, ax, keep):
    if x.dtype.kind in "iu":            # onnxruntime: the integer sum divided, truncated
        n = int(np.prod([x.shape[k] for k in ax])) if ax else 1
        s = np.sum(x, axis=ax, keepdims=keep, dtype=np.int64)
        return (s / max(n, 1)).astype(np.int64)
    return np.mean(x, axis=ax, keepdims=keep)


def _extreme(fn, empty):
    def reduce(x, ax, keep):
        if x.size == 0:
            shape = tuple(1 if k in ax else d for k, d in enumerate(x.shape)) if keep else \
                tuple(d for k, d in enumerate(x.shape) if k not in ax)
            fill = empty(x.dtype)
            return np.full(shape, fill, dtype=x.dtype)
        return fn(x, axis=ax, keepdims=keep)

    return reduce


def _lowest(dt):
    return -np.inf if dt.kind == "f" else (np.iinfo(dt).min if dt.kind in "iu" else False)


def _highest(dt):
    return np.inf if dt.kind == "f" else (np.iinfo(dt).max if dt.kind in "iu" else True)


def _log_sum_exp(x, ax, keep):
    m = np.max(x, axis=ax, keepdims=True) if x.size else np.zeros((1,) * x.ndim, x.dtype)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
    return out if keep else np.squeeze(out, axis=ax)


# (op, reduction of (x, axes, keepdims), first opset that takes axes as an input).
_REDUCTIONS = [
    ("ReduceSum", lambda x, ax, k: np.sum(x, axis=ax, keepdims=k), 13),
    ("ReduceMean", _mean, 18),
    ("ReduceMax", _extreme(np.max, _lowest), 18),
    ("ReduceMin", _extreme(np.min, _highest), 18),
    ("ReduceProd", lambda x, ax, k: np.prod(x, axis=ax, keepdims=k), 18),
    ("ReduceL1", lambda x, ax, k: np.sum(np.abs(x), axis=ax, keepdims=k), 18),
    ("ReduceL2", lambda x, ax, k: np.sqrt(np.sum(np.square(x), axis=ax, keepdims=k)), 18),
    ("ReduceSumSquare", lambda x, ax, k: np.sum(np.square(x), axis=ax, keepdims=k), 18),
    ("ReduceLogSum", lambda x, ax, k: np.log(np.sum(x, axis=ax, keepdims=k)), 18),
    ("ReduceLogSumExp", _log_sum_exp, 18),
]
for _name, _fn, _since in _REDUCTIONS:
    op(f"onnx.{_name}", versions=(1, _since))(_reduction_factory(_fn, _since))


# ---- Softmax, LogSoftmax, Hardmax -------------------------------------------------------------


def _softmax(x, axis):
    if x.dtype.kind != "f":
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)
    # np.max and np.sum are these reductions behind Python layers; one temporary, in place
    e = x - np.maximum.reduce(x, axis=axis, keepdims=True)
    np.exp(e, out=e)
    return np.divide(e, np.add.reduce(e, axis=axis, keepdims=True), out=e)


def _log_softmax(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _hardmax(x, axis):
    idx = np.expand_dims(np.argmax(x, axis=axis), axis)
    out = np.zeros_like(x)
    np.put_along_axis(out, idx, 1, axis=axis)
    return out


def _along_axis(fn: Callable) -> Callable:
    def factory(layer: Layer):
        old = opset(layer) < 13
        axis = int(a(layer, "axis", 1 if old else -1))

        def kernel(x):
            if x.ndim == 0:
                return fn(x.reshape(1), 0).reshape(())
            ax = axis + x.ndim if axis < 0 else axis
            if not 0 <= ax < x.ndim:
                raise ValueError(f"axis {axis} is out of range for rank {x.ndim}")
            with np.errstate(all="ignore"):
                if old:                      # coerced to 2-D: [prod(dims[:axis]), prod(dims[axis:])]
                    flat = x.reshape(int(np.prod(x.shape[:ax])), -1) if x.size else x
                    return fn(flat, 1).reshape(x.shape) if x.size else x
                return fn(x, ax)

        return kernel

    return factory


for _name, _fn in {"LogSoftmax": _log_softmax, "Hardmax": _hardmax}.items():
    op(f"onnx.{_name}", versions=(1, 13))(_along_axis(_fn))


@op("onnx.Softmax", versions=(1, 13))
def _softmax_op(layer: Layer):
    """``_along_axis(_softmax)``; a float array whose rows' maxima are all finite (no row masked
    whole, no inf or NaN: their sum is finite) is computed outside ``errstate`` (2-3 µs a call,
    as much as the arithmetic of an attention's small softmax), by the same operations: each
    row's sum is then at least 1 (its maximum's exp) and nothing can warn."""
    general = _along_axis(_softmax)(layer)
    if opset(layer) < 13:
        return general
    axis = int(a(layer, "axis", -1))
    ndarray, maximum, add = np.ndarray, np.maximum.reduce, np.add.reduce

    def softmax(x):
        if type(x) is ndarray and x.ndim and x.dtype.kind == "f" and -x.ndim <= axis < x.ndim:
            top = maximum(x, axis=axis, keepdims=True)
            if math.isfinite(add(top, axis=None)):
                e = np.subtract(x, top)
                np.exp(e, out=e)
                return np.divide(e, add(e, axis=axis, keepdims=True), out=e)
        return general(x)

    return softmax


@op("onnx.GlobalLpPool", versions=(1, 2, 22))
def _global_lp_pool(layer: Layer):
    """The p-norm over every spatial axis (all but N and C), kept as 1s."""
    p = float(a(layer, "p", 2))
    if p <= 0:
        raise ValueError(f"p={p} is not positive")

    def pool(x):
        if x.ndim < 3:
            raise ValueError(f"input of shape {x.shape} has no spatial axis (N, C, D1, ...)")
        axes = tuple(range(2, x.ndim))
        with np.errstate(all="ignore"):
            out = np.power(np.sum(np.power(np.abs(x), p), axis=axes, keepdims=True), 1 / p)
        return out.astype(x.dtype, copy=False)

    return pool
