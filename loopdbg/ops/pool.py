"""Pooling over the spatial axes of [N, C, *spatial] data: MaxPool-1/8/14, AvgPool-1/14/16,
AdaptiveAvgPool-8 and AdaptiveMaxPool-8.

Windows, padding and ``auto_pad`` are Convolution's (``conv``). Rounding of the output length,
``floor((in + pads - dilated kernel) / stride) + 1``:

* ``floor``, or ``ceil`` (the division rounds up: the last window may overhang the padded input);
* ``ceil_torch`` (version 14 on): as ``ceil``, but a last window that would start past the input's
  end and its begin padding is dropped, as PyTorch does.

MaxPool never picks a padded element (a window of padding only gives the type's lowest value and
index 0), and ties go to the first element in row-major window order. MaxPool-8's second output
holds each maximum's flat index into the input, counted from dimension ``axis`` on (axis 0: the
whole tensor; axis 2: within the channel), in ``index_element_type``.

AvgPool divides by the number of input elements in the window when ``exclude-pad`` is true; when
it is false, by the whole kernel size if any padding is present (so a ceil-rounded window counts
the positions past the padding too), else by the input elements in the window, as OpenVINO does.
Integer data averages in float64 and rounds to nearest, ties to even.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir import elements
from loopdbg.ir.model import Layer
from loopdbg.ops.args import attr, choice, flag, index_dtype, int_attr
from loopdbg.ops.conv import (
    auto_pad_attr,
    out_size,
    pads_attr,
    per_axis,
    positive_list,
    resolve_pads,
    windows,
)
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo

_ROUNDING = {1: ("floor", "ceil"), 14: ("floor", "ceil", "ceil_torch")}


class Pooling:
    """A pooling layer's window attributes, parsed once; ``plan`` lays them on a data shape."""

    def __init__(self, layer: Layer, since: int, dilations: bool):
        self.kernel = positive_list(layer, "kernel")
        self.strides = positive_list(layer, "strides")
        self.dilations = positive_list(layer, "dilations") if dilations else []
        self.pads_begin, self.pads_end = pads_attr(layer, "pads_begin"), pads_attr(layer,
                                                                                   "pads_end")
        self.auto_pad = auto_pad_attr(layer)
        allowed = _ROUNDING[14 if since >= 14 else 1]
        self.rounding = choice(layer, "rounding_type", allowed, "floor")

    def plan(self, sizes):
        """(kernel, strides, dilations, pads_begin, pads_end, outs) for these spatial sizes."""
        n = len(sizes)
        if n < 1 or n > 3:
            raise ValueError(f"pooling takes 3-D, 4-D or 5-D data, not {n + 2}-D")
        k = per_axis(self.kernel, n, "kernel")
        st = per_axis(self.strides, n, "strides")
        di = per_axis(self.dilations, n, "dilations", fill=1)
        pb, pe = resolve_pads(self.auto_pad, sizes, k, st, di, self.pads_begin, self.pads_end)
        ceil = self.rounding != "floor"
        outs = []
        for size, kk, s, r, b, e in zip(sizes, k, st, di, pb, pe):
            o = out_size(size, kk, s, r, b, e, ceil)
            if self.rounding == "ceil_torch" and o > 1 and size >= 0 and (o - 1) * s >= size + b:
                o -= 1
            outs.append(o)
        return k, st, di, pb, pe, outs


def _pool_shape(layer: Layer, ins, consts, since: int, dilations: bool):
    shape = ins[0].shape
    if shape is None:
        return None
    *_, outs = Pooling(layer, since, dilations).plan(shape[2:])
    return TensorInfo(ins[0].type, (*shape[:2], *outs))


def _lowest(dtype: np.dtype):
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


# ---- MaxPool ---------------------------------------------------------------------------------


