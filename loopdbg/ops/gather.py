"""Reading by index: Gather, GatherND, GatherElements and OneHot.

OpenVINO behaviour that numpy does not give for free (checked against the 2026.4 wheel):

* Gather-8 counts negative indices from the end; Gather-1 and Gather-7 treat them as out of range.
  Out-of-range indices produce zeros, as in OpenVINO, instead of an IndexError.
* GatherND-5 folds the batch dimensions into one; GatherND-8 keeps them.
* OneHot gives all ``off_value`` for an index outside [0, depth), negative ones included; OneHot-16
  with ``negative_indices_mode="normalize"`` first counts indices in [-depth, -1] from the end.
"""

from __future__ import annotations

import math

import numpy as np

from loopdbg.ir.model import Layer
from loopdbg.ops.args import axis_of, choice, int_attr, scalar, wrap_negative
from loopdbg.ops.registry import op
from loopdbg.ops.shape_rules import TensorInfo


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


def _gather_shape(has_batch_dims: bool):
    def rule(layer: Layer, ins, consts) -> TensorInfo:
        data, idx = ins[0].shape, ins[1].shape
        if data is None or idx is None or consts[2] is None:
            return TensorInfo(ins[0].type, None)
        ax = axis_of(scalar(consts[2]), len(data))
        bd = int_attr(layer, "batch_dims", 0) if has_batch_dims else 0
        bd = bd + len(idx) if bd < 0 else bd
        return TensorInfo(ins[0].type, tuple(data[:ax]) + tuple(idx[bd:]) + tuple(data[ax + 1:]))

    return rule


@op("Gather", shape=_gather_shape(has_batch_dims=False), constants=True)
def _gather1(layer: Layer, consts=None):
    return _gather_kernel(0, False, consts)


@op("Gather", versions=(7,), shape=_gather_shape(has_batch_dims=True), constants=True)
def _gather7(layer: Layer, consts=None):
    return _gather_kernel(int_attr(layer, "batch_dims", 0), False, consts)


@op("Gather", versions=(8,), shape=_gather_shape(has_batch_dims=True), constants=True)
def _gather8(layer: Layer, consts=None):
    return _gather_kernel(int_attr(layer, "batch_dims", 0), True, consts)


_INT_SCALARS = frozenset(np.dtype(c).type for c in "bBhHiIlLqQ")


def _gather_kernel(bd: int, negative: bool, consts):
    """Gather; with a constant non-negative axis and no batch dims, numpy indexing ``x[key]``
    (a view for a scalar index) whenever the indices are integers inside the axis (negative ones
    too for Gather-8, which counts them from the end as numpy does); anything else, and every
    error, goes through ``gather``."""

    def general(x, indices, axis):
        return gather(x, indices, axis, bd, negative)

    axis_c = consts[2] if consts is not None and len(consts) > 2 else None
    if axis_c is None or bd != 0 or axis_c.size != 1 or axis_c.dtype.kind not in "iu":
        return general
    ax = int(axis_c.reshape(-1)[0])
    if ax < 0:
        return general
    lead = (slice(None),) * ax
    idx_c = consts[1]
    if idx_c is not None:
        if idx_c.dtype.kind not in "iu" or not idx_c.size:
            return general
        key = lead + ((int(idx_c),) if idx_c.ndim == 0 else (idx_c,)) + (Ellipsis,)
        lo, hi = int(idx_c.min()), int(idx_c.max())
        if lo < 0 and not negative:
            return general

        def gather_constant(x, indices, axis):
            try:
                n = x.shape[ax]
            except (AttributeError, IndexError):
                return general(x, indices, axis)
            if hi < n and -n <= lo:
                return x[key]
            return general(x, indices, axis)

        return gather_constant

    scalars, ndarray = _INT_SCALARS, np.ndarray

    def gather_any(x, indices, axis):
        t = type(indices)
        if t in scalars:
            if negative or indices >= 0:
                try:
                    return x[lead + (indices, Ellipsis)]
                except IndexError:
                    pass
        elif t is ndarray and indices.dtype.kind in "iu" and indices.size and \
                (negative or indices.min() >= 0):
            try:
                return x[lead + (indices, Ellipsis)]
            except IndexError:
                pass
        return general(x, indices, axis)

    if ax:
        return gather_any

    def gather_first(x, indices, axis):        # axis 0: no key to build
        if type(indices) in scalars:
            if negative or indices >= 0:
                try:
                    return x[indices, ...]
                except IndexError:
                    pass
            return general(x, indices, axis)
        return gather_any(x, indices, axis)

    return gather_first


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
    flat_idx = wrap_negative(idx.reshape(b, math.prod(idx.shape[bd:-1]), k), x.shape[bd:bd + k])
    out = flat[(np.arange(b)[:, None],) + tuple(flat_idx[..., j] for j in range(k))]
    batch = ((b,) if bd else ()) if fold_batch else x.shape[:bd]
    return out.reshape(batch + idx.shape[bd:-1] + x.shape[bd + k:])


