"""Indexing kernels: Gather, GatherND, GatherElements, StridedSlice, Slice, the Scatter family,
Pad and OneHot.

OpenVINO behaviour that numpy does not give for free (checked against the 2026.4 wheel):

* Gather-8 counts negative indices from the end; Gather-1 and Gather-7 treat them as out of range.
  Out-of-range indices produce zeros, as in OpenVINO, instead of an IndexError.
* StridedSlice masks say which begin/end values to *ignore* (bit 1 = ignore); with them the op is
  numpy basic slicing, so ``::-1`` with end_mask includes index 0 and begin == end is empty.
* Slice-8 clamps start/stop like Python slices and accepts INT64_MAX/INT64_MIN as "to the end".
* GatherND-5 folds the batch dimensions into one; GatherND-8 keeps them.
* Pad-12 accepts negative pads, which crop.
* OneHot gives all ``off_value`` for an index outside [0, depth), negative ones included.

Scatter kernels copy ``data`` first: inputs may be constants shared by every iteration.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.convert import choice, flag, int_attr, int_list
from loopdbg.ops.registry import register
from loopdbg.ops.shape import axis_of, ints, scalar


def _wrap_negative(indices: np.ndarray, dims) -> np.ndarray:
    """``indices`` with negative entries counted from the end of ``dims`` (one per last axis)."""
    if indices.size and indices.min() < 0:
        return np.where(indices < 0, indices + np.asarray(dims, dtype=indices.dtype), indices)
    return indices


# ---- Gather ----------------------------------------------------------------------------------


def gather(x: np.ndarray, indices, axis, batch_dims: int, negative: bool) -> np.ndarray:
    idx = np.asarray(indices)
    ax = axis_of(scalar(axis), x.ndim)
    bd = batch_dims + idx.ndim if batch_dims < 0 else batch_dims
    if not 0 <= bd <= min(ax, idx.ndim):
        raise ValueError(f"batch_dims={batch_dims} must be within [0, min(axis={ax}, "
                         f"indices rank {idx.ndim})]")
    if x.shape[:bd] != idx.shape[:bd]:
        raise ValueError(f"the first {bd} dimensions of data {x.shape} and indices {idx.shape} "
                         f"differ")
    n = x.shape[ax]
    bad = None
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        if negative:
            idx = np.where(idx < 0, idx + n, idx)
        bad = (idx < 0) | (idx >= n)
        if bad.any():
            idx = np.where(bad, 0, idx)
            if n == 0:
                x = np.zeros(x.shape[:ax] + (1,) + x.shape[ax + 1:], x.dtype)
        else:
            bad = None
    if bd == 0:
        out = np.take(x, idx, axis=ax)
    else:
        b = math.prod(x.shape[:bd])
        p = math.prod(x.shape[bd:ax])
        q = math.prod(x.shape[ax + 1:])
        flat = x.reshape(b, p, x.shape[ax], q)
        flat_idx = idx.reshape(b, math.prod(idx.shape[bd:]))
        out = flat[np.arange(b)[:, None, None], np.arange(p)[None, :, None], flat_idx[:, None, :]]
        out = out.reshape(x.shape[:ax] + idx.shape[bd:] + x.shape[ax + 1:])
    if bad is not None:
        out = np.asarray(out)
        mask = bad.reshape(idx.shape[:bd] + (1,) * (ax - bd) + idx.shape[bd:]
                           + (1,) * (x.ndim - ax - 1))
        out[np.broadcast_to(mask, out.shape)] = 0
    return out


def _gather_factory(has_batch_dims: bool, negative: bool):
    def factory(layer: Layer):
        bd = int_attr(layer, "batch_dims", 0) if has_batch_dims else 0
        return lambda x, indices, axis: gather(x, indices, axis, bd, negative)

    return factory


register("Gather", "opset1")(_gather_factory(False, False))
register("Gather", "opset7")(_gather_factory(True, False))
register("Gather", "opset8")(_gather_factory(True, True))


# ---- GatherND, GatherElements ----------------------------------------------------------------


def gather_nd(x: np.ndarray, indices, batch_dims: int, fold_batch: bool) -> np.ndarray:
    idx = np.asarray(indices)
    bd = batch_dims
    if idx.ndim < 1 or not 0 <= bd < min(x.ndim, idx.ndim):
        raise ValueError(f"batch_dims={bd} does not fit data rank {x.ndim} and indices rank "
                         f"{idx.ndim}")
    if x.shape[:bd] != idx.shape[:bd]:
        raise ValueError(f"the first {bd} dimensions of data {x.shape} and indices {idx.shape} "
                         f"differ")
    k = idx.shape[-1]
    if bd + k > x.ndim:
        raise ValueError(f"indices of depth {k} exceed data rank {x.ndim} after {bd} batch dims")
    b = math.prod(x.shape[:bd])
    flat = x.reshape((b,) + x.shape[bd:])
    flat_idx = _wrap_negative(idx.reshape(b, math.prod(idx.shape[bd:-1]), k), x.shape[bd:bd + k])
    out = flat[(np.arange(b)[:, None],) + tuple(flat_idx[..., j] for j in range(k))]
    batch = ((b,) if bd else ()) if fold_batch else x.shape[:bd]
    return out.reshape(batch + idx.shape[bd:-1] + x.shape[bd + k:])


@register("GatherND", "opset5")
def _gather_nd5(layer: Layer):
    bd = int_attr(layer, "batch_dims", 0)
    return lambda x, indices: gather_nd(x, indices, bd, fold_batch=True)


@register("GatherND", "opset8")
def _gather_nd8(layer: Layer):
    bd = int_attr(layer, "batch_dims", 0)
    return lambda x, indices: gather_nd(x, indices, bd, fold_batch=False)


@register("GatherElements", "opset6")
def _gather_elements(layer: Layer):
    axis = int_attr(layer, "axis")

    def gather_elements(x, indices):
        ax = axis_of(axis, x.ndim)
        return np.take_along_axis(x, _wrap_negative(np.asarray(indices), x.shape[ax]), axis=ax)

    return gather_elements


# ---- StridedSlice, Slice ---------------------------------------------------------------------


@register("StridedSlice", "opset1")
def _strided_slice(layer: Layer):
    masks = {name: int_list(layer, name) for name in
             ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")}
    if sum(masks["ellipsis_mask"]) > 1:
        raise ValueError(f"ellipsis_mask {masks['ellipsis_mask']} sets more than one bit")

    def bit(name: str, i: int) -> bool:
        m = masks[name]
        return i < len(m) and m[i] != 0

    def strided_slice(x, begin, end, strides=None):
        b, e = ints(begin), ints(end)
        s = ints(strides) if strides is not None else [1] * len(b)
        if not len(b) == len(e) == len(s):
            raise ValueError(f"begin {b}, end {e} and strides {s} differ in length")
        index = []
        for i in range(len(b)):
            if bit("ellipsis_mask", i):
                index.append(Ellipsis)
            elif bit("new_axis_mask", i):
                index.append(None)
            elif bit("shrink_axis_mask", i):
                index.append(0 if bit("begin_mask", i) else b[i])
            else:
                if s[i] == 0:
                    raise ValueError(f"stride {i} is zero")
                index.append(slice(None if bit("begin_mask", i) else b[i],
                                   None if bit("end_mask", i) else e[i], s[i]))
        return x[tuple(index)]

    return strided_slice


@register("Slice", "opset8")
def _slice(layer: Layer):
    def slice_(x, start, stop, step, axes=None):
        starts, stops, steps = ints(start), ints(stop), ints(step)
        which = ints(axes) if axes is not None else list(range(len(starts)))
        if not len(starts) == len(stops) == len(steps) == len(which):
            raise ValueError(f"start {starts}, stop {stops}, step {steps} and axes {which} differ "
                             f"in length")
        index = [slice(None)] * x.ndim
        seen = set()
        for a, lo, hi, st in zip(which, starts, stops, steps):
            a = axis_of(a, x.ndim)
            if a in seen:
                raise ValueError(f"axis {a} appears twice in axes {which}")
            if st == 0:
                raise ValueError("Slice step is zero")
            seen.add(a)
            index[a] = slice(lo, hi, st)
        return x[tuple(index)]

    return slice_


# ---- Scatter family --------------------------------------------------------------------------


@register("ScatterUpdate", "opset3")
def _scatter_update(layer: Layer):
    def scatter_update(data, indices, updates, axis):
        ax = axis_of(scalar(axis), data.ndim)
        out = data.copy()
        idx = _wrap_negative(np.asarray(indices), data.shape[ax])
        out[(slice(None),) * ax + (idx,)] = updates
        return out

    return scatter_update


_ND_REDUCTIONS = {"sum": np.add, "sub": np.subtract, "prod": np.multiply,
                  "min": np.minimum, "max": np.maximum}


def _scatter_nd_factory(reduction: str):
    ufunc = _ND_REDUCTIONS.get(reduction)

    def scatter_nd_update(data, indices, updates):
        idx = np.asarray(indices)
        k = idx.shape[-1]
        idx = _wrap_negative(idx, data.shape[:k])
        where = tuple(idx[..., j] for j in range(k))
        out = data.copy()
        if ufunc is None:
            out[where] = updates
        else:
            ufunc.at(out, where, updates)
        return out

    return scatter_nd_update


register("ScatterNDUpdate", "opset3")(lambda layer: _scatter_nd_factory("none"))


@register("ScatterNDUpdate", "opset15")
def _scatter_nd_update15(layer: Layer):
    return _scatter_nd_factory(choice(layer, "reduction", ("none", *_ND_REDUCTIONS), "none"))


def _along_axis(indices: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """Full coordinates for every element of ``indices``, with ``indices`` on ``axis``."""
    grids = list(np.indices(indices.shape, sparse=True))
    grids[axis] = indices
    return tuple(grids)


def _scatter_elements_factory(reduction: str, use_init_val: bool):
    def scatter_elements_update(data, indices, updates, axis):
        ax = axis_of(scalar(axis), data.ndim)
        idx = _wrap_negative(np.asarray(indices), data.shape[ax])
        updates = np.broadcast_to(updates, idx.shape)
        out = data.copy()
        where = _along_axis(idx, ax)
        if reduction == "none":
            out[where] = updates
            return out
        if reduction == "mean":
            total = out.astype(np.float64) if use_init_val else np.zeros(out.shape)
            count = np.ones(out.shape) if use_init_val else np.zeros(out.shape)
            np.add.at(total, where, updates)
            np.add.at(count, where, 1)
            hit = np.zeros(out.shape, bool)
            hit[where] = True
            mean = total / np.maximum(count, 1)
            if out.dtype.kind in "iu":
                mean = np.trunc(mean)
            out[hit] = mean[hit].astype(out.dtype)
            return out
        ufunc = _ND_REDUCTIONS[reduction]
        if not use_init_val:
            out[where] = _identity(ufunc, out.dtype)
        ufunc.at(out, where, updates)
        return out

    return scatter_elements_update


def _identity(ufunc, dtype: np.dtype):
    """The value a reduction starts from when the data's own value is not used."""
    if ufunc is np.add:
        return 0
    if ufunc is np.multiply:
        return 1
    if dtype.kind == "f":
        return np.inf if ufunc is np.minimum else -np.inf
    if dtype.kind == "b":
        return ufunc is np.minimum
    info = np.iinfo(dtype)
    return info.max if ufunc is np.minimum else info.min