def _max_pool(pool: Pooling, x: np.ndarray, with_indices: bool, axis: int = 0,
              index_type=np.int64):
    k, st, di, pb, pe, outs = pool.plan(x.shape[2:])
    lowest = _lowest(x.dtype)
    view = windows(x, k, st, di, pb, pe, outs, pad_value=lowest)
    n_sp = len(k)
    win_axes = tuple(range(x.ndim, x.ndim + n_sp))
    if not with_indices:
        return np.max(view, axis=win_axes)
    flat = view.reshape(*view.shape[:x.ndim], -1)          # the window, row-major, copied once
    arg = np.argmax(flat, axis=-1)
    values = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    # the argmax's input coordinates along each spatial axis, then its flat index
    offsets = np.unravel_index(arg, k)
    index = np.zeros(arg.shape, dtype=np.int64)
    for d in range(n_sp):
        start = np.arange(outs[d]) * st[d] - pb[d]
        coord = start.reshape((-1,) + (1,) * (n_sp - 1 - d)) + offsets[d] * di[d]
        index = index * x.shape[2 + d] + coord
    index = np.where(values > lowest, index, 0)           # nothing above lowest: index 0
    plane = math.prod(x.shape[2:])
    base = (np.arange(x.shape[0])[:, None] * x.shape[1] + np.arange(x.shape[1])) * plane
    index = index + base.reshape(base.shape + (1,) * n_sp)
    ax = axis + x.ndim if axis < 0 else axis
    if not 0 <= ax < x.ndim:
        raise ValueError(f"MaxPool axis {axis} is out of range for rank {x.ndim}")
    if ax > 0:
        index %= math.prod(x.shape[ax:])
    return values, index.astype(index_type)


def _max_pool_shape(since: int):
    def rule(layer: Layer, ins, consts):
        out = _pool_shape(layer, ins, consts, since, since >= 8)
        if since == 1:
            return out
        index_type = elements.canonical(attr(layer, "index_element_type", "i64"))
        return [out or TensorInfo(ins[0].type, None),
                TensorInfo(index_type, out.shape if out else None)]

    return rule


@op("MaxPool", versions=(1,), shape=_max_pool_shape(1))
def _max_pool1(layer: Layer):
    pool = Pooling(layer, 1, dilations=False)
    return lambda x: _max_pool(pool, x, with_indices=False)


def _max_pool_indexed(since: int):
    def factory(layer: Layer):
        pool = Pooling(layer, since, dilations=True)
        index_type = index_dtype(layer, "index_element_type", "i64")
        axis = int_attr(layer, "axis", 0)
        return lambda x: _max_pool(pool, x, True, axis, index_type)

    return factory


op("MaxPool", versions=(8,), outputs=2, shape=_max_pool_shape(8))(_max_pool_indexed(8))
op("MaxPool", versions=(14,), outputs=2, shape=_max_pool_shape(14))(_max_pool_indexed(14))


# ---- AvgPool ---------------------------------------------------------------------------------


def _avg_counts(sizes, k, st, di, pb, pe, outs, exclude_pad: bool):
    """The divisor of every output position, [*outs] (separable: a product over the axes)."""
    padded = any(pb) or any(pe)
    if not exclude_pad and padded:
        return np.full(outs, float(math.prod(k)))
    counts = np.ones((), dtype=np.float64)
    for size, kk, s, r, b, o in zip(sizes, k, st, di, pb, outs):
        pos = (np.arange(o) * s - b)[:, None] + np.arange(kk) * r
        inside = ((pos >= 0) & (pos < size)).sum(axis=1)
        counts = counts[..., None] * inside
    return counts


def _avg_pool(pool: Pooling, x: np.ndarray, exclude_pad: bool):
    k, st, di, pb, pe, outs = pool.plan(x.shape[2:])
    work = np.float64 if x.dtype.kind in "iu" else (np.float32 if x.dtype == np.float16
                                                     else x.dtype)
    view = windows(x.astype(work, copy=False), k, st, di, pb, pe, outs)
    total = np.sum(view, axis=tuple(range(x.ndim, x.ndim + len(k))))
    counts = _avg_counts(x.shape[2:], k, st, di, pb, pe, outs, exclude_pad)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(counts > 0, total / np.maximum(counts, 1).astype(work), 0)
    if x.dtype.kind in "iu":
        mean = np.rint(mean)
    return mean.astype(x.dtype)


def _avg_pool_factory(since: int):
    def factory(layer: Layer):
        pool = Pooling(layer, since, dilations=since >= 16)
        attr(layer, "exclude-pad")                      # required: no default
        exclude_pad = flag(layer, "exclude-pad")
        return lambda x: _avg_pool(pool, x, exclude_pad)

    return factory


def _avg_pool_shape(since: int):
    return lambda layer, ins, consts: _pool_shape(layer, ins, consts, since, since >= 16)


_AVG_NOTES = ("A window that holds no input element (ceil rounding can place one wholly in the "
              "padding) averages to 0, as OpenVINO's reference implementation does; the CPU "
              "plugin gives NaN.")