def _gather_nd_shape(fold_batch: bool):
    def rule(layer: Layer, ins, consts) -> TensorInfo:
        data, idx = ins[0].shape, ins[1].shape
        if data is None or idx is None or not idx or idx[-1] < 0:
            return TensorInfo(ins[0].type, None)
        bd, k = int_attr(layer, "batch_dims", 0), idx[-1]
        batch = tuple(data[:bd])
        if fold_batch and bd:
            batch = (-1,) if -1 in batch else (math.prod(batch),)
        return TensorInfo(ins[0].type, batch + tuple(idx[bd:-1]) + tuple(data[bd + k:]))

    return rule


@op("GatherND", versions=(5,), shape=_gather_nd_shape(fold_batch=True))
def _gather_nd5(layer: Layer):
    bd = int_attr(layer, "batch_dims", 0)
    return lambda x, indices: gather_nd(x, indices, bd, fold_batch=True)


@op("GatherND", versions=(8,), shape=_gather_nd_shape(fold_batch=False))
def _gather_nd8(layer: Layer):
    bd = int_attr(layer, "batch_dims", 0)
    return lambda x, indices: gather_nd(x, indices, bd, fold_batch=False)


def _gather_elements_shape(layer: Layer, ins, consts) -> TensorInfo:
    return TensorInfo(ins[0].type, ins[1].shape)


@op("GatherElements", versions=(6,), shape=_gather_elements_shape)
def _gather_elements(layer: Layer):
    axis = int_attr(layer, "axis")

    def gather_elements(x, indices):
        ax = axis_of(axis, x.ndim)
        return np.take_along_axis(x, wrap_negative(np.asarray(indices), x.shape[ax]), axis=ax)

    return gather_elements


# ---- OneHot ----------------------------------------------------------------------------------


def _one_hot_shape(layer: Layer, ins, consts) -> TensorInfo:
    shape = ins[0].shape
    if shape is None:
        return TensorInfo(ins[2].type, None)
    ax = axis_of(int_attr(layer, "axis"), len(shape) + 1)
    depth = scalar(consts[1]) if consts[1] is not None else -1
    return TensorInfo(ins[2].type, tuple(shape[:ax]) + (depth,) + tuple(shape[ax:]))


@op("OneHot", shape=_one_hot_shape, default_version=1)
def _one_hot1(layer: Layer):
    return _one_hot_kernel(int_attr(layer, "axis"), False)


@op("OneHot", versions=(16,), shape=_one_hot_shape)
def _one_hot16(layer: Layer):
    mode = choice(layer, "negative_indices_mode", ("ignore_negative", "normalize"),
                  "ignore_negative")
    return _one_hot_kernel(int_attr(layer, "axis"), mode == "normalize")


def _one_hot_kernel(axis: int, normalize: bool):
    def one_hot(indices, depth, on_value, off_value):
        idx = np.asarray(indices)
        d = scalar(depth)
        if normalize and idx.size and idx.min() < 0:
            idx = np.where((idx < 0) & (idx >= -d), idx + d, idx)
        ax = axis_of(axis, idx.ndim + 1)
        positions = np.arange(d).reshape((d,) + (1,) * (idx.ndim - ax))
        hot = np.expand_dims(idx, ax) == positions
        on, off = np.asarray(on_value).reshape(()), np.asarray(off_value).reshape(())
        return np.where(hot, on, off).astype(on.dtype, copy=False)

    return one_hot