register("ScatterElementsUpdate", "opset3")(lambda layer: _scatter_elements_factory("none", True))


@register("ScatterElementsUpdate", "opset12")
def _scatter_elements_update12(layer: Layer):
    reduction = choice(layer, "reduction", ("none", "sum", "prod", "min", "max", "mean"), "none")
    return _scatter_elements_factory(reduction, flag(layer, "use_init_val", True))


# ---- Pad, OneHot -----------------------------------------------------------------------------

_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect",
              "symmetric": "symmetric"}


def _pad_factory(allow_negative: bool):
    def factory(layer: Layer):
        mode = _PAD_MODES[choice(layer, "pad_mode", tuple(_PAD_MODES), "constant")]

        def pad(x, pads_begin, pads_end, pad_value=None):
            begin, end = ints(pads_begin), ints(pads_end)
            if len(begin) != x.ndim or len(end) != x.ndim:
                raise ValueError(f"pads_begin {begin} and pads_end {end} need {x.ndim} entries")
            if min(begin + end, default=0) < 0:
                if not allow_negative:
                    raise ValueError(f"Pad-1 does not accept negative pads ({begin}, {end})")
                x = x[tuple(slice(-min(b, 0), d + min(e, 0))
                            for b, e, d in zip(begin, end, x.shape))]
            widths = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)]
            if mode == "constant":
                value = 0 if pad_value is None else np.asarray(pad_value).reshape(()).item()
                return np.pad(x, widths, mode="constant", constant_values=value)
            return np.pad(x, widths, mode=mode)

        return pad

    return factory


register("Pad", "opset1")(_pad_factory(allow_negative=False))
register("Pad", "opset12")(_pad_factory(allow_negative=True))


@register("OneHot", "opset1")
def _one_hot(layer: Layer):
    axis = int_attr(layer, "axis")

    def one_hot(indices, depth, on_value, off_value):
        idx = np.asarray(indices)
        d = scalar(depth)
        ax = axis_of(axis, idx.ndim + 1)
        positions = np.arange(d).reshape((d,) + (1,) * (idx.ndim - ax))
        hot = np.expand_dims(idx, ax) == positions
        on, off = np.asarray(on_value).reshape(()), np.asarray(off_value).reshape(())
        return np.where(hot, on, off).astype(on.dtype, copy=False)

    return one_hot