for _since in (1, 14, 16):
    op("AvgPool", versions=(_since,), shape=_avg_pool_shape(_since),
       notes=_AVG_NOTES)(_avg_pool_factory(_since))



# ---- AdaptiveAvgPool, AdaptiveMaxPool --------------------------------------------------------
# Output bin i of an axis of length n pooled to m covers [floor(i*n/m), ceil((i+1)*n/m)). Both
# poolings are separable: one axis at a time (the innermost first, so that a MaxPool tie goes
# to the first element in row-major order), looping over the bins of one axis only.


def _adaptive_sizes(x: np.ndarray, output_shape) -> list[int]:
    outs = [int(v) for v in np.ravel(output_shape)]
    if not 3 <= x.ndim <= 5:
        raise ValueError(f"adaptive pooling takes 3-D, 4-D or 5-D data, not {x.ndim}-D")
    if len(outs) != x.ndim - 2:
        raise ValueError(f"output_shape {outs} does not give one size per spatial axis of data "
                         f"of rank {x.ndim}")
    if any(o <= 0 for o in outs) or any(d == 0 for d in x.shape[2:]):
        raise ValueError(f"cannot pool spatial shape {list(x.shape[2:])} to {outs}")
    return outs


def _bins(n: int, m: int) -> list[tuple[int, int]]:
    return [(i * n // m, -(-(i + 1) * n // m)) for i in range(m)]


def _adaptive_avg(x: np.ndarray, output_shape):
    outs = _adaptive_sizes(x, output_shape)
    work = np.float64 if x.dtype.kind in "iu" else (np.float32 if x.dtype == np.float16
                                                     else x.dtype)
    y = x.astype(work, copy=False)
    counts = np.ones((), dtype=work)
    for d in range(x.ndim - 1, 1, -1):                  # box sums, exact for integers
        n, m = x.shape[d], outs[d - 2]
        ones = np.zeros((m, n), dtype=work)
        for i, (lo, hi) in enumerate(_bins(n, m)):
            ones[i, lo:hi] = 1
        y = np.moveaxis(np.tensordot(y, ones, axes=([d], [1])), -1, d)
        counts = ones.sum(axis=1).reshape((m,) + (1,) * counts.ndim) * counts
    y = y / counts
    if x.dtype.kind in "iu":
        y = np.rint(y)
    return y.astype(x.dtype, copy=False)


def _adaptive_max(x: np.ndarray, output_shape, index_type):
    outs = _adaptive_sizes(x, output_shape)
    y = x
    index = np.zeros(x.shape, dtype=np.int64)        # flat index into the spatial plane
    for d in range(x.ndim - 1, 1, -1):
        n, m = x.shape[d], outs[d - 2]
        stride = math.prod(x.shape[d + 1:])
        values, picks = [], []
        for lo, hi in _bins(n, m):
            part = np.take(y, range(lo, hi), axis=d)
            arg = np.argmax(part, axis=d, keepdims=True)
            values.append(np.take_along_axis(part, arg, axis=d))
            chosen = np.take_along_axis(np.take(index, range(lo, hi), axis=d), arg, axis=d)
            picks.append(chosen + (arg + lo) * stride)
        y, index = np.concatenate(values, axis=d), np.concatenate(picks, axis=d)
    return y, index.astype(index_type)


def _adaptive_shape(max_pool: bool):
    def rule(layer: Layer, ins, consts):
        shape, sizes = ins[0].shape, consts[1]
        if shape is None:
            out = TensorInfo(ins[0].type, None)
        elif sizes is None:
            out = TensorInfo(ins[0].type, (*shape[:2], *(-1,) * (len(shape) - 2)))
        else:
            out = TensorInfo(ins[0].type, (*shape[:2], *(int(v) for v in np.ravel(sizes))))
        if not max_pool:
            return out
        index_type = elements.canonical(attr(layer, "index_element_type", "i64"))
        return [out, TensorInfo(index_type, out.shape)]

    return rule


@op("AdaptiveAvgPool", versions=(8,), shape=_adaptive_shape(False))
def _adaptive_avg_pool(layer: Layer):
    return _adaptive_avg


@op("AdaptiveMaxPool", versions=(8,), outputs=2, shape=_adaptive_shape(True))
def _adaptive_max_pool(layer: Layer):
    index_type = index_dtype(layer, "index_element_type", "i64")
    return lambda x, output_shape: _adaptive_max(x, output_shape, index_type)
